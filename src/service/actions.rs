//! Selection actions: the saved list (read, checked, saved in the settings store under
//! `actions`), and which action a request names, as the run records it.

use super::Service;
use crate::actions::store::{ActionsRecord, ACTIONS_KEY};
use crate::actions::{ActionRun, DEFAULT_TARGET_LANGUAGE};
use crate::protocol::reply::{ActionsCheckReply, ActionsReply, ImportActionsReply};
use crate::protocol::{ApiError, ApiErrorKind};

impl Service {
    /// The saved list, or the defaults with why the saved one is not used (it is kept
    /// until the next save).
    async fn load_actions(&self) -> Result<ActionsReply, ApiError> {
        let saved = self
            .ports
            .settings
            .get(ACTIONS_KEY)
            .await
            .map_err(|e| ApiError::storage("read the actions", e))?;
        Ok(match saved.as_deref().map(ActionsRecord::parse) {
            None => ActionsReply {
                actions: ActionsRecord::default(),
                notice: None,
            },
            Some(Ok(actions)) => ActionsReply {
                actions,
                notice: None,
            },
            Some(Err(e)) => ActionsReply {
                actions: ActionsRecord::default(),
                notice: Some(format!(
                    "{}: the built-in actions are shown, and the saved list is kept until you save.",
                    crate::llm::diagnosis::doctor::capitalized(&e.to_string())
                )),
            },
        })
    }

    /// The in-page panel's buttons: the actions shown in the panel, Explain aside (the
    /// built-ins when the list cannot be read).
    pub(super) async fn panel_actions(&self) -> Vec<crate::protocol::panel::PanelAction> {
        let list = self
            .load_actions()
            .await
            .map(|reply| reply.actions)
            .unwrap_or_default();
        list.actions
            .into_iter()
            .filter(|a| !a.hidden && a.panel && a.id != crate::actions::EXPLAIN)
            .map(|a| crate::protocol::panel::PanelAction {
                id: a.id,
                name: a.name,
            })
            .collect()
    }

    pub(super) async fn get_actions(&self) -> Result<ActionsReply, ApiError> {
        self.load_actions().await
    }

    pub(super) fn check_actions(actions: &ActionsRecord) -> ActionsCheckReply {
        ActionsCheckReply {
            errors: actions.check(),
        }
    }

    /// An exported file's list, migrated and given ids, with its problems (not saved: the
    /// user confirms the templates first).
    pub(super) fn import_actions(text: &str) -> Result<ImportActionsReply, ApiError> {
        const MAX_IMPORT_BYTES: usize = 256 * 1024;
        if text.len() > MAX_IMPORT_BYTES {
            return Err(ApiError::bad_request(
                "This file is too big to be an actions file (more than 256 KB).",
            ));
        }
        let actions = ActionsRecord::parse(text)
            .map_err(|e| {
                ApiError::bad_request(format!(
                    "{}: choose a file that Export actions made.",
                    crate::llm::diagnosis::doctor::capitalized(&e.to_string())
                ))
            })?
            .with_ids();
        let errors = actions.check();
        Ok(ImportActionsReply { actions, errors })
    }

    /// Saves `actions` when they pass the check (new ones get their ids); else the first
    /// problem, and nothing is saved.
    pub(super) async fn save_actions(
        &self,
        actions: ActionsRecord,
    ) -> Result<ActionsReply, ApiError> {
        let actions = actions.with_ids();
        if let Some(first) = actions.check().into_iter().next() {
            let which = first
                .index
                .and_then(|i| actions.actions.get(i))
                .map(|a| {
                    format!(
                        "{}: ",
                        if a.name.is_empty() {
                            "A new action"
                        } else {
                            &a.name
                        }
                    )
                })
                .unwrap_or_default();
            return Err(ApiError::bad_request(format!(
                "{which}{} Nothing was saved.",
                first.message
            )));
        }
        self.ports
            .settings
            .set(vec![(ACTIONS_KEY.to_string(), kljson::to_string(&actions))])
            .await
            .map_err(|e| ApiError::storage("save the actions", e))?;
        Ok(ActionsReply {
            actions,
            notice: None,
        })
    }

    /// The run of action `id` (not Explain): a built-in, or one of the user's saved actions;
    /// Translate goes into the language Options chose, else `language` (the browser's),
    /// else English. An id that names no action is refused.
    pub(super) async fn action_run(
        &self,
        id: &str,
        language: Option<String>,
    ) -> Result<ActionRun, ApiError> {
        let saved = self.load_actions().await?.actions;
        let chosen = Some(saved.target_language.trim().to_string()).filter(|l| !l.is_empty());
        let target = chosen
            .or(language)
            .unwrap_or_else(|| DEFAULT_TARGET_LANGUAGE.to_string());
        let not_found = || {
            ApiError::new(
                ApiErrorKind::NotFound,
                format!("There is no action \"{id}\": it may have been deleted in Options."),
            )
        };
        if let Some(run) = ActionRun::builtin(id, &target) {
            return Ok(run);
        }
        let action = saved.find(id).ok_or_else(not_found)?;
        if crate::actions::builtin_name(&action.id).is_some() || action.template.is_empty() {
            return Err(not_found());
        }
        // Saved records pass the check; one changed by hand since is refused here, in words.
        crate::actions::check_template(&action.template).map_err(|e| {
            ApiError::bad_request(format!("{}: {e} Fix it in Options.", action.name))
        })?;
        Ok(ActionRun {
            id: action.id.clone(),
            name: action.name.clone(),
            template: action.template.clone(),
            target_language: target,
        })
    }
}
