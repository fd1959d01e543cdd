//! What the user sends to a run going on: Stop, and the acknowledgement of and answer to
//! the run's question (`request_input`), resuming the run here first if the worker was
//! restarted since the question was asked.

use std::rc::Rc;

use super::{RunFuture, Service};
use crate::agent::InputMessage;
use crate::protocol::reply::{AckReply, AnswerReply, StopReply};
use crate::protocol::{ApiError, ApiErrorKind, SessionKey, UserText};
use crate::state::{self, RunStatus};

impl Service {
    /// Raises the stop signal of `key`'s run, if one goes on here.
    pub(super) fn stop(&self, key: SessionKey) -> StopReply {
        StopReply {
            stopping: self.registry.stop(key),
        }
    }

    /// The id of the question `key`'s run is waiting on, from its head record.
    async fn pending_request(&self, key: SessionKey) -> Result<Option<String>, ApiError> {
        let text = self
            .ports
            .sessions
            .get(&state::session_key(&key.to_string()))
            .await
            .map_err(|e| ApiError::storage("read the session", e))?;
        Ok(text
            .and_then(|t| state::decode_head(&t).ok())
            .filter(|(s, _)| s.status == RunStatus::Running)
            .and_then(|(s, _)| s.input.pending)
            .map(|p| p.request_id))
    }

    /// Hands `message` to `key`'s run, resuming the run here first if the worker was
    /// restarted since the question was asked.
    async fn deliver(self: &Rc<Self>, key: SessionKey, message: InputMessage) -> Option<RunFuture> {
        if let Some(inbox) = self.registry.inbox(key) {
            inbox.push(message);
            return None;
        }
        let run = self.claim(key).await?;
        // Claimed: the registry has the resumed run's inbox.
        if let Some(inbox) = self.registry.inbox(key) {
            inbox.push(message);
        }
        Some(run)
    }

    /// The UI showed the question: its first timeout no longer applies. An unknown or
    /// stale id changes nothing; a second acknowledgement is harmless.
    pub(super) async fn ack_input(
        self: &Rc<Self>,
        key: SessionKey,
        request_id: String,
    ) -> Result<(AckReply, Option<RunFuture>), ApiError> {
        if self.pending_request(key).await?.as_deref() != Some(request_id.as_str()) {
            return Ok((
                AckReply {
                    acknowledged: false,
                },
                None,
            ));
        }
        let at_ms = self.ports.clock.now_ms();
        let run = self
            .deliver(key, InputMessage::Ack { request_id, at_ms })
            .await;
        // Shown in a popup: the notification has done its work.
        self.attention.question_seen(key);
        Ok((AckReply { acknowledged: true }, run))
    }

    /// The user's answer to the question the run is waiting on.
    pub(super) async fn answer_input(
        self: &Rc<Self>,
        key: SessionKey,
        request_id: String,
        answer: &str,
    ) -> Result<(AnswerReply, Option<RunFuture>), ApiError> {
        let text = UserText::Answer.checked(answer)?;
        if self.pending_request(key).await?.as_deref() != Some(request_id.as_str()) {
            return Err(ApiError::new(
                ApiErrorKind::NotFound,
                "That question is no longer waiting for an answer (it was answered, timed out, or the run was stopped).",
            ));
        }
        let message = InputMessage::Answer {
            request_id,
            text: text.to_string(),
            at_ms: self.ports.clock.now_ms(),
        };
        let run = self.deliver(key, message).await;
        Ok((AnswerReply { accepted: true }, run))
    }
}
