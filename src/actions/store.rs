//! The user's list of actions as saved in `chrome.storage.local` (key [`ACTIONS_KEY`]): the
//! built-ins (which may be hidden and moved, never deleted) and the user's own, in menu
//! order, with where each shows, and the language Translate goes into. Versioned like the
//! settings: version 0 (a bare list of `{name, template}`, as a hand-made file holds it) is
//! migrated to 1; a newer version is not guessed at. [`ActionsRecord::check`] gives every
//! problem with the field it is about (what Options shows beside the field as you type).

use serde::Serialize;

use super::{
    builtin_name, check_name, check_template, checked_language, ActionError, BUILTIN, MAX_ACTIONS,
};
use kljson::{FromJson, ToJson};

/// The storage key of the actions record.
pub const ACTIONS_KEY: &str = "actions";

/// The record's schema version.
pub const ACTIONS_VERSION: u32 = 1;

/// One action of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ActionDef {
    /// A built-in's id, `custom-<n>` for the user's (empty for a new one: given on save).
    #[serde(default)]
    pub id: String,
    /// The name the menus and buttons show (a built-in's is fixed).
    pub name: String,
    /// The user's template (empty for a built-in).
    #[serde(default)]
    pub template: String,
    /// Shown nowhere (a built-in is hidden, not deleted).
    #[serde(default)]
    pub hidden: bool,
    /// In the context menu.
    #[serde(default = "yes")]
    pub menu: bool,
    /// In the popup and the side panel.
    #[serde(default = "yes")]
    pub popup: bool,
    /// In the in-page panel.
    #[serde(default = "yes")]
    pub panel: bool,
}

fn yes() -> bool {
    true
}

/// The saved actions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ActionsRecord {
    /// The schema version ([`ACTIONS_VERSION`]).
    #[serde(default)]
    pub version: u32,
    /// Every action, in menu order.
    pub actions: Vec<ActionDef>,
    /// What Translate translates into (empty: the browser's language).
    #[serde(default)]
    pub target_language: String,
}

/// A problem with one field of one action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ActionFieldError {
    /// The action's place in the list (from 0); `None`: the list itself.
    pub index: Option<usize>,
    /// `name`, `template` or `list`.
    pub field: String,
    /// What is wrong and what to do.
    pub message: String,
}

/// Why a saved record cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// Not valid JSON, or not a record.
    #[error("the saved actions are unreadable ({0})")]
    Unreadable(String),
    /// From a newer version.
    #[error("the saved actions were written by a newer version of KnowledgeLens (schema {0})")]
    Newer(u32),
}

impl Default for ActionsRecord {
    fn default() -> Self {
        Self {
            version: ACTIONS_VERSION,
            actions: BUILTIN
                .iter()
                .map(|(id, name)| ActionDef {
                    id: (*id).to_string(),
                    name: (*name).to_string(),
                    template: String::new(),
                    hidden: false,
                    menu: true,
                    popup: true,
                    panel: true,
                })
                .collect(),
            target_language: String::new(),
        }
    }
}

/// Version 0: a bare list of the user's actions, `[{"name", "template"}]`.
#[derive(FromJson)]
struct V0Action {
    name: String,
    template: String,
}

impl ActionsRecord {
    /// Reads a saved (or imported) record, migrating version 0 (a bare list of the user's
    /// actions, added after the built-ins). A newer version is refused, never guessed at.
    pub fn parse(text: &str) -> Result<Self, RecordError> {
        use kljson::FromJson as _;
        let value = kljson::parse(text).map_err(|e| RecordError::Unreadable(e.to_string()))?;
        if value.is_array() {
            let list = Vec::<V0Action>::from_json(value)
                .map_err(|e| RecordError::Unreadable(e.to_string()))?;
            let mut record = Self::default();
            record.actions.extend(list.into_iter().map(|a| ActionDef {
                id: String::new(),
                name: a.name,
                template: a.template,
                hidden: false,
                menu: true,
                popup: true,
                panel: true,
            }));
            return Ok(record.with_ids());
        }
        let version = value
            .get("version")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        if version > u64::from(ACTIONS_VERSION) {
            return Err(RecordError::Newer(
                u32::try_from(version).unwrap_or(u32::MAX),
            ));
        }
        let mut record =
            Self::from_json(value).map_err(|e| RecordError::Unreadable(e.to_string()))?;
        record.version = ACTIONS_VERSION;
        Ok(record)
    }

