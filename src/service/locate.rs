//! `locate_passage`: shows a cited page passage in its tab (scrolled into view, highlighted
//! briefly) through the [`crate::ports::PageReader`] port. Only a tab's session has a page.

use futures::future::{self, Either};

use super::Service;
use crate::protocol::reply::LocateReply;
use crate::protocol::{ApiError, ApiErrorKind, SessionKey, PAGE_READ_TIMEOUT_MS};
use crate::types::PageReadError;

impl Service {
    /// Finds `text` on the page of `session`'s tab; `found: false` when it is gone.
    pub(super) async fn locate_passage(
        &self,
        session: SessionKey,
        text: &str,
    ) -> Result<LocateReply, ApiError> {
        let SessionKey::Tab(tab_id) = session else {
            return Err(ApiError::bad_request(
                "Only a question about a page has passages to show.",
            ));
        };
        let tab_id = i64::try_from(tab_id)
            .map_err(|_| ApiError::bad_request(format!("{session} names no tab.")))?;
        // A page that does not answer (a hung frame) is given up on like a slow read.
        let locate = self.ports.pages.locate(tab_id, text);
        let late = self.ports.clock.sleep(PAGE_READ_TIMEOUT_MS);
        let result = match future::select(locate, late).await {
            Either::Left((result, _)) => result,
            Either::Right(_) => Err(PageReadError::Timeout),
        };
        match result {
            Ok(found) => Ok(LocateReply { found }),
            Err(err) => Err(locate_error(err)),
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
