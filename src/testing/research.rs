//! [`ResearchScript`]: what a scripted model answers in research mode, decided by the
//! request alone (so a call redone after a worker stop gets the same answer), and a panic
//! on any request research mode should not make. Used by the research tests, the research
//! chaos test and the benchmarks.

use crate::llm::{ChatMessage, ChatRequest, ChatResponse, Role, ToolCall, Usage};

use super::{Reply, RequestKind};

/// The claim the scripted synthesis makes that no finding supports (the review removes it).
pub const UNSUPPORTED: &str = "The sun is made of cheese [9].";
/// The query the scripted rewrite answers.
pub const REWRITTEN: &str = "tides moon gravity";

/// The research a scripted model does: the subtopics it names (duplicates included, to be
/// removed), and per subtopic a web search then a page query, then its findings.
#[derive(Debug, Clone)]
pub struct ResearchScript {
    /// What the decompose call answers.
    pub subtopics: Vec<String>,
    /// Whether the subtopic stage searches the web (else it only queries the page).
    pub search: bool,
    /// Whether the review asks to remove [`UNSUPPORTED`].
    pub review_fixes: bool,
}

impl ResearchScript {
    /// Subtopics `names`, searching the web, with a review that fixes the report.
    pub fn new(names: &[&str]) -> Self {
        Self {
            subtopics: names.iter().map(|n| (*n).to_string()).collect(),
            search: true,
            review_fixes: true,
        }
    }

    /// The reply to `request`; panics on a request research mode does not make.
    pub fn reply(&self, request: &ChatRequest) -> Reply {
        let opening = opening(request);
        let usage = Some(Usage::new(200, 20));
        let raw = |content: String, tool_calls: Vec<ToolCall>| {
            Reply::Raw(ChatResponse {
                content,
                finish_reason: (!tool_calls.is_empty()).then(|| "tool_calls".into()),
                tool_calls,
                usage,
            })
        };
        match RequestKind::of(request) {
            RequestKind::Other(name) if name == "subtopics" => {
                assert!(opening.contains("Split the question"), "{opening}");
                raw(
                    kljson::json!({ "subtopics": self.subtopics }).to_string(),
                    Vec::new(),
                )
            }
            RequestKind::Grading => raw(grades(&request.messages[1].content), Vec::new()),
            RequestKind::Rewrite => raw(
                kljson::json!({ "query": REWRITTEN }).to_string(),
                Vec::new(),
            ),
            RequestKind::Reason => {
                let n = subtopic_number(opening)
                    .unwrap_or_else(|| panic!("a tool call outside a subtopic: {opening}"));
                let results = request
                    .messages
                    .iter()
                    .filter(|m| m.role == Role::Tool)
                    .count();
                let call = |name: &str, arguments: String| {
                    vec![ToolCall {
                        id: format!("s{n}_{results}"),
                        name: name.into(),
                        arguments,
                    }]
                };
                match (results, self.search) {
                    (0, true) => raw(
                        format!("Searching for subtopic {n}."),
                        call(
                            "search_web_for_info",
                            kljson::json!({ "query": format!("tides {n}") }).to_string(),
                        ),
                    ),
                    (0, false) | (1, true) => raw(
                        format!("Reading the page for subtopic {n}."),
                        call(
                            "query_page",
                            kljson::json!({ "query": "moon oceans" }).to_string(),
                        ),
                    ),
                    _ => {
                        let web = if self.search { " [1]" } else { "" };
                        raw(
                            format!("Subtopic {n}: the moon pulls the oceans{web} [p1]."),
                            Vec::new(),
                        )
                    }
                }
            }
            RequestKind::Synthesis => {
                assert!(opening.contains("Write the report"), "{opening}");
                let sections: Vec<String> = self
                    .subtopics
                    .iter()
                    .enumerate()
                    .map(|(i, t)| format!("## {t}\nThe moon pulls the oceans [p1] ({}).", i + 1))
                    .collect();
                // Streamed in pieces, as a provider streams the report.
                Reply::Text(format!(
                    "{}\n\n## Synthesis\nThe moon causes the tides [p1]. {UNSUPPORTED}",
                    sections.join("\n\n")
                ))
            }
            RequestKind::Other(name) if name == "review" => {
                let fixes = if self.review_fixes {
                    kljson::json!([{ "find": UNSUPPORTED, "replace": "" }])
                } else {
                    kljson::json!([])
                };
                raw(kljson::json!({ "fixes": fixes }).to_string(), Vec::new())
            }
            other => panic!("an unexpected {other:?} request in research mode: {request:?}"),
        }
    }
}

