//! The sources a run's answer may cite: each passage of the page given to the model is
//! `pN` (the N-th passage of the page text), each web result graded relevant is `n` (in the
//! order graded). The sources the final answer cites are kept with the run, beside the
//! answer, never appended to its text.

use super::search::Verdict;
use super::trajectory::{Hit, Item};
use super::SessionState;
use crate::page;
use crate::page::Excerpt;
use crate::tools::{own_limit, passages_across, passages_of_call, SUMMARIZE_PAGE};
pub use crate::types::source::{Source, SourceKind};
use crate::types::ToolCall;

/// Longest excerpt kept per web source (characters); a page source keeps its passage
/// whole (at most [`page::PASSAGE_MAX_CHARS`]).
pub const EXCERPT_CHARS: usize = 200;

/// What a request gives of its page beside the page block's lead, before its question.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QuestionPassages {
    /// The passages chosen for the question that no earlier turn gave, in page order.
    pub extra: Vec<usize>,
    /// How many of the page's passages the model has seen, when the request says so: a
    /// question about a cut page, the first one or one that adds passages (a note repeated
    /// with nothing new is left out: its bytes would only be read again).
    pub seen: Option<usize>,
}

impl SessionState {
    /// The passages the earlier turns on this page gave beside the lead, in the order
    /// given (those the session's summary covers are not in a request any more).
    pub fn earlier_passages(&self) -> Vec<usize> {
        let mut given = Vec::new();
        for turn in self.uncovered_turns() {
            for &i in &turn.passages {
                if !given.contains(&i) {
                    given.push(i);
                }
            }
        }
        given
    }

    /// The turns a request still carries (the summary stands for the others).
    fn uncovered_turns(&self) -> &[super::Turn] {
        let covered = self.compact.compaction.as_ref().map_or(0, |c| c.turns);
        &self.turns[covered.min(self.turns.len())..]
    }

    /// What the current question's request gives of its page beside the lead, for an
    /// excerpt of `excerpt_chars` characters: the excerpt's passages past the lead, or with
    /// `with_earlier` (the request repeats the earlier turns' passages) those of them that
    /// match the question better than any passage an earlier turn gave; and the count of
    /// passages seen for a question about a cut page.
    pub fn question_passages(&self, excerpt_chars: usize, with_earlier: bool) -> QuestionPassages {
        let Some(text) = self.page.as_ref().map(|p| p.text.as_str()) else {
            return QuestionPassages::default();
        };
        if text.is_empty() {
            return QuestionPassages::default();
        }
        let index = page::index_of(text);
        let excerpt = self.own_excerpt(excerpt_chars);
        let earlier = if with_earlier {
            self.earlier_passages()
        } else {
            Vec::new()
        };
        // The excerpt's passages rank above every passage of the lead; a follow-up's also
        // above every passage the conversation has: the first one it has ends them.
        let mut extra: Vec<usize> = excerpt
            .extra
            .iter()
            .copied()
            .take_while(|i| !earlier.contains(i))
            .collect();
        crate::types::order::sort(&mut extra);
        let total = index.passages().len();
        let mut shown = excerpt.lead.len() + extra.len();
        shown += earlier.iter().filter(|i| !excerpt.lead.contains(i)).count();
        let said = with_earlier && self.uncovered_turns().iter().any(|t| t.seen.is_some());
        let seen = (self.selection.is_none() && shown < total && !(said && extra.is_empty()))
            .then_some(shown);
        QuestionPassages { extra, seen }
    }

    /// What the page block's passages are chosen for: the selection an explanation is
    /// about, else the question.
    pub fn page_query(&self) -> &str {
        match &self.selection {
            Some(selection) => &selection.text,
            None => &self.question,
        }
    }