    /// Every problem of the record, each with its action and field: a built-in deleted or
    /// renamed, more than [`MAX_ACTIONS`], a name empty, too long or already used (case
    /// aside, built-ins included), a user template that fails [`check_template`].
    pub fn check(&self) -> Vec<ActionFieldError> {
        let mut errors = Vec::new();
        let list = |message: String| ActionFieldError {
            index: None,
            field: "list".to_string(),
            message,
        };
        for (id, name) in BUILTIN {
            if !self.actions.iter().any(|a| a.id == id) {
                errors.push(list(format!(
                    "{name} is built in: it can be hidden, not deleted (Reset brings it back)."
                )));
            }
        }
        if self.actions.len() > MAX_ACTIONS {
            errors.push(list(ActionError::TooMany.to_string()));
        }
        for (index, action) in self.actions.iter().enumerate() {
            let field = |field: &str, error: ActionError| ActionFieldError {
                index: Some(index),
                field: field.to_string(),
                message: error.to_string(),
            };
            // Ids name the actions in the menu and in `run_action`: one per action, a
            // built-in's own or `custom-<n>` (an imported file may carry anything).
            // An empty id is a new action's: it gets one when saved.
            let id_error = if action.id.is_empty() {
                None
            } else if self.actions[..index].iter().any(|a| a.id == action.id) {
                Some(format!(
                    "Another action above has the same id ({}): delete one of them.",
                    crate::types::text::clip_marked(&action.id, 40)
                ))
            } else if builtin_name(&action.id).is_none() && !is_custom_id(&action.id) {
                Some(format!(
                    "This action's id ({}) is not custom-<number>: delete it and add it again.",
                    crate::types::text::clip_marked(&action.id, 40)
                ))
            } else {
                None
            };
            if let Some(message) = id_error {
                errors.push(ActionFieldError {
                    index: Some(index),
                    field: "name".to_string(),
                    message,
                });
                continue;
            }
            if let Some(name) = builtin_name(&action.id) {
                if action.name != name {
                    errors.push(ActionFieldError {
                        index: Some(index),
                        field: "name".to_string(),
                        message: format!("A built-in action keeps its name ({name})."),
                    });
                }
                continue;
            }
            let others = self
                .actions
                .iter()
                .enumerate()
                .filter(|(i, _)| *i < index)
                .map(|(_, a)| a.name.as_str())
                .chain(BUILTIN.iter().map(|(_, n)| *n));
            if let Err(e) = check_name(&action.name, others) {
                errors.push(field("name", e));
            }
            if let Err(e) = check_template(&action.template) {
                errors.push(field("template", e));
            }
        }
        let language = self.target_language.trim();
        if !language.is_empty() && checked_language(language).as_deref() != Some(language) {
            errors.push(ActionFieldError {
                index: None,
                field: "target_language".to_string(),
                message: "Translate into: write a language's name, such as French (letters, spaces, hyphens and parentheses).".to_string(),
            });
        }
        errors
    }

    /// The record with its names trimmed and an id for every new action (`custom-<n>`, past
    /// the highest in use).
    pub fn with_ids(mut self) -> Self {
        let mut next = self
            .actions
            .iter()
            .filter_map(|a| a.id.strip_prefix("custom-")?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        for action in &mut self.actions {
            action.name = action.name.trim().to_string();
            if action.id.is_empty() {
                // Past the largest id a check allows, the new id is refused by the check.
                next = next.saturating_add(1);
                action.id = format!("custom-{next}");
            }
        }
        self.target_language = self.target_language.trim().to_string();
        self
    }

    /// The action `id`, when it is in the list.
    pub fn find(&self, id: &str) -> Option<&ActionDef> {
        self.actions.iter().find(|a| a.id == id)
    }
}

/// Whether `id` is a user's action id: `custom-` and 1 to 9 digits, not starting with 0.
fn is_custom_id(id: &str) -> bool {
    id.strip_prefix("custom-").is_some_and(|n| {
        (1..=9).contains(&n.len()) && !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit())
    })
}
