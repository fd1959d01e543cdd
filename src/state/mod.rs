//! The persisted state of a session: one versioned record per session key, saved as a JSON
//! string in the state store after every phase, so a stopped service worker loses nothing.
//! Newer versions are refused rather than guessed at.

pub mod config;
mod history;
// Each capability's state type lives in its folder beside its transitions, prompt and
// template (agent/step/<capability>/state.rs), and is compiled here, in the state layer,
// because the session record below the agent holds it.
#[path = "../agent/step/compact/state.rs"]
pub mod compact;
#[path = "../agent/step/reflect/state.rs"]
pub mod memory;
pub mod migrate;
mod persist;
pub mod read_pages;
#[path = "../agent/step/research/state.rs"]
pub mod research;
mod run;
#[path = "../agent/step/search/state.rs"]
pub mod search;
pub mod sources;
#[path = "../agent/step/summarize/state.rs"]
pub mod summary;
pub mod trajectory;

pub use compact::{CompactState, Compaction};
pub use history::Turn;
pub use persist::*;
pub use run::{Next, PhaseOutcome, PhaseRun, RunStatus, StopReason, SynthesisReason, ToolOutcome};

use serde::Serialize;

use crate::types::{ToolCall, Usage, VecMap};
use config::RunConfig;
use kljson::{FromJson, ToJson};
use trajectory::{Entry, ErrorInfo, Item, Metrics};

pub use crate::types::PageInfo;

pub(crate) fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// Most answers to `request_input` a session keeps for the grounding.
pub const MAX_KEPT_ANSWERS: usize = 10;

/// Drives of one run in a row that may end without a completed transition (a worker that
/// crashed, or was stopped, before the run's next save) before the run is failed with
/// [`CRASHED_TWICE`] instead of being resumed once more: a state that makes the worker crash
/// is never driven in a loop.
pub const MAX_DRIVE_ATTEMPTS: u32 = 2;

/// The error of a run failed after [`MAX_DRIVE_ATTEMPTS`] drives that got nowhere.
pub const CRASHED_TWICE: &str = "KnowledgeLens crashed twice on this run, so it was stopped instead of being resumed again. Ask again to retry; if it happens again, export the session (Steps) and report it.";

/// The schema version written by this build.
pub const SCHEMA_VERSION: u32 = 5;

/// Storage key prefix of session records.
pub const SESSION_PREFIX: &str = "session:";

/// A question the model asked the user (`request_input`), waiting for the answer. Its
/// deadlines are absolute times, so a run resumed in a new worker waits exactly as long as
/// was left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct PendingInput {
    /// Names this question in acknowledgements and answers.
    pub request_id: String,
    /// The tool call that asked it (its result will be the answer).
    pub call: ToolCall,
    /// The question.
    pub question: String,
    /// When it was asked (ms).
    pub asked_at: u64,
    /// Until the UI acknowledges that it showed the question, the run times out at this
    /// time (`None`: never).
    pub ack_deadline: Option<u64>,
    /// When the UI acknowledged it (ms).
    pub acknowledged_at: Option<u64>,
    /// After acknowledgement, the run times out at this time (`None`: it waits as long as
    /// it takes).
    pub answer_deadline: Option<u64>,
}

impl PendingInput {
    /// The deadline that applies now.
    pub fn deadline(&self) -> Option<u64> {
        if self.acknowledged_at.is_some() {
            self.answer_deadline
        } else {
            self.ack_deadline
        }
    }
}

/// What the ask-the-user capability (`request_input`) keeps in the session record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, FromJson, ToJson)]
pub struct InputState {
    /// The question to the user the run is waiting on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingInput>,
    /// The user's answers in earlier runs of the session (newest last; the grounding's
    /// user preferences).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_answers: Vec<String>,
}

impl InputState {
    /// Whether there is nothing to keep (the record leaves the field out).
    pub fn is_empty(&self) -> bool {
        self.pending.is_none() && self.kept_answers.is_empty()
    }
}

