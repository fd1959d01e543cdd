//! The sources a run's answer may cite: each successful `read_page` result is page passage
//! `pN` (in the order read), each web result graded relevant is `n` (in the order graded). The sources the final answer cites are kept with the run, beside
//! the answer, never appended to its text.

use serde::{Deserialize, Serialize};

use super::search::Verdict;
use super::trajectory::{Hit, Item};
use super::SessionState;
use crate::tools::{PassageHeader, ReadPage, TypedTool};

/// Longest excerpt kept per source (characters).
pub const EXCERPT_CHARS: usize = 200;

/// What a source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// A passage of the page (`pN`).
    Page,
    /// A web search result (`n`).
    Web,
}

/// A source an answer cites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// What the answer cites: `p1` for a page passage, `1` for a web result.
    pub id: String,
    /// What it is.
    pub kind: SourceKind,
    /// Its title.
    pub title: String,
    /// Its address.
    pub url: String,
    /// Its first characters (at most [`EXCERPT_CHARS`]).
    pub excerpt: String,
    /// A page passage's first character.
    pub start: Option<u64>,
    /// One past a page passage's last character.
    pub end: Option<u64>,
}

impl SessionState {
    /// Successful `read_page` results in the run's trajectory.
    pub fn passages_read(&self) -> u32 {
        let count = self.passages().count();
        u32::try_from(count).unwrap_or(u32::MAX)
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

    /// Every source the run has so far: page passages in the order read, then web results
    /// graded relevant.
    pub fn available_sources(&self) -> Vec<Source> {
        let url = self
            .page
            .as_ref()
            .map(|p| p.url.clone())
            .unwrap_or_default();
        let web = self.web_sources().into_iter().map(|(n, hit)| Source {
            id: n.to_string(),
            kind: SourceKind::Web,
            title: hit.title.clone(),
            url: hit.url.clone(),
            excerpt: hit.snippet.trim().chars().take(EXCERPT_CHARS).collect(),
            start: None,
            end: None,
        });
        self.passages()
            .filter_map(|content| {
                let (header, text) = PassageHeader::parse(content)?;
                Some(Source {
                    id: format!("p{}", header.number),
                    kind: SourceKind::Page,
                    title: header.title,
                    url: url.clone(),
                    excerpt: text.trim().chars().take(EXCERPT_CHARS).collect(),
                    start: Some(header.start),
                    end: Some(header.end),
                })
            })
            .chain(web)
            .collect()
    }

    fn passages(&self) -> impl Iterator<Item = &str> {
        self.trajectory.iter().filter_map(|e| match &e.item {
            Item::ToolResult {
                name,
                ok: true,
                content,
                ..
            } if name == ReadPage::NAME => Some(content.as_str()),
            _ => None,
        })
    }
}
