//! The in-page explanation panel's requests. The panel is an extension page in a frame of
//! the tab's page, less trusted than the popup: [`check_panel_request`] lets through only a
//! snapshot or Stop, only for the session of the tab the panel runs in and the run that
//! opened it; everything else is `forbidden`. [`Service::handle_panel`] answers what passed,
//! with the panel's run alone (never the session's other turns or its later runs). Pure:
//! the sender's tab id comes in as a value (the web layer reads it from the Port's sender).

use std::rc::Rc;

use serde_json::Value;

use super::{RunFuture, Service};
use crate::protocol::panel::{PanelCommand, PanelRequest, PanelView};
use crate::protocol::{request_id, ApiError, ApiErrorKind, Envelope, Response, SessionKey};
use kljson::FromJson;

fn forbidden(why: &str) -> ApiError {
    ApiError::new(ApiErrorKind::Forbidden, format!("Request refused: {why}."))
}

/// Why a panel request about an earlier run of its tab is not answered.
pub const RUN_OVER: &str = "This explanation was followed by another question in this tab: the side panel or the popup shows the conversation.";

/// Checks a panel request (JSON text) from the panel frame in tab `sender_tab` (`None`:
/// the sender is not our panel in a tab): only `snapshot` and `stop`, only for
/// `tab:<sender_tab>`, naming a run.
pub fn check_panel_request(text: &str, sender_tab: Option<i64>) -> Result<PanelRequest, ApiError> {
    #[derive(FromJson)]
    struct Raw {
        #[serde(default)]
        id: Value,
        #[serde(rename = "type")]
        kind: String,
        session: Option<String>,
        run: Option<u32>,
        action: Option<String>,
        language: Option<String>,
    }
    let tab = sender_tab
        .and_then(|t| u64::try_from(t).ok())
        .ok_or_else(|| forbidden("the panel is not in a tab"))?;
    let raw: Raw = kljson::decode(&crate::protocol::replace_lone_surrogates(text))
        .map_err(|e| ApiError::bad_request(format!("Unreadable request: {e}")))?;
    let command = match raw.kind.as_str() {
        "snapshot" => PanelCommand::Snapshot,
        "stop" => PanelCommand::Stop,
        "run_action" => PanelCommand::RunAction {
            action: crate::protocol::checked_action_id(raw.action.as_deref().ok_or_else(
                || ApiError::bad_request("Unreadable request: \"run_action\" needs an \"action\"."),
            )?)?,
            language: raw
                .language
                .as_deref()
                .and_then(crate::actions::checked_language),
        },
        other => {
            return Err(forbidden(&format!(
                "the in-page panel may not send \"{other}\" (only snapshot, stop and run_action)"
            )))
        }
    };
    let own = SessionKey::tab(tab);
    let session = raw
        .session
        .as_deref()
        .and_then(|s| SessionKey::parse(s).ok())
        .filter(|key| *key == own)
        .ok_or_else(|| forbidden(&format!("the in-page panel may only ask about \"{own}\"")))?;
    let run = raw
        .run
        .ok_or_else(|| ApiError::bad_request("A panel request needs the \"run\" it shows."))?;
    Ok(PanelRequest {
        id: raw.id,
        session,
        run,
        command,
    })
}

/// The tab of a `tab:<id>` session.
fn tab_of(key: SessionKey) -> Option<i64> {
    match key {
        SessionKey::Tab(tab) => i64::try_from(tab).ok(),
        SessionKey::Popup => None,
    }
}

impl Service {
    /// Handles one request of the in-page panel of tab `sender_tab`; the reply is the
    /// envelope (refusals included). A snapshot may resume a run (spawn it).
    pub async fn handle_panel(
        self: &Rc<Self>,
        text: &str,
        sender_tab: Option<i64>,
    ) -> (Envelope, Option<RunFuture>) {
        let request = match check_panel_request(text, sender_tab) {
            Ok(request) => request,
            Err(e) => return (Envelope::of(request_id(text), Err(e)), None),
        };
        let over = || ApiError::new(ApiErrorKind::NotFound, RUN_OVER);
        let (result, run): (Result<Response, ApiError>, _) = match request.command {
            PanelCommand::Snapshot => match self.snapshot(request.session).await {
                Ok((view, run)) if view.run == request.run => {
                    let mut view = PanelView::of(&view);
                    view.actions = self.panel_actions().await;
                    (Ok(view.into()), run)
                }
                Ok((_, run)) => (Err(over()), run),
                Err(e) => (Err(e), None),
            },
            // The run going on here, compared and stopped in one step: a run of the tab that
            // is only starting (registered, not yet live) is not the panel's.
            PanelCommand::Stop => {
                let live = self.registry.with_live(request.session, |s| s.run_id);
                let result = match live {
                    Some(live) if live == request.run => Ok(self.stop(request.session).into()),
                    None if !self.registry.is_running(request.session) => {
                        Ok(self.stop(request.session).into())
                    }
                    _ => Err(over()),
                };
                (result, None)
            }
            PanelCommand::RunAction { action, language } => {
                match self
                    .panel_action(request.session, request.run, &action, language)
                    .await
                {
                    Ok((view, run)) => (Ok(view.into()), Some(run)),
                    Err(e) => (Err(e), None),
                }
            }
        };
        (Envelope::of(request.id, result), run)
    }

    /// Starts `action` on the selection of the panel's run `run` in `key` (tab `tab`): only
    /// when that run is the tab's latest, has a selection and is over (one run at a time).
    async fn panel_action(
        self: &Rc<Self>,
        key: SessionKey,
        run: u32,
        action: &str,
        language: Option<String>,
    ) -> Result<(PanelView, RunFuture), ApiError> {
        if self.registry.is_running(key) {
            return Err(ApiError::new(
                ApiErrorKind::Busy,
                "Wait for this answer, or press Stop, before the next action.",
            ));
        }
        let state = self.load_session(key).await?.state;
        if state.run_id != run {
            return Err(ApiError::new(ApiErrorKind::NotFound, RUN_OVER));
        }
        let selection = state.selection.clone().ok_or_else(|| {
            ApiError::bad_request("This panel's answer is not about a selection.")
        })?;
        let (view, future) = self
            .run_action(key, selection, action, language, tab_of(key), None)
            .await?;
        let mut view = PanelView::of(&view);
        view.actions = self.panel_actions().await;
        Ok((view, future))
    }
}
