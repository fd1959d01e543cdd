//! [`HttpSearch`]: the [`SearchClient`] that sends a provider's requests over any
//! [`HttpClient`], each with a whole-request deadline read from the [`Clock`] port (the
//! HTTP port has no timeout of its own), and hands the bodies to the provider's parser.

use std::rc::Rc;

use futures::future::{self, Either, LocalBoxFuture};
use futures::FutureExt;

use super::{brave, searxng, tavily, wikipedia, SearchConfig, SearchFactory, SearchProvider};
use crate::ports::{
    read_body_to_string, Clock, HttpClient, HttpRequest, SearchClient, SearchQuery,
};
use crate::types::secrets::scrub;
use crate::types::{SearchError, SearchResult};

/// The deadline of one search request, from sending it to the end of its body.
pub const DEADLINE_MS: u64 = 20_000;

/// A provider's response parser: the body and the result limit.
type Parse = fn(&str, usize) -> Result<Vec<SearchResult>, SearchError>;

/// The largest body read; a longer (or endless) one is cut here, and then fails to parse.
const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// A [`SearchClient`] for `config`'s provider over `http`.
pub struct HttpSearch {
    http: Rc<dyn HttpClient>,
    clock: Rc<dyn Clock>,
    config: SearchConfig,
    deadline_ms: u64,
    default_language: Option<String>,
}

impl HttpSearch {
    /// A client for `config`, with the [`DEADLINE_MS`] deadline per request.
    pub fn new(http: Rc<dyn HttpClient>, clock: Rc<dyn Clock>, config: SearchConfig) -> Self {
        Self {
            http,
            clock,
            config,
            deadline_ms: DEADLINE_MS,
            default_language: None,
        }
    }

    /// The BCP 47 language tag used when a query carries none (the browser's); it picks
    /// Wikipedia's site when no Search base URL is set.
    #[must_use]
    pub fn with_default_language(mut self, language: Option<String>) -> Self {
        self.default_language = language.filter(|l| !l.trim().is_empty());
        self
    }

    /// Overrides the per-request deadline.
    #[must_use]
    pub fn with_deadline_ms(mut self, ms: u64) -> Self {
        self.deadline_ms = ms;
        self
    }

    /// The settings this client uses.
    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    /// Sends `request` and returns the success body, or the provider's reading of an error
    /// status, all within the deadline.
    async fn fetch(&self, request: HttpRequest) -> Result<String, SearchError> {
        let label = self.config.provider.label();
        let exchange = async {
            let mut response = self
                .http
                .send(request)
                .await
                .map_err(|e| SearchError::network(label, &e.message))?;
            let body = read_body_to_string(response.body.as_mut(), BODY_LIMIT).await;
            match body {
                Ok(body) if (200..300).contains(&response.status) => Ok(body),
                Err(e) if (200..300).contains(&response.status) => {
                    Err(SearchError::network(label, &e.message))
                }
                // An error status counts even when its body broke off.
                body => Err(self.status_error(response.status, &body.unwrap_or_default())),
            }
        };
        let deadline = self.clock.sleep(self.deadline_ms);
        match future::select(Box::pin(exchange), deadline).await {
            Either::Left((outcome, _)) => outcome,
            Either::Right(_) => Err(SearchError::timeout(label, self.deadline_ms)),
        }
    }

    async fn run(&self, query: &SearchQuery) -> Result<Vec<SearchResult>, SearchError> {
        if let Some(problem) = self.config.problem() {
            return Err(problem);
        }
        let config = &self.config;
        let (text, limit) = (query.text.as_str(), query.limit);
        let (request, parse): (HttpRequest, Parse) = match config.provider {
            SearchProvider::Wikipedia => return self.wikipedia(query).await,
            SearchProvider::Searxng => (
                searxng::build_request(config, text),
                searxng::parse_response,
            ),
            SearchProvider::Brave => (
                brave::build_request(config, text, limit),
                brave::parse_response,
            ),
            SearchProvider::Tavily => (
                tavily::build_request(config, text, limit),
                tavily::parse_response,
            ),
        };
        let body = self.fetch(request).await?;
        parse(&body, limit)
    }

    /// The provider's reading of an error status.
    fn status_error(&self, status: u16, body: &str) -> SearchError {
        match self.config.provider {
            SearchProvider::Wikipedia => wikipedia::parse_error(status, body),
            SearchProvider::Searxng => searxng::parse_error(&self.config.base_or(""), status, body),
            SearchProvider::Brave => brave::parse_error(status, body),
            SearchProvider::Tavily => tavily::parse_error(status, body),
        }
    }

    /// Two requests: the hits, then the plain-text intros of the pages kept. Without the
    /// intros (the second request failed) the snippets serve as content.
    async fn wikipedia(&self, query: &SearchQuery) -> Result<Vec<SearchResult>, SearchError> {
        let language = query
            .language
            .as_deref()
            .or(self.default_language.as_deref());
        let site = wikipedia::Site::new(&self.config, language);
        let body = self
            .fetch(site.search_request(&query.text, query.limit))
            .await?;
        let hits = wikipedia::parse_search(&site, &body, query.limit)?;
        if hits.is_empty() {
            return Ok(hits);
        }
        let titles: Vec<&str> = hits.iter().map(|h| h.title.as_str()).collect();
        let extracts = self
            .fetch(site.extracts_request(&titles))
            .await
            .and_then(|body| wikipedia::parse_extracts(&body));
        Ok(match extracts {
            Ok(extracts) => wikipedia::with_extracts(hits, &extracts),
            Err(_) => hits,
        })
    }
}

/// What a search server says reaches the run through here, with the Search API key
/// scrubbed from it (results and errors alike; see [`crate::types::secrets::scrub`]).
impl SearchClient for HttpSearch {
    fn search<'a>(
        &'a self,
        query: &'a SearchQuery,
    ) -> LocalBoxFuture<'a, Result<Vec<SearchResult>, SearchError>> {
        async move {
            let key = self.config.api_key.as_str();
            let clean = |text: String| scrub(&text, key);
            match self.run(query).await {
                Ok(results) => Ok(results
                    .into_iter()
                    .map(|r| SearchResult {
                        title: clean(r.title),
                        url: clean(r.url),
                        snippet: clean(r.snippet),
                        content: clean(r.content),
                    })
                    .collect()),
                Err(mut err) => {
                    err.message = clean(err.message);
                    err.detail = err.detail.map(clean);
                    Err(err)
                }
            }
        }
        .boxed_local()
    }
}

/// The [`SearchFactory`] that makes an [`HttpSearch`] over one [`HttpClient`] and clock.
pub struct HttpSearchFactory {
    http: Rc<dyn HttpClient>,
    clock: Rc<dyn Clock>,
    default_language: Option<String>,
}

impl HttpSearchFactory {
    /// Clients over `http`, with deadlines read from `clock`.
    pub fn new(http: Rc<dyn HttpClient>, clock: Rc<dyn Clock>) -> Self {
        Self {
            http,
            clock,
            default_language: None,
        }
    }

    /// Clients that use `language` (a BCP 47 tag, e.g. the browser's) when a query carries
    /// none; see [`HttpSearch::with_default_language`].
    #[must_use]
    pub fn with_default_language(mut self, language: Option<String>) -> Self {
        self.default_language = language;
        self
    }
}

impl SearchFactory for HttpSearchFactory {
    fn client(&self, config: SearchConfig) -> Rc<dyn SearchClient> {
        Rc::new(
            HttpSearch::new(self.http.clone(), self.clock.clone(), config)
                .with_default_language(self.default_language.clone()),
        )
    }
}
