//! The in-page explanation panel's requests. A content script is less trusted than our own
//! pages: [`check_panel_request`] lets through only a snapshot, Stop or a follow-up, and
//! only for the session of the tab the panel runs in; everything else is `forbidden`.
//! [`Service::handle_panel`] answers what passed. Pure: the sender's tab id comes in as a
//! value (the web layer reads it from the Port's sender).

use std::rc::Rc;

use serde_json::Value;

use super::{RunFuture, Service};
use crate::protocol::panel::{FollowUpReply, PanelCommand, PanelRequest};
use crate::protocol::{request_id, ApiError, ApiErrorKind, Envelope, Response, SessionKey};
use crate::types::json::FromJson;

fn forbidden(why: &str) -> ApiError {
    ApiError::new(ApiErrorKind::Forbidden, format!("Request refused: {why}."))
}

/// Checks a panel request (JSON text) from a content script in tab `sender_tab` (`None`:
/// the sender is not in a tab): only `snapshot`, `stop` and `follow_up`, only for
/// `tab:<sender_tab>`.
pub fn check_panel_request(text: &str, sender_tab: Option<i64>) -> Result<PanelRequest, ApiError> {
    #[derive(FromJson)]
    struct Raw {
        #[serde(default)]
        id: Value,
        #[serde(rename = "type")]
        kind: String,
        session: Option<String>,
    }
    let tab = sender_tab
        .and_then(|t| u64::try_from(t).ok())
        .ok_or_else(|| forbidden("the panel is not in a tab"))?;
    let raw: Raw = crate::types::json::decode(&crate::protocol::replace_lone_surrogates(text))
        .map_err(|e| ApiError::bad_request(format!("Unreadable request: {e}")))?;
    let command = PanelCommand::parse(&raw.kind).ok_or_else(|| {
        forbidden(&format!(
            "the in-page panel may not send \"{}\" (only snapshot, stop and follow_up)",
            raw.kind
        ))
    })?;
    let own = SessionKey::tab(tab);
    let session = raw
        .session
        .as_deref()
        .and_then(|s| SessionKey::parse(s).ok())
        .filter(|key| *key == own)
        .ok_or_else(|| forbidden(&format!("the in-page panel may only ask about \"{own}\"")))?;
    Ok(PanelRequest {
        id: raw.id,
        session,
        command,
    })
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
        let (result, run): (Result<Response, ApiError>, _) = match request.command {
            PanelCommand::Snapshot => match self.snapshot(request.session).await {
                Ok((view, run)) => (Ok(view.into()), run),
                Err(e) => (Err(e), None),
            },
            PanelCommand::Stop => (Ok(self.stop(request.session).into()), None),
            PanelCommand::FollowUp => {
                let opened = self
                    .attention
                    .open_session(request.session)
                    .await
                    .map(|opened| {
                        FollowUpReply {
                            opened: opened.name().to_string(),
                        }
                        .into()
                    })
                    .map_err(|e| {
                        ApiError::new(
                            ApiErrorKind::Internal,
                            format!("Could not open the conversation: {e}"),
                        )
                    });
                (opened, None)
            }
        };
        (Envelope::of(request.id, result), run)
    }
}