/// What the bounded phases (`agent::phase`, research's stages) keep in the session record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, FromJson, ToJson)]
pub struct PhaseState {
    /// The bounded phase this run is, if it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<PhaseRun>,
    /// Conversation histories of the context labels (`""`: primary).
    #[serde(default, skip_serializing_if = "VecMap::is_empty")]
    pub contexts: VecMap<String, Vec<crate::types::ChatMessage>>,
    /// How many times this run started a context label afresh (`continue_context = false`):
    /// part of the label's prompt-cache key, so a reset context gets a key of its own.
    #[serde(default, skip_serializing_if = "VecMap::is_empty")]
    pub resets: VecMap<String, u32>,
}

impl PhaseState {
    /// Whether there is nothing to keep (the record leaves the field out).
    pub fn is_empty(&self) -> bool {
        self.run.is_none() && self.contexts.is_empty() && self.resets.is_empty()
    }
}

/// Everything about one session: the current (or last) run and earlier turns.
#[derive(Debug, Clone, PartialEq, Serialize, FromJson, ToJson)]
pub struct SessionState {
    /// Schema version.
    pub version: u32,
    /// Session key (`tab:<id>` or `popup`).
    pub session: String,
    /// Increases with every question asked in this session.
    pub run_id: u32,
    /// Status of the current run.
    pub status: RunStatus,
    /// What the run does next while running.
    pub next: Option<Next>,
    /// Attempts made of the phase in `next` (a redone phase counts).
    pub attempts: u32,
    /// The question.
    pub question: String,
    /// The page, if there is one.
    pub page: Option<PageInfo>,
    /// The address of the run's tab when its page could not be read (the browser's word;
    /// empty otherwise): a screenshot is taken only while the tab still shows it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub page_address: String,
    /// Notices shown with the run.
    pub notices: Vec<String>,
    /// The run's settings snapshot.
    pub config: RunConfig,
    /// Current step.
    pub step: u32,
    /// Tokens used by the run.
    pub usage: Usage,
    /// Model calls made by the run.
    pub model_calls: u32,
    /// Whether `budget_warning` fired.
    pub budget_warned: bool,
    /// The answer (final or partial).
    pub answer: String,
    /// Whether the answer is partial.
    pub partial: bool,
    /// The error the run ended with.
    pub error: Option<ErrorInfo>,
    /// The trajectory of the current run.
    pub trajectory: Vec<Entry>,
    /// Earlier questions and answers of this session.
    pub turns: Vec<Turn>,
    /// When the run started (ms).
    pub started_at: u64,
    /// When the record was last changed (ms).
    pub updated_at: u64,
    /// When the run ended (ms), if it did.
    pub ended_at: Option<u64>,
    /// The persisted revision: raised by every save, and once more when a run resumes in a
    /// new worker, so it only ever increases. Every event carries it.
    #[serde(default)]
    pub rev: u64,
    /// The run's event counter: the `seq` of the last event emitted (saved with the state).
    #[serde(default)]
    pub seq: u64,
    /// The streamed draft of the answer since the last `answer_reset` (live only: never
    /// saved; snapshots of a live run carry it).
    #[serde(skip)]
    pub draft: String,
    /// Tool calls of the current reply still to run, in order, after `next`'s.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queued_calls: Vec<ToolCall>,
    /// The research run this run is, if it is one (`agent::step::research::run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub research: Option<research::ResearchRun>,
    /// The sources the final answer cites, in the order it first cites them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<sources::Source>,
    /// The fence nonce of the session's page: page text reaches the model inside
    /// `<page-NONCE>` tags (`agent::fence`). Drawn when a run begins on another page than the
    /// session's last one (kept while the session stays on the same URL, so a second
    /// question's prompt starts with the first one's bytes) and kept for every request of
    /// the run, resumes included (a record without one gets one when its run resumes).
    #[serde(default)]
    pub nonce: String,
    /// The selection this run explains (`None`: a question).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<crate::types::Selection>,
    /// The selection action this run applies to `selection` (`None`: an explanation, or a
    /// question): its request is rendered from this record, so a resumed run sends the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<crate::actions::ActionRun>,
    /// Drives of the run begun since its last completed transition (see
    /// [`MAX_DRIVE_ATTEMPTS`]): raised and saved before a worker drives the run, back to 0
    /// with every save after a transition. A run found at the limit crashed that many times
    /// without getting anywhere, and is failed instead of being resumed again.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub drive_attempts: u32,
    /// The ask-the-user capability (`request_input`): the question waiting for an answer
    /// and the answers of earlier runs.
    #[serde(default, skip_serializing_if = "InputState::is_empty")]
    pub input: InputState,
    /// The compact capability: the compacted history and the window's measurements.
    #[serde(default, skip_serializing_if = "CompactState::is_empty")]
    pub compact: CompactState,
    /// Bounded phases: the phase this run is, and the context labels' histories.
    #[serde(default, skip_serializing_if = "PhaseState::is_empty")]
    pub phases: PhaseState,
    /// The reflect capability: reflections on failed actions and error counts of this
    /// session's runs.
    #[serde(default, skip_serializing_if = "memory::EpisodicMemory::is_empty")]
    pub memory: memory::EpisodicMemory,
    /// Pages the user added to this conversation as sources beside its own page
    /// (questions across pages, [`read_pages`]), in the order added; a removed one stays,
    /// marked, so its passage numbers are never given again and earlier answers' citations
    /// of it still name it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<read_pages::AddedPage>,
    /// The added pages' texts, one per entry of `added` (a removed or no longer kept one
    /// with no text): loaded with the session, never saved with it.
    #[serde(skip)]
    pub added_texts: std::rc::Rc<Vec<crate::page::across::AddedText>>,
    /// What of this session is in the store.
    #[serde(skip)]
    pub saved: Saved,
}

