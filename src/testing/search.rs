//! [`ScriptedSearch`]: a search client that plays back results in order and fails the test
//! on a search the script has no answer for, or (when dropped) on answers never asked for;
//! [`ScriptedSearches`], the factory that hands it out, and [`NoSearch`], the factory for
//! tests that must not search at all.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;

use crate::ports::{SearchClient, SearchQuery};
use crate::search::{SearchConfig, SearchFactory};
use crate::types::{SearchError, SearchResult};

/// A search client that answers from a script and records the queries.
#[derive(Default)]
pub struct ScriptedSearch {
    answers: RefCell<VecDeque<Result<Vec<SearchResult>, SearchError>>>,
    /// Every query received, in order.
    pub queries: RefCell<Vec<SearchQuery>>,
    lenient: bool,
}

impl ScriptedSearch {
    /// A client with `answers`, one per expected search.
    pub fn new(answers: Vec<Result<Vec<SearchResult>, SearchError>>) -> Self {
        Self {
            answers: RefCell::new(answers.into()),
            queries: RefCell::default(),
            lenient: false,
        }
    }

    /// The same client, allowing answers never asked for (for tests whose random inputs
    /// make the number of searches unknowable).
    #[must_use]
    pub fn lenient(mut self) -> Self {
        self.lenient = true;
        self
    }

    /// Answers not yet asked for.
    pub fn remaining(&self) -> usize {
        self.answers.borrow().len()
    }

    /// The texts searched for, in order.
    pub fn texts(&self) -> Vec<String> {
        self.queries
            .borrow()
            .iter()
            .map(|q| q.text.clone())
            .collect()
    }
}

/// A result for tests: `title`, `url`, and `text` as both snippet and content.
pub fn search_result(title: &str, url: &str, text: &str) -> SearchResult {
    SearchResult {
        title: title.into(),
        url: url.into(),
        snippet: text.into(),
        content: text.into(),
    }
}

impl Drop for ScriptedSearch {
    fn drop(&mut self) {
        let left = self.answers.get_mut().len();
        if left > 0 && !self.lenient && !std::thread::panicking() {
            panic!(
                "ScriptedSearch: {left} scripted answer(s) never asked for after {} search(es)",
                self.queries.get_mut().len()
            );
        }
    }
}

impl SearchClient for ScriptedSearch {
    fn search<'a>(
        &'a self,
        query: &'a SearchQuery,
    ) -> LocalBoxFuture<'a, Result<Vec<SearchResult>, SearchError>> {
        self.queries.borrow_mut().push(query.clone());
        let answer = self.answers.borrow_mut().pop_front().unwrap_or_else(|| {
            panic!(
                "ScriptedSearch: unexpected search #{} for {:?}, the script has no answer left",
                self.queries.borrow().len(),
                query.text
            )
        });
        future::ready(answer).boxed_local()
    }
}

/// A [`SearchFactory`] whose every client is one [`ScriptedSearch`]; it records the settings
/// each client was made for.
pub struct ScriptedSearches {
    /// The client handed out.
    pub search: Rc<ScriptedSearch>,
    /// The settings of every client made, in order.
    pub configs: RefCell<Vec<SearchConfig>>,
}

impl ScriptedSearches {
    /// A factory whose clients answer with `answers`, one per expected search.
    pub fn new(answers: Vec<Result<Vec<SearchResult>, SearchError>>) -> Self {
        Self {
            search: Rc::new(ScriptedSearch::new(answers)),
            configs: RefCell::default(),
        }
    }
}

impl SearchFactory for ScriptedSearches {
    fn client(&self, config: SearchConfig) -> Rc<dyn SearchClient> {
        self.configs.borrow_mut().push(config);
        self.search.clone()
    }
}

/// A [`SearchFactory`] that fails the test when asked for a client.
pub struct NoSearch;

impl SearchFactory for NoSearch {
    fn client(&self, config: SearchConfig) -> Rc<dyn SearchClient> {
        panic!("NoSearch: this test did not expect a search client (asked for {config:?})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(text: &str) -> SearchQuery {
        SearchQuery {
            text: text.into(),
            limit: 5,
            language: None,
        }
    }

    #[test]
    fn plays_back_in_order_and_records() {
        let search = ScriptedSearch::new(vec![
            Ok(vec![search_result("A", "https://a.example/", "a")]),
            Err(SearchError::timeout("Wikipedia", 20_000)),
        ]);
        let first = futures::executor::block_on(search.search(&query("one")));
        assert_eq!(first.expect("ok").len(), 1);
        let second = futures::executor::block_on(search.search(&query("two")));
        assert!(second.is_err());
        assert_eq!(search.texts(), ["one", "two"]);
    }

    #[test]
    #[should_panic(expected = "unexpected search")]
    fn an_unexpected_search_fails_the_test() {
        let search = ScriptedSearch::new(Vec::new());
        let _ = futures::executor::block_on(search.search(&query("one")));
    }

    #[test]
    #[should_panic(expected = "never asked for")]
    fn an_unused_answer_fails_the_test() {
        let _search = ScriptedSearch::new(vec![Ok(Vec::new())]);
    }
}
