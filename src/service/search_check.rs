//! "Test search" in Options: one real query with the (possibly unsaved) search settings, and
//! the result count and latency, or the exact error and what to do about it.

use super::Service;
use crate::ports::SearchQuery;
use crate::protocol::reply::{SearchCheckFailed, SearchCheckReply, SearchFound};
use crate::settings::Settings;
use crate::types::SearchError;

/// What "Test search" searches for: words every provider has results for.
pub const TEST_QUERY: &str = "web browser";

/// Results asked for by the check.
const TEST_LIMIT: usize = 5;

/// Titles of the first results shown with the count.
const TITLES_SHOWN: usize = 3;

impl Service {
    /// One search of [`TEST_QUERY`] with `settings`' search fields (the rest of the form
    /// does not matter here): the count, latency and first titles, or the error.
    pub(super) async fn test_search(&self, mut settings: Settings) -> SearchCheckReply {
        let failed = |latency_ms, error| {
            SearchCheckReply::Failed(SearchCheckFailed {
                ok: false,
                latency_ms,
                error,
            })
        };
        if let Err(invalid) = settings.check_search() {
            return failed(0, SearchError::config(invalid.0));
        }
        let Some(config) = settings.search_config() else {
            return failed(
                0,
                SearchError::config(
                    "Web search is off: choose a Search provider, then click Test search.",
                ),
            );
        };
        let provider = config.provider;
        let client = self.ports.search.client(config);
        let query = SearchQuery {
            text: TEST_QUERY.into(),
            limit: TEST_LIMIT,
            language: None,
        };
        let started = self.ports.clock.now_ms();
        let outcome = client.search(&query).await;
        let latency_ms = self.ports.clock.now_ms().saturating_sub(started);
        match outcome {
            Ok(results) => SearchCheckReply::Found(SearchFound {
                ok: true,
                latency_ms,
                provider: provider.label().into(),
                query: TEST_QUERY.into(),
                count: results.len(),
                titles: results
                    .into_iter()
                    .take(TITLES_SHOWN)
                    .map(|r| r.title)
                    .collect(),
            }),
            Err(error) => failed(latency_ms, error),
        }
    }
}
