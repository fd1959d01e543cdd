//! `locate_passage`: shows a cited page passage in its tab (scrolled into view, highlighted
//! briefly) through the [`crate::ports::PageReader`] port. Only a tab's session has a page.

use futures::future::{self, Either};

use super::Service;
use crate::protocol::reply::LocateReply;
use crate::protocol::{ApiError, ApiErrorKind, SessionKey, PAGE_READ_TIMEOUT_MS};
use crate::types::PageReadError;

impl Service {
    /// Finds `text` on the page of `session`'s tab; `found: false` when it is gone. For a
    /// passage of the added page `page`, in the tab that page was read in: `found: false`
    /// (the popup opens its URL) when that tab is closed, cannot be scripted or shows
    /// another page.
    pub(super) async fn locate_passage(
        &self,
        session: SessionKey,
        text: &str,
        page: Option<u64>,
    ) -> Result<LocateReply, ApiError> {
        if let Some(id) = page {
            let state = self.load_session(session).await?.state;
            let Some(added) = state.added.iter().find(|p| p.id == id) else {
                return Err(ApiError::new(
                    ApiErrorKind::NotFound,
                    "That page is not a source of this conversation.",
                ));
            };
            let Some(tab) = added.tab else {
                return Ok(LocateReply {
                    found: false,
                    tab: None,
                });
            };
            // Only in the page the user added: a tab gone elsewhere (or one whose address
            // the browser does not tell) is never sent the passage.
            let shows = self.ports.pages.address(tab).await;
            if !shows.is_some_and(|url| crate::url::same_document(&url, &added.url)) {
                return Ok(LocateReply {
                    found: false,
                    tab: None,
                });
            }
            let found = matches!(self.locate_in(tab, text).await, Ok(true));
            return Ok(LocateReply {
                found,
                tab: found.then_some(tab),
            });
        }
        let SessionKey::Tab(tab_id) = session else {
            return Err(ApiError::bad_request(
                "Only a question about a page has passages to show.",
            ));
        };
        let tab_id = i64::try_from(tab_id)
            .map_err(|_| ApiError::bad_request(format!("{session} names no tab.")))?;
        match self.locate_in(tab_id, text).await {
            Ok(found) => Ok(LocateReply { found, tab: None }),
            Err(err) => Err(locate_error(err)),
        }
    }

    /// Finds `text` in tab `tab_id`; a page that does not answer (a hung frame) is given up
    /// on like a slow read.
    async fn locate_in(&self, tab_id: i64, text: &str) -> Result<bool, PageReadError> {
        let locate = self.ports.pages.locate(tab_id, text);
        let late = self.ports.clock.sleep(PAGE_READ_TIMEOUT_MS);
        match future::select(locate, late).await {
            Either::Left((result, _)) => result,
            Either::Right(_) => Err(PageReadError::Timeout),
        }
    }
}

/// What the popup shows when the passage could not even be looked for.
fn locate_error(err: PageReadError) -> ApiError {
    match err {
        PageReadError::NoTab(_) => ApiError::new(
            ApiErrorKind::NotFound,
            "The page's tab was closed, so the passage cannot be shown.",
        ),
        PageReadError::NotScriptable(detail) | PageReadError::NoAccess(detail) => ApiError::new(
            ApiErrorKind::Forbidden,
            format!("KnowledgeLens can't show passages on this page ({detail})."),
        ),
        PageReadError::Timeout => ApiError::new(
            ApiErrorKind::NotFound,
            format!(
                "The page did not answer within {} s, so the passage cannot be shown. Try again once the page has finished loading.",
                PAGE_READ_TIMEOUT_MS / 1000
            ),
        ),
        other => ApiError::new(
            ApiErrorKind::Internal,
            format!("The passage could not be shown: {other}."),
        ),
    }
}