impl SessionState {
    /// An idle session.
    pub fn new(session: &str, now_ms: u64) -> Self {
        Self {
            version: SCHEMA_VERSION,
            session: session.to_string(),
            run_id: 0,
            status: RunStatus::Idle,
            next: None,
            attempts: 0,
            question: String::new(),
            page: None,
            page_address: String::new(),
            notices: Vec::new(),
            config: RunConfig::default(),
            step: 0,
            usage: Usage::default(),
            model_calls: 0,
            budget_warned: false,
            answer: String::new(),
            partial: false,
            error: None,
            trajectory: Vec::new(),
            turns: Vec::new(),
            started_at: now_ms,
            updated_at: now_ms,
            ended_at: None,
            rev: 0,
            seq: 0,
            draft: String::new(),
            queued_calls: Vec::new(),
            research: None,
            sources: Vec::new(),
            nonce: String::new(),
            selection: None,
            action: None,
            drive_attempts: 0,
            input: InputState::default(),
            compact: CompactState::default(),
            phases: PhaseState::default(),
            memory: memory::EpisodicMemory::default(),
            added: Vec::new(),
            added_texts: std::rc::Rc::default(),
            saved: Saved::default(),
        }
    }

    /// Starts a new run in this session; the previous run (if any) becomes a turn.
    pub fn begin_run(
        &mut self,
        question: &str,
        page: Option<PageInfo>,
        config: RunConfig,
        now_ms: u64,
    ) {
        self.close_turn(page.as_ref());
        let turns = std::mem::take(&mut self.turns);
        let mut kept_answers = std::mem::take(&mut self.input.kept_answers);
        kept_answers.extend(self.trajectory.iter().filter_map(|e| match &e.item {
            Item::ToolResult {
                name, ok, content, ..
            } if *ok && name == crate::tools::REQUEST_INPUT => Some(content.clone()),
            _ => None,
        }));
        let excess = kept_answers.len().saturating_sub(MAX_KEPT_ANSWERS);
        kept_answers.drain(..excess);
        *self = Self {
            run_id: self.run_id + 1,
            turns,
            input: InputState {
                pending: None,
                kept_answers,
            },
            compact: self.compact.for_next_run(),
            phases: PhaseState {
                contexts: std::mem::take(&mut self.phases.contexts),
                ..PhaseState::default()
            },
            saved: self.saved,
            rev: self.rev,
            seq: self.seq,
            memory: std::mem::take(&mut self.memory).for_next_run(),
            // The conversation's added pages stay with it, question after question.
            added: std::mem::take(&mut self.added),
            added_texts: std::mem::take(&mut self.added_texts),
            ..Self::new(&self.session, now_ms)
        };
        self.status = RunStatus::Running;
        self.next = Some(Next::Reason);
        self.question = question.to_string();
        self.page = page;
        self.config = config.sanitized();
    }

