//! Selection actions: what a reader can do with a selected passage besides explaining it
//! (Summarize, Translate, Define, Simplify, and the user's own actions). Each action is a
//! request template in the template language ([`crate::template`]) with the placeholders
//! [`PLACEHOLDERS`]; the built-ins' are the `.tpl` files beside this module, a user's is the
//! text they typed, checked here ([`check_template`], the one place that validates one).
//! A run of an action records an [`ActionRun`] (persisted with the session), and its
//! request is rendered from it ([`ActionRun::render`]) with the values the agent fences.
//! Pure: no browser access.

pub mod store;

use std::sync::OnceLock;

use serde::Serialize;

use crate::template::{
    BuiltinTemplate, Context, Delimiter, Placeholder, PlaceholderType, Section, Template,
    TemplateError,
};
use kljson::{FromJson, ToJson};

/// The placeholders an action's template may use.
pub const PLACEHOLDERS: [&str; 5] = [
    "selection",
    "context",
    "title",
    "page_language",
    "target_language",
];

/// Longest template a user may write (characters).
pub const MAX_TEMPLATE_CHARS: usize = 4_000;

/// Longest action name (characters).
pub const MAX_NAME_CHARS: usize = 40;

/// Most actions (built-ins included).
pub const MAX_ACTIONS: usize = 30;

/// The id of the built-in Explain action (its run is an explanation: `explain`).
pub const EXPLAIN: &str = "explain";

/// The built-in actions: id and name, in their order in the menus. Explain runs the
/// explanation flow (its tool and prompts); the others render their template.
pub const BUILTIN: [(&str, &str); 5] = [
    (EXPLAIN, "Explain"),
    ("summarize", "Summarize"),
    ("translate", "Translate"),
    ("define", "Define"),
    ("simplify", "Simplify"),
];

/// The built-in actions' templates (Explain's text is the loop's `user.tpl`).
pub const TEMPLATES: [BuiltinTemplate; 4] = [
    BuiltinTemplate {
        file: "summarize.tpl",
        text: include_str!("summarize.tpl"),
        sections: &["request"],
    },
    BuiltinTemplate {
        file: "translate.tpl",
        text: include_str!("translate.tpl"),
        sections: &["request"],
    },
    BuiltinTemplate {
        file: "define.tpl",
        text: include_str!("define.tpl"),
        sections: &["request"],
    },
    BuiltinTemplate {
        file: "simplify.tpl",
        text: include_str!("simplify.tpl"),
        sections: &["request"],
    },
];

/// The name of built-in action `id`, if it is one.
pub fn builtin_name(id: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(i, _)| *i == id).map(|(_, n)| *n)
}

/// The language a translation goes into when neither Options nor the browser says.
pub const DEFAULT_TARGET_LANGUAGE: &str = "English";

/// Longest target language name (characters).
pub const MAX_LANGUAGE_CHARS: usize = 40;

/// `text` as a target language: letters (any script), spaces, `-`, `(` and `)` kept, at
/// most [`MAX_LANGUAGE_CHARS`]; `None` when nothing is left. It goes into the request
/// outside the fence, so nothing else gets through.
pub fn checked_language(text: &str) -> Option<String> {
    let kept: String = text
        .chars()
        .filter(|c| c.is_alphabetic() || matches!(c, ' ' | '-' | '(' | ')'))
        .take(MAX_LANGUAGE_CHARS)
        .collect();
    let kept = kept.trim();
    (!kept.is_empty()).then(|| kept.to_string())
}

/// A page's language tag as a request shows it: ASCII letters, digits and `-`, at most 35
/// (the page writes it); `"unknown"` when none is left.
pub fn checked_lang_tag(tag: &str) -> String {
    let kept: String = tag
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(35)
        .collect();
    if kept.is_empty() {
        "unknown".to_string()
    } else {
        kept
    }
}

/// An action run: which action, and what its request is rendered from. Saved with the
/// session, so a resumed run renders the same request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ActionRun {
    /// The action's id (a built-in's, or a user action's).
    pub id: String,
    /// Its name, as the menus show it.
    pub name: String,
    /// A user action's template (as checked when it ran); empty for a built-in, whose
    /// template is built in.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub template: String,
    /// The language `{{target_language}}` names.
    pub target_language: String,
}

/// The values an action's request is rendered with: the page's words already fenced by the
/// caller (selection, context, title), the checked language tag and target language.
#[derive(Debug, Clone, Default)]
pub struct ActionValues {
    /// The selection, fenced.
    pub selection: String,
    /// The paragraph and headings around it, fenced.
    pub context: String,
    /// The page title, fenced.
    pub title: String,
    /// The page's language tag ([`checked_lang_tag`]).
    pub page_language: String,
}

