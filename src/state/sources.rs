//! The sources a run's answer may cite: each passage of the page given to the model is
//! `pN` (the N-th passage of the page text), each web result graded relevant is `n` (in the
//! order graded). The sources the final answer cites are kept with the run, beside the
//! answer, never appended to its text.

use super::search::Verdict;
use super::trajectory::{Hit, Item};
use super::SessionState;
use crate::page;
use crate::tools::{passages_of_call, SUMMARIZE_PAGE};
pub use crate::types::source::{Source, SourceKind};
use crate::types::ToolCall;

/// Longest excerpt kept per web source (characters); a page source keeps its passage
/// whole (at most [`page::PASSAGE_MAX_CHARS`]).
pub const EXCERPT_CHARS: usize = 200;

impl SessionState {
    /// What the page block's passages are chosen for: the selection an explanation is
    /// about, else the question.
    pub fn page_query(&self) -> &str {
        match &self.selection {
            Some(selection) => &selection.text,
            None => &self.question,
        }
    }

    /// The passages of the page the run has given the model so far (indices, in the order
    /// first given): those of the page block, then those of each successful `read_page` and
    /// `query_page` call. Each follows from the page text and the question or the call's
    /// arguments, so nothing a result's text says can add one.
    pub fn passages_given(&self) -> Vec<usize> {
        let Some(text) = self.page.as_ref().map(|p| p.text.as_str()) else {
            return Vec::new();
        };
        if text.is_empty() {
            return Vec::new();
        }
        let index = page::index_of(text);
        let mut given = page::context_passages(
            &index,
            text,
            self.page_query(),
            self.config.page_excerpt_chars,
        );
        let mut calls: Vec<(&str, &ToolCall)> = Vec::new();
        for entry in &self.trajectory {
            match &entry.item {
                Item::ToolCall { call } => calls.push((call.id.as_str(), call)),
                Item::ToolResult {
                    call_id, ok: true, ..
                } => {
                    let Some((_, call)) = calls.iter().find(|(id, _)| id == call_id) else {
                        continue;
                    };
                    for i in passages_of_call(&call.name, &call.arguments, text) {
                        if !given.contains(&i) {
                            given.push(i);
                        }
                    }
                }
                _ => {}
            }
        }
        given
    }

    /// The web results of the run graded relevant, numbered from 1 in the order they were
    /// graded (a result found again keeps its first number): the only web sources an
    /// answer may cite (property 9).
    pub fn web_sources(&self) -> Vec<(u32, &Hit)> {
        let mut sources: Vec<(u32, &Hit)> = Vec::new();
        for entry in &self.trajectory {
            let Item::Grades { graded, .. } = &entry.item else {
                continue;
            };
            for g in graded {
                if g.grade.verdict == Verdict::Relevant
                    && !sources.iter().any(|(_, h)| h.url == g.hit.url)
                {
                    let n = u32::try_from(sources.len() + 1).unwrap_or(u32::MAX);
                    sources.push((n, &g.hit));
                }
            }
        }
        sources
    }

    /// Every source the run has so far: the page passages given to the model (in page
    /// order), then web results graded relevant.
    pub fn available_sources(&self) -> Vec<Source> {
        let mut sources = Vec::new();
        if let Some(page_info) = self.page.as_ref() {
            let mut given = self.passages_given();
            crate::types::order::sort(&mut given);
            let index = page::index_of(&page_info.text);
            for i in given {
                let Some(passage) = index.passages().get(i) else {
                    continue;
                };
                sources.push(Source {
                    id: page::passage_id(i),
                    kind: SourceKind::Page,
                    title: page_info.title.clone(),
                    url: page_info.url.clone(),
                    excerpt: page::plain_text(passage, &page_info.text),
                    start: Some(passage.start_char as u64),
                    end: Some((passage.start_char + passage.chars) as u64),
                });
            }
        }
        sources.extend(self.web_sources().into_iter().map(|(n, hit)| Source {
            id: n.to_string(),
            kind: SourceKind::Web,
            title: hit.title.clone(),
            url: hit.url.clone(),
            excerpt: hit.snippet.trim().chars().take(EXCERPT_CHARS).collect(),
            start: None,
            end: None,
        }));
        sources
    }

    /// The page's passages, and how many of them the run has given the model, when that is
    /// not all of them. A run that summarised the page read all of it (a summary cut short
    /// by the budget says so itself).
    pub fn page_coverage(&self) -> Option<(usize, usize)> {
        let summarized = self.trajectory.iter().any(|e| {
            matches!(&e.item, Item::ToolResult { name, ok: true, .. } if name == SUMMARIZE_PAGE)
        });
        if summarized {
            return None;
        }
        let text = &self.page.as_ref()?.text;
        let total = page::index_of(text).passages().len();
        let given = self.passages_given().len();
        (total > 0 && given < total).then_some((given, total))
    }
}