    /// Starts a run that explains `selection` (its text is the run's question); the
    /// previous run (if any) becomes a turn.
    pub fn begin_explain(
        &mut self,
        selection: crate::types::Selection,
        page: Option<PageInfo>,
        config: RunConfig,
        now_ms: u64,
    ) {
        self.begin_run(&selection.text, page, config, now_ms);
        self.selection = Some(selection);
        let call = crate::tools::explain::prepared_call();
        // Derived: small models copied it into their explanations when shown as their words.
        let thought = Item::derived_thought(crate::tools::explain::PREPARED_THOUGHT);
        self.record(now_ms, thought);
        self.record(now_ms, Item::ToolCall { call: call.clone() });
        self.next = Some(Next::Act {
            call,
            started: false,
        });
    }

    /// Starts a run that applies `action` (not Explain) to `selection` (its text is the
    /// run's question): no prepared call, and no tools; the first request is the action's.
    pub fn begin_action(
        &mut self,
        selection: crate::types::Selection,
        action: crate::actions::ActionRun,
        page: Option<PageInfo>,
        config: RunConfig,
        now_ms: u64,
    ) {
        self.begin_run(&selection.text, page, config, now_ms);
        self.selection = Some(selection);
        self.action = Some(action);
    }

    /// Whether the run explains its selection (an explanation, not another action).
    pub fn explains(&self) -> bool {
        self.selection.is_some() && self.action.is_none()
    }

    /// Whether the run has done nothing yet (no step, no model call, no tool result): a
    /// run driven from here starts (`run_started`) rather than resumes. An explanation's
    /// prepared call is recorded before it runs, so a recorded call alone is not a start.
    pub fn is_fresh(&self) -> bool {
        self.step == 0
            && self.model_calls == 0
            && !self
                .trajectory
                .iter()
                .any(|e| matches!(e.item, Item::ToolResult { .. }))
    }

    /// Appends a trajectory entry at the current step.
    pub fn record(&mut self, at_ms: u64, item: Item) {
        self.trajectory.push(Entry {
            step: self.step,
            at_ms,
            item,
        });
    }

    /// The tokens used against the budget, as events and views carry them.
    pub fn usage_view(&self) -> crate::types::events::UsageView {
        crate::types::events::UsageView {
            input: self.usage.input,
            output: self.usage.output,
            budget: self.config.token_budget,
            cached_input: self.usage.cached_input,
        }
    }

    /// The trajectory as the UI lists it.
    pub fn steps(&self) -> Vec<crate::types::events::StepView> {
        self.trajectory
            .iter()
            .enumerate()
            .map(|(i, e)| e.view(i))
            .collect()
    }

    /// The share (0..1) of the model's context window the last model call's prompt used;
    /// `None` before the first call or without a known window.
    pub fn context_share(&self) -> Option<f64> {
        let window = self.config.context_window;
        (window > 0 && self.compact.last_prompt_tokens > 0)
            .then(|| (self.compact.last_prompt_tokens as f64 / f64::from(window)).min(1.0))
    }

    /// The step bound the UI shows: the research bound in a research run, else the run's
    /// "Max steps".
    pub fn step_bound(&self) -> u32 {
        self.research
            .as_ref()
            .map_or(self.config.max_steps, research::ResearchRun::bound)
    }

    /// Total tokens used.
    pub fn tokens_used(&self) -> u64 {
        self.usage.input + self.usage.output
    }

    /// Metrics of the run, at `now_ms` if it has not ended.
    pub fn metrics(&self, now_ms: u64) -> Metrics {
        Metrics {
            steps: self.step,
            model_calls: self.model_calls,
            input_tokens: self.usage.input,
            output_tokens: self.usage.output,
            duration_ms: self
                .ended_at
                .unwrap_or(now_ms)
                .saturating_sub(self.started_at),
            errors: self
                .trajectory
                .iter()
                .filter(|e| matches!(e.item, Item::Error { .. }))
                .count() as u32,
        }
    }

    /// The storage key of this session.
    pub fn key(&self) -> String {
        session_key(&self.session)
    }
}
