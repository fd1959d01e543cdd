//! The persisted state of a research run (`agent::step::research::run`): the stage it is at, the
//! subtopics and what each found, and the report. It is saved with the session like every
//! other phase, so a worker stopped in any stage resumes there and no finished stage is
//! redone.

use serde::Serialize;

use crate::state::StopReason;
use kljson::{FromJson, ToJson};

/// Fewest subtopics a research run may ask for.
pub const MIN_SUBTOPICS: u32 = 2;
/// Most subtopics a research run may ask for.
pub const MAX_SUBTOPICS: u32 = 6;
/// Subtopics when the user does not say.
pub const DEFAULT_SUBTOPICS: u32 = 4;
/// Most rounds (model call + tools) of one subtopic's research.
pub const SUBTOPIC_ROUNDS: u32 = 3;

/// The most rounds a research run of `subtopics` subtopics may take: one to decompose,
/// [`SUBTOPIC_ROUNDS`] per subtopic, one to synthesise and one to review.
pub fn max_rounds(subtopics: u32) -> u32 {
    1 + subtopics * SUBTOPIC_ROUNDS + 2
}

/// Where a research run is.
/// (`"decompose"`, `{"research": 1}`, ...: externally tagged, which decodes without
/// buffering and keeps the wasm small.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Splitting the question into subtopics.
    Decompose,
    /// Researching subtopic `n` (0-based) in its own context.
    Research(usize),
    /// Writing the report in the primary context from the findings.
    Synthesize,
    /// Checking the report against the findings.
    Review,
}

/// One subtopic and what its research found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct Subtopic {
    /// What to research.
    pub title: String,
    /// What was found, with its citations (empty until researched).
    #[serde(default)]
    pub findings: String,
    /// Why its research ended (`None`: not researched yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
}

/// A research run: its bound, stage and what the finished stages produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct ResearchRun {
    /// Most subtopics ([`MIN_SUBTOPICS`]..=[`MAX_SUBTOPICS`]).
    pub max_subtopics: u32,
    /// The stage running now.
    pub stage: Stage,
    /// The subtopics (empty until decomposed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subtopics: Vec<Subtopic>,
    /// The synthesised report (empty until written).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub report: String,
    /// Fixes the review applied to the report.
    #[serde(default, skip_serializing_if = "crate::state::is_zero_u32")]
    pub fixes_applied: u32,
    /// Whether a stage was cut short (a bound, the budget, Stop): the report is partial.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

impl ResearchRun {
    /// A research run of at most `subtopics` subtopics (clamped to the allowed range),
    /// decomposing first.
    pub fn new(subtopics: u32) -> Self {
        Self {
            max_subtopics: subtopics.clamp(MIN_SUBTOPICS, MAX_SUBTOPICS),
            stage: Stage::Decompose,
            subtopics: Vec::new(),
            report: String::new(),
            fixes_applied: 0,
            partial: false,
        }
    }

    /// The most rounds this research may take: by the chosen number of subtopics until
    /// they are known, then by their number.
    pub fn bound(&self) -> u32 {
        let n = if self.subtopics.is_empty() {
            self.max_subtopics
        } else {
            u32::try_from(self.subtopics.len()).unwrap_or(self.max_subtopics)
        };
        max_rounds(n)
    }

    /// The context label of `stage` (`""`: the primary context).
    pub fn label(stage: Stage) -> String {
        match stage {
            Stage::Decompose => "decompose".into(),
            Stage::Research(n) => format!("subtopic:{}", n + 1),
            Stage::Synthesize => String::new(),
            Stage::Review => "review".into(),
        }
    }

    /// The heading the Steps view groups a stage's entries under.
    pub fn heading(&self, stage: Stage) -> String {
        match stage {
            Stage::Decompose => "Planning the subtopics".into(),
            Stage::Research(n) => {
                let title = self.subtopics.get(n).map_or("", |s| s.title.as_str());
                format!("Subtopic {} of {}: {title}", n + 1, self.subtopics.len())
            }
            Stage::Synthesize => "Writing the report".into(),
            Stage::Review => "Reviewing the report".into(),
        }
    }
}
