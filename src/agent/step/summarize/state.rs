//! The persisted state of a `summarize_page_content` call: the page's sections (ranges of
//! passage indices, fixed when the call began), the summaries written so far, and the stage.
//! It lives in [`crate::state::Next::Summarize`], and every section summary is saved as it comes
//! (also as a `section_summary` trajectory entry), so a worker stopped in the middle of a
//! summary redoes at most the one section that was in flight.

use std::ops::Range;

use serde::Serialize;

use crate::types::ToolCall;
use kljson::{FromJson, ToJson};

/// What the summary does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryStage {
    /// Summarise the next section (`summaries.len()` of them are done).
    Map,
    /// Combine the section summaries into one.
    Reduce,
}

kljson::named_enum!(SummaryStage {
    Map = "map",
    Reduce = "reduce",
});

/// Why the summary covers fewer sections than the page has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[serde(rename_all = "snake_case")]
pub enum Shortfall {
    /// The token budget allowed no more sections.
    Budget,
    /// A section's call failed (after its retries) or was cut off too often.
    Failed {
        /// What went wrong.
        message: String,
    },
    /// A section's call was cut off (the worker stopping) more often than the retry bound
    /// allows.
    CutOff,
    /// The user pressed Stop.
    Stopped,
}

/// One `summarize_page_content` call in progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct SummaryRun {
    /// The tool call it answers.
    pub call: ToolCall,
    /// The sections, as ranges of passage indices, in page order.
    pub sections: Vec<Range<usize>>,
    /// The summaries of the first sections, in order.
    #[serde(default)]
    pub summaries: Vec<String>,
    /// The next stage.
    pub stage: SummaryStage,
    /// Why mapping stopped before the last section, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shortfall: Option<Shortfall>,
}

impl SummaryRun {
    /// A summary of `sections` for `call`, before its first section.
    pub fn new(call: ToolCall, sections: Vec<Range<usize>>) -> Self {
        Self {
            call,
            sections,
            summaries: Vec::new(),
            stage: SummaryStage::Map,
            shortfall: None,
        }
    }

    /// Sections summarised so far.
    pub fn done(&self) -> usize {
        self.summaries.len()
    }

    /// Sections of the page.
    pub fn of(&self) -> usize {
        self.sections.len()
    }

    /// Which sections the summary covers: "sections 1–5 of 12" (a page of one section:
    /// "the whole page").
    pub fn covered(&self) -> String {
        let (done, of) = (self.done(), self.of());
        match (done, of) {
            (1, 1) => "the whole page".to_string(),
            (1, _) => format!("section 1 of {of}"),
            _ => format!("sections 1–{done} of {of}"),
        }
    }

    /// [`SummaryRun::covered`], with why it stopped short: "sections 1–5 of 12; the budget
    /// allows no more".
    pub fn coverage(&self) -> String {
        let covered = self.covered();
        let done = self.done();
        match &self.shortfall {
            None => covered,
            Some(Shortfall::Budget) => format!("{covered}; the budget allows no more"),
            Some(Shortfall::Failed { message }) => format!(
                "{covered}; summarizing section {} failed ({message})",
                done + 1
            ),
            Some(Shortfall::CutOff) => format!(
                "{covered}; summarizing section {} was cut off too often",
                done + 1
            ),
            Some(Shortfall::Stopped) => format!("{covered}; stopped by the user"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(done: usize, of: usize, shortfall: Option<Shortfall>) -> SummaryRun {
        let mut run = SummaryRun::new(
            ToolCall {
                id: "c".into(),
                name: "summarize_page_content".into(),
                arguments: "{}".into(),
            },
            (0..of).map(|i| i..i + 1).collect(),
        );
        run.summaries = vec!["s".into(); done];
        run.shortfall = shortfall;
        run
    }

    #[test]
    fn coverage_names_the_sections_and_why_it_stopped() {
        assert_eq!(run(1, 1, None).coverage(), "the whole page");
        assert_eq!(run(12, 12, None).coverage(), "sections 1–12 of 12");
        assert_eq!(
            run(5, 12, Some(Shortfall::Budget)).coverage(),
            "sections 1–5 of 12; the budget allows no more"
        );
        assert_eq!(
            run(1, 3, Some(Shortfall::Stopped)).coverage(),
            "section 1 of 3; stopped by the user"
        );
        assert_eq!(
            run(
                2,
                3,
                Some(Shortfall::Failed {
                    message: "timeout".into()
                })
            )
            .coverage(),
            "sections 1–2 of 3; summarizing section 3 failed (timeout)"
        );
        assert_eq!(
            run(2, 3, Some(Shortfall::CutOff)).coverage(),
            "sections 1–2 of 3; summarizing section 3 was cut off too often"
        );
    }
}
