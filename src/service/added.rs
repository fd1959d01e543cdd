//! Questions across pages: the pages read in this browser session that a conversation may
//! add ("Add pages"), adding and removing them. A conversation belongs to one page, except
//! for the pages its user adds here (docs/security.md).

use super::Service;
use crate::protocol::reply::{ReadPageView, ReadPagesReply};
use crate::protocol::{ApiError, ApiErrorKind, SessionKey, SessionView};
use crate::state::{self, read_pages, RunStatus};

impl Service {
    /// The pages `key`'s conversation may add: every kept page but its own, most recently
    /// read first, each saying whether it is added already.
    pub(super) async fn read_pages(&self, key: SessionKey) -> Result<ReadPagesReply, ApiError> {
        let state = self.load_session(key).await?.state;
        let own = state.page.as_ref().map(|p| p.url.as_str()).unwrap_or("");
        let kept = read_pages::list(self.ports.sessions.as_ref())
            .await
            .map_err(|e| ApiError::storage("read the list of pages read", e))?;
        let used = state.protected_pages();
        let mut pages = Vec::new();
        for p in kept {
            if !own.is_empty() && crate::url::same_document(own, &p.url) {
                continue;
            }
            pages.push(ReadPageView {
                added: used.contains(&p.id),
                id: p.id,
                title: p.title,
                site: p.site,
                url: p.url,
                read_at: p.read_at,
            });
        }
        Ok(ReadPagesReply { pages })
    }

    /// Adds the kept pages `ids` to `key`'s conversation (all or none), saved before the
    /// reply. Refused while a run goes on.
    pub(super) async fn add_pages(
        &self,
        key: SessionKey,
        ids: &[u64],
    ) -> Result<SessionView, ApiError> {
        let store = self.ports.sessions.as_ref();
        let mut state = self.idle_session(key).await?;
        let pages = read_pages::load_pages(store, ids)
            .await
            .map_err(|e| ApiError::storage("read the page to add", e))?;
        for found in pages {
            let Some((entry, page)) = found else {
                return Err(ApiError::new(
                    ApiErrorKind::NotFound,
                    "That page is no longer kept (pages read long ago make room for new ones): open it and ask KnowledgeLens about it once to add it again.",
                ));
            };
            let passages = crate::page::index_of(&page.text).passages().len();
            state.add_page(&entry, passages).map_err(|e| {
                ApiError::bad_request(crate::llm::diagnosis::doctor::capitalized(&e.to_string()))
            })?;
        }
        self.save_sources(state).await
    }

    /// Removes the added page `id` from `key`'s conversation. Refused while a run goes on.
    pub(super) async fn remove_page(
        &self,
        key: SessionKey,
        id: u64,
    ) -> Result<SessionView, ApiError> {
        let mut state = self.idle_session(key).await?;
        if !state.remove_page(id) {
            return Err(ApiError::new(
                ApiErrorKind::NotFound,
                "That page is not a source of this conversation.",
            ));
        }
        self.save_sources(state).await
    }

    /// `key`'s session, unless a run goes on in it.
    async fn idle_session(&self, key: SessionKey) -> Result<state::SessionState, ApiError> {
        let busy = || {
            ApiError::new(
                ApiErrorKind::Busy,
                "A question is still being answered here: wait for it or press Stop, then change the pages it uses.",
            )
        };
        if self.registry.is_running(key) {
            return Err(busy());
        }
        let state = self.load_session(key).await?.state;
        if state.status == RunStatus::Running {
            return Err(busy());
        }
        Ok(state)
    }

    /// Saves `state` after its sources changed (with their texts loaded again); its view.
    async fn save_sources(&self, mut state: state::SessionState) -> Result<SessionView, ApiError> {
        let store = self.ports.sessions.as_ref();
        read_pages::load_added_texts(store, &mut state)
            .await
            .map_err(|e| ApiError::storage("read the added pages", e))?;
        state.updated_at = self.ports.clock.now_ms();
        state::save_making_room(store, &mut state)
            .await
            .map_err(|e| ApiError::storage("save the conversation's pages", e))?;
        Ok(SessionView::of(&state))
    }
}