/// The user message that opened the request's context (the second message).
pub fn opening(request: &ChatRequest) -> &str {
    request
        .messages
        .iter()
        .find(|m: &&ChatMessage| m.role == Role::User)
        .map_or("", |m| m.content.as_str())
}

/// Which subtopic (1-based) a request researches, from its opening message.
pub fn subtopic_number(opening: &str) -> Option<usize> {
    let at = opening.find("Research subtopic ")? + "Research subtopic ".len();
    let digits: String = opening[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// A grading reply for the results listed in `request` (`[n] Title` lines): results whose
/// title names a band are not relevant.
pub fn grades(request: &str) -> String {
    let grades: Vec<serde_json::Value> = request
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix('[')?;
            let (n, title) = rest.split_once("] ")?;
            let n: u32 = n.parse().ok()?;
            let band = title.contains("Band");
            Some(kljson::json!({
                "index": n,
                "relevant": !band,
                "confidence": 0.8,
                "reason": if band { "a band, not the sea" } else { "about the tides" },
            }))
        })
        .collect();
    kljson::json!({ "grades": grades }).to_string()
}

/// A search service that answers by the query and counts the searches that finished: a
/// band's pages for any query but [`REWRITTEN`], the tides' for it. With `yields`, each
/// search is in flight for that many polls (for chaos tests).
#[derive(Default)]
pub struct TopicSearch {
    /// Searches that finished.
    pub searches: std::rc::Rc<std::cell::Cell<u32>>,
    /// Polls each search is in flight.
    pub yields: usize,
}

impl crate::ports::SearchClient for TopicSearch {
    fn search<'a>(
        &'a self,
        query: &'a crate::ports::SearchQuery,
    ) -> futures::future::LocalBoxFuture<
        'a,
        Result<Vec<crate::types::SearchResult>, crate::types::SearchError>,
    > {
        use futures::FutureExt;
        async move {
            for _ in 0..self.yields {
                super::yield_now().await;
            }
            self.searches.set(self.searches.get() + 1);
            let topic = if query.text == REWRITTEN {
                "Tide"
            } else {
                "Tides Band"
            };
            Ok((1..=2)
                .map(|i| {
                    super::search_result(
                        &format!("{topic} {i}"),
                        &format!("https://wiki.test/{}/{i}", topic.replace(' ', "_")),
                        "The moon pulls the oceans.",
                    )
                })
                .collect())
        }
        .boxed_local()
    }
}

impl crate::search::SearchFactory for TopicSearch {
    fn client(
        &self,
        _config: crate::search::SearchConfig,
    ) -> std::rc::Rc<dyn crate::ports::SearchClient> {
        std::rc::Rc::new(TopicSearch {
            searches: self.searches.clone(),
            yields: self.yields,
        })
    }
}

/// Tab 1's page in the research tests: a short page about the tides.
pub fn tides_pages() -> super::StaticPages {
    let mut pages = std::collections::BTreeMap::new();
    pages.insert(
        1,
        crate::types::PageInfo {
            title: "Tides".into(),
            url: "http://127.0.0.1/tides".into(),
            text: "# Tides\nThe moon pulls the oceans. The sun pulls them less.".into(),
            ..Default::default()
        },
    );
    super::StaticPages(pages)
}