    /// The passages of the page the run has given the model so far (indices, in the order
    /// first given): those its requests hold before the question (the page block's lead,
    /// the earlier turns' passages and the question's own), in page order, then those of
    /// each successful `read_page` and `query_page` call. Each follows from the page text and the question or the call's
    /// arguments, so nothing a result's text says can add one.
    pub fn passages_given(&self) -> Vec<usize> {
        let Some(text) = self.page.as_ref().map(|p| p.text.as_str()) else {
            return Vec::new();
        };
        if text.is_empty() {
            return Vec::new();
        }
        let chars = self.config.page_excerpt_chars;
        let mut given = self.own_excerpt(chars).lead;
        let current = self.question_passages(chars, true).extra;
        for i in current.into_iter().chain(self.earlier_passages()) {
            if !given.contains(&i) {
                given.push(i);
            }
        }
        crate::types::order::sort(&mut given);
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
                    let found = if self.added_texts.is_empty() {
                        passages_of_call(&call.name, &call.arguments, text)
                    } else {
                        passages_across(&call.name, &call.arguments, text, &self.added_texts)
                            .into_iter()
                            .filter(|(s, _)| *s == 0)
                            .map(|(_, i)| i)
                            .collect()
                    };
                    for i in found {
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

    /// The excerpt of the own page for a first request of `chars` characters: the whole
    /// budget, or with pages added to the conversation its share ([`page::across::excerpts`]).
    pub fn own_excerpt(&self, chars: usize) -> Excerpt {
        let text = self.page.as_ref().map_or("", |p| p.text.as_str());
        if self.added_texts.is_empty() {
            let index = page::index_of(text);
            return page::excerpt(&index, text, self.page_query(), chars);
        }
        let sources = page::across::sources(text, own_limit(&self.added_texts), &self.added_texts);
        page::across::excerpts(&sources, self.page_query(), chars)
            .into_iter()
            .next()
            .unwrap_or_default()
    }

    /// The first excerpt of each page added to the conversation (in `added_texts`' order)
    /// for a first request of `chars` characters: its share of them.
    pub fn added_excerpts(&self, chars: usize) -> Vec<Excerpt> {
        let text = self.page.as_ref().map_or("", |p| p.text.as_str());
        let sources = page::across::sources(text, own_limit(&self.added_texts), &self.added_texts);
        page::across::excerpts(&sources, self.page_query(), chars)
            .into_iter()
            .skip(1)
            .collect()
    }

    /// The passages of the added pages the run has given the model (position in
    /// `added_texts`, passage index), in the order first given: each page's first excerpt,
    /// then those of each successful `query_page` call.
    pub fn added_given(&self) -> Vec<(usize, usize)> {
        if self.added_texts.is_empty() {
            return Vec::new();
        }
        let mut given: Vec<(usize, usize)> = Vec::new();
        let excerpts = self.added_excerpts(self.config.page_excerpt_chars);
        for (a, excerpt) in excerpts.iter().enumerate() {
            for i in excerpt.all() {
                given.push((a, i));
            }
        }
        let text = self.page.as_ref().map_or("", |p| p.text.as_str());
        let mut calls: Vec<&ToolCall> = Vec::new();
        for entry in &self.trajectory {
            match &entry.item {
                Item::ToolCall { call } => calls.push(call),
                Item::ToolResult {
                    call_id, ok: true, ..
                } => {
                    let Some(call) = calls.iter().find(|c| &c.id == call_id) else {
                        continue;
                    };
                    for (s, i) in
                        passages_across(&call.name, &call.arguments, text, &self.added_texts)
                    {
                        if s > 0 && !given.contains(&(s - 1, i)) {
                            given.push((s - 1, i));
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
                    page: passage.page,
                    tab: None,
                    added: false,
                });
            }
        }
        for (a, i) in self.added_given() {
            let added = &self.added_texts[a];
            let index = page::index_of(&added.page.text);
            let Some(passage) = index.passages().get(i) else {
                continue;
            };
            sources.push(Source {
                id: page::passage_id(added.base + i),
                kind: SourceKind::Page,
                title: added.page.title.clone(),
                url: added.page.url.clone(),
                excerpt: page::plain_text(passage, &added.page.text),
                start: Some(passage.start_char as u64),
                end: Some((passage.start_char + passage.chars) as u64),
                page: passage.page,
                tab: added.tab,
                added: true,
            });
        }
        sources.extend(self.web_sources().into_iter().map(|(n, hit)| Source {
            id: n.to_string(),
            kind: SourceKind::Web,
            title: hit.title.clone(),
            url: hit.url.clone(),
            excerpt: hit.snippet.trim().chars().take(EXCERPT_CHARS).collect(),
            start: None,
            end: None,
            page: None,
            tab: None,
            added: false,
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

#[cfg(test)]
mod tests {
    use super::super::{Compaction, RunStatus, Turn};
    use super::*;
    use crate::state::RunConfig;
    use crate::types::PageInfo;

    /// A session on a page of 60 passages (each about one numbered basin, with a rare
    /// word of its own), cut to an excerpt, asking `question` after `turns`.
    fn asking(question: &str, turns: Vec<Turn>) -> SessionState {
        let text: String = (1..=60)
            .map(|i| format!("## Basin {i}\nBasin {i} keeps the word w{i}x and boats of the harbour, by the old quay stones.\n\n"))
            .collect();
        let page = PageInfo {
            title: "Harbour".into(),
            url: "http://127.0.0.1/harbour".into(),
            text,
            reader: "readability".into(),
            lang: "en".into(),
            pages: 0,
        };
        let config = RunConfig {
            page_excerpt_chars: 1_500,
            ..RunConfig::default()
        };
        let mut state = SessionState::new("tab:1", 0);
        state.begin_run(question, Some(page), config, 0);
        state.turns = turns;
        state
    }

    fn turn(passages: Vec<usize>, seen: Option<usize>) -> Turn {
        Turn {
            question: "Earlier?".into(),
            answer: "Yes.".into(),
            status: RunStatus::Completed,
            passages,
            seen,
            ..Default::default()
        }
    }

    #[test]
    fn a_follow_up_gives_only_the_passages_that_match_it_better_than_those_it_has() {
        let first = asking("Which basin keeps w50x and w51x?", Vec::new());
        let given = first.question_passages(1_500, true);
        assert!(
            !given.extra.is_empty(),
            "the best passages lie past the lead"
        );
        let best: Vec<usize> = given.extra.clone();
        assert!(
            given.seen.is_some(),
            "a cut page's first question gets the note"
        );

        // The same question again: every passage it would be given is there already.
        let again = asking(
            "Which basin keeps w50x and w51x?",
            vec![turn(best.clone(), given.seen)],
        );
        let repeat = again.question_passages(1_500, true);
        assert_eq!(
            repeat,
            QuestionPassages::default(),
            "nothing new: no passages, no note"
        );
        assert!(best.iter().all(|i| again.passages_given().contains(i)));

        // A follow-up gets only the passages ranked above every one it has: w30x's ranks
        // below w20x's, given earlier, so nothing is added.
        let follow = asking(
            "Which basin keeps w30x? w30x, w30x: or w20x?",
            vec![turn(vec![19], Some(9))],
        );
        let ranked = follow.question_passages(1_500, false);
        assert_eq!(
            ranked.extra,
            [19, 29],
            "w20x's is chosen without the earlier turn"
        );
        assert_eq!(
            follow.question_passages(1_500, true),
            QuestionPassages::default()
        );

        // A summary covering the earlier turn: its passages are not in the request any more.
        let mut covered = asking(
            "Which basin keeps w50x and w51x?",
            vec![turn(best.clone(), given.seen)],
        );
        covered.compact.compaction = Some(Compaction {
            turns: 1,
            run_id: covered.run_id,
            entries: 0,
            summary: "Basins.".into(),
            by_model: true,
        });
        assert_eq!(covered.earlier_passages(), Vec::<usize>::new());
        assert_eq!(covered.question_passages(1_500, true).extra, given.extra);
        // Turns cut for the window: the same.
        assert_eq!(again.question_passages(1_500, false).extra, given.extra);
    }
}
