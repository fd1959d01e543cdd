//! The session's conversation history: the finished questions kept as turns (with the page
//! passages each one's request gave, so later requests repeat them byte for byte), and the
//! summary that stands for the compacted part.

use serde::Serialize;

use super::{PageInfo, RunStatus, SessionState};
use kljson::{FromJson, ToJson};

/// A finished question of this session, kept as conversation history.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Turn {
    /// The question.
    pub question: String,
    /// The answer it got (maybe partial or empty).
    pub answer: String,
    /// How it ended.
    pub status: RunStatus,
    /// Whether it explained a selection (`question` is then the selected text).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explain: bool,
    /// The selection action it applied (its name), when it was not an explanation
    /// (`explain` is then true too: `question` is the selected text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The passages past the page block's lead its first request gave that no earlier turn
    /// had (page order). Every later request on the page repeats them before its question,
    /// so it starts with that request's bytes (the model server's prompt cache). Empty once
    /// the session moves to another page.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passages: Vec<usize>,
    /// How many of the page's passages the model had seen, when its request said so (a
    /// question about a cut page); repeated with its passages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<usize>,
}

impl SessionState {
    /// Keeps the current run (if it asked something) as a turn before the next run on `next`,
    /// with the passages its request gave; the turns' passages go when `next` is another
    /// page or another text (they are indices into the page's text).
    pub(super) fn close_turn(&mut self, next: Option<&PageInfo>) {
        if self.run_id > 0 && !self.question.is_empty() {
            let given = self.question_passages(self.config.page_excerpt_chars, true);
            self.turns.push(Turn {
                question: self.question.clone(),
                answer: self.answer.clone(),
                status: self.status,
                explain: self.selection.is_some(),
                action: self.action.as_ref().map(|a| a.name.clone()),
                passages: given.extra,
                seen: given.seen,
            });
        }
        let same = match (&self.page, next) {
            (Some(before), Some(now)) => before.url == now.url && before.text == now.text,
            (before, now) => before.is_none() && now.is_none(),
        };
        if !same {
            for turn in &mut self.turns {
                turn.passages.clear();
                turn.seen = None;
            }
        }
    }
}