/// Why a user's action cannot be saved (the message shows beside the field).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    /// The name is empty.
    #[error("Give the action a name.")]
    NoName,
    /// The name is too long.
    #[error("The name is too long (at most {MAX_NAME_CHARS} characters).")]
    LongName,
    /// The name is another action's.
    #[error("\"{0}\" is already the name of an action: choose another.")]
    DuplicateName(String),
    /// The template is empty.
    #[error("Write the action's template, with {{{{selection}}}} where the selected text goes.")]
    Empty,
    /// The template is too long.
    #[error("The template is too long: {0} characters, at most {MAX_TEMPLATE_CHARS}.")]
    TooLong(usize),
    /// A placeholder that does not exist.
    #[error("Unknown placeholder {{{{{0}}}}}: use {{{{selection}}}}, {{{{context}}}}, {{{{title}}}}, {{{{page_language}}}} or {{{{target_language}}}}.")]
    UnknownPlaceholder(String),
    /// A `{{` that starts no placeholder.
    #[error("\"{0}\" is not a placeholder: write one as {{{{selection}}}} (lowercase, in double braces).")]
    Malformed(String),
    /// The template never says where the selection goes.
    #[error("The template needs {{{{selection}}}}: where the selected text goes.")]
    NoSelection,
    /// Too many actions.
    #[error("At most {MAX_ACTIONS} actions: delete one first.")]
    TooMany,
}

/// A user's template text as a template: the placeholders [`PLACEHOLDERS`] (all optional
/// strings but `selection`) and one section, `request`, holding the text as typed.
fn user_template(text: &str) -> Template {
    Template {
        name: "action".to_string(),
        placeholders: PLACEHOLDERS
            .iter()
            .map(|name| Placeholder {
                name: (*name).to_string(),
                kind: PlaceholderType::String,
                required: *name == "selection",
            })
            .collect(),
        sections: vec![Section {
            name: "request".to_string(),
            delimiter: Delimiter::Markdown,
            required: true,
            content: text.to_string(),
        }],
    }
}

/// Checks a user's template: not empty, at most [`MAX_TEMPLATE_CHARS`], only the known
/// placeholders (well-formed), `{{selection}}` used. The first problem found.
pub fn check_template(text: &str) -> Result<Template, ActionError> {
    let chars = text.chars().count();
    if text.trim().is_empty() {
        return Err(ActionError::Empty);
    }
    if chars > MAX_TEMPLATE_CHARS {
        return Err(ActionError::TooLong(chars));
    }
    let template = user_template(text);
    match template.validate() {
        Ok(()) => Ok(template),
        Err(TemplateError::UndeclaredPlaceholder { placeholder, .. }) => {
            Err(ActionError::UnknownPlaceholder(placeholder))
        }
        Err(TemplateError::MalformedPlaceholder { found, .. }) => {
            let end = found.find("}}").map_or(found.len(), |at| at + 2);
            let shown: String = found[..end].chars().take(30).collect();
            Err(ActionError::Malformed(shown))
        }
        Err(TemplateError::UnusedPlaceholder { .. }) => Err(ActionError::NoSelection),
        // A template built here has valid names and one non-empty section.
        Err(_) => Err(ActionError::Empty),
    }
}

/// Checks an action's name (trimmed) against the other actions' names, case aside.
pub fn check_name<'a>(
    name: &str,
    others: impl IntoIterator<Item = &'a str>,
) -> Result<String, ActionError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ActionError::NoName);
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ActionError::LongName);
    }
    let folded = crate::types::case::fold(name);
    if others
        .into_iter()
        .any(|other| crate::types::case::fold(other.trim()) == folded)
    {
        return Err(ActionError::DuplicateName(name.to_string()));
    }
    Ok(name.to_string())
}

static LOADED: [crate::template::Loaded; 4] = [
    OnceLock::new(),
    OnceLock::new(),
    OnceLock::new(),
    OnceLock::new(),
];

/// The built-in template of action `id` (not Explain's).
fn builtin_template(id: &str) -> Option<Result<&'static Template, TemplateError>> {
    let at = TEMPLATES
        .iter()
        .position(|t| t.file.strip_suffix(".tpl") == Some(id))?;
    Some(TEMPLATES[at].loaded(&LOADED[at]))
}

impl ActionRun {
    /// The run of built-in action `id` (not Explain), translating into `target_language`.
    pub fn builtin(id: &str, target_language: &str) -> Option<Self> {
        let name = builtin_name(id).filter(|_| id != EXPLAIN)?;
        Some(Self {
            id: id.to_string(),
            name: name.to_string(),
            template: String::new(),
            target_language: target_language.to_string(),
        })
    }

    /// The request this run sends: its template with `values` (the page's words as data:
    /// a value is never scanned for placeholders).
    /// A user template is rendered as it was checked when saved; an id that names no
    /// built-in (a record from a later version) is an error naming it.
    pub fn render(&self, values: &ActionValues) -> Result<String, TemplateError> {
        let mut context = Context::new();
        for (name, value) in [
            ("selection", &values.selection),
            ("context", &values.context),
            ("title", &values.title),
            ("page_language", &values.page_language),
            ("target_language", &self.target_language),
        ] {
            context.insert(name.to_string(), serde_json::Value::String(value.clone()));
        }
        let text = if self.template.is_empty() {
            let unknown = || TemplateError::UnknownSection {
                template: "actions".to_string(),
                section: self.id.clone(),
            };
            builtin_template(&self.id)
                .ok_or_else(unknown)??
                .render(&context, &[])?
        } else {
            user_template(&self.template).render(&context, &[])?
        };
        Ok(text.trim_end().to_string())
    }
}
