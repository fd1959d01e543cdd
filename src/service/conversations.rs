//! Conversations: "New conversation" archives the session's current conversation and starts
//! it afresh; the history lists, reopens (read-only) and clears the archived ones.

use super::Service;
use crate::protocol::reply::{ClearedReply, HistoryReply};
use crate::protocol::{ApiError, ApiErrorKind, ConversationId, SessionKey, SessionView};
use crate::state::{self, RunStatus, StateError};

impl Service {
    /// Archives `key`'s conversation (if it has one) and starts the session afresh; the
    /// reply is the fresh view. Refused while a run goes on. The archive is written before
    /// the session is reset, so a failure at any point loses nothing.
    pub(super) async fn new_conversation(&self, key: SessionKey) -> Result<SessionView, ApiError> {
        let busy = || {
            ApiError::new(
                ApiErrorKind::Busy,
                "A question is still being answered here: wait for it or press Stop, then start a new conversation.",
            )
        };
        if self.registry.is_running(key) {
            return Err(busy());
        }
        let current = self.load_session(key).await?.state;
        if current.status == RunStatus::Running {
            // Interrupted in a stopped worker: it resumes with the next snapshot.
            return Err(busy());
        }
        let store = self.ports.sessions.as_ref();
        state::archive_conversation(store, &current)
            .await
            .map_err(|e| {
                ApiError::storage(
                    "archive the conversation (nothing was changed; clearing the history frees space)",
                    e,
                )
            })?;
        let mut fresh = state::fresh_conversation(&current, self.ports.clock.now_ms());
        match state::save_making_room(store, &mut fresh).await {
            Ok(false) => {}
            Ok(true) => fresh.notices.push(state::STORAGE_FULL_NOTICE.to_string()),
            Err(e) => {
                return Err(ApiError::storage(
                    "start a new conversation (the current one was archived and is still here too)",
                    e,
                ))
            }
        }
        Ok(SessionView::of(&fresh))
    }

    /// The archived conversations of every tab, newest first, at most
    /// [`HistoryReply::MAX`].
    pub(super) async fn history(&self) -> Result<HistoryReply, ApiError> {
        let mut conversations = state::list_archived(self.ports.sessions.as_ref())
            .await
            .map_err(|e| ApiError::storage("read the history", e))?;
        conversations.truncate(HistoryReply::MAX);
        Ok(HistoryReply { conversations })
    }

    /// The archived conversation `id`, as a read-only view.
    pub(super) async fn open_conversation(
        &self,
        id: ConversationId,
    ) -> Result<SessionView, ApiError> {
        let key = id.to_string();
        match state::load_archived(self.ports.sessions.as_ref(), &key).await {
            Ok(Some(archived)) => {
                let mut view = SessionView::of(&archived);
                view.archived = true;
                Ok(view)
            }
            Ok(None) => Err(ApiError::new(
                ApiErrorKind::NotFound,
                format!("The conversation \"{key}\" is no longer kept (it was cleared, or removed to make room): open History again to see what is."),
            )),
            Err(StateError::Store(e)) => Err(ApiError::storage("read the conversation", e)),
            Err(StateError::Corrupted(why)) => Err(ApiError::new(
                ApiErrorKind::Storage,
                format!("The conversation \"{key}\" is damaged and cannot be shown ({why}); Clear history removes it."),
            )),
            Err(StateError::NewerVersion(version)) => Err(ApiError::new(
                ApiErrorKind::Storage,
                format!("The conversation \"{key}\" was archived by a newer version of KnowledgeLens (schema {version}) and cannot be shown here."),
            )),
        }
    }

    /// Deletes every archived conversation, and the pages kept for questions across pages
    /// but those a conversation uses now.
    pub(super) async fn clear_history(&self) -> Result<ClearedReply, ApiError> {
        let store = self.ports.sessions.as_ref();
        let cleared = state::clear_archived(store)
            .await
            .map_err(|e| ApiError::storage("clear the history", e))?;
        let in_use = state::pages_in_use(store)
            .await
            .map_err(|e| ApiError::storage("clear the pages read earlier", e))?;
        state::read_pages::clear_except(store, &in_use)
            .await
            .map_err(|e| ApiError::storage("clear the pages read earlier", e))?;
        Ok(ClearedReply { cleared })
    }
}
