//! The session as the popup renders it ([`SessionView`]): built from a persisted or live
//! [`SessionState`], stamped with the `(rev, seq)` it reflects so the UI can order it against
//! the events it receives.

use serde::Serialize;

use crate::state::config::PriceSource;
use crate::state::search::SearchStage;
use crate::state::sources::Source;
use crate::state::trajectory::ErrorInfo;
use crate::state::{Next, RunStatus, SessionState, Turn};
pub use crate::types::events::StepView;
use crate::types::events::{Finite, UsageView};
use kljson::{FromJson, ToJson};

/// The page as the UI sees it (without its text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct PageView {
    /// Title.
    pub title: String,
    /// URL.
    pub url: String,
    /// Whether its text was captured.
    pub has_text: bool,
}

/// What the run's tokens cost so far: an estimate from the prices it was started with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct CostView {
    /// US dollars.
    pub usd: Finite,
    /// `table` (the built-in dated prices) or `settings` (the user's prices).
    pub source: PriceSource,
}

/// What the popup renders for a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct SessionView {
    /// Session key.
    pub session: String,
    /// The session's current (or last) run.
    pub run: u32,
    /// Run status.
    pub status: RunStatus,
    /// Current phase while running.
    pub phase: Option<String>,
    /// Tool in use.
    pub tool: Option<String>,
    /// Current step.
    pub step: u32,
    /// Step bound.
    pub max_steps: u32,
    /// Tokens.
    pub usage: UsageView,
    /// Whether the budget warning fired.
    pub budget_warned: bool,
    /// The question (for an explanation: the selected text).
    pub question: String,
    /// Whether the run explains a selection.
    #[serde(default)]
    pub explain: bool,
    /// The answer (final or partial) the run has settled on; see `draft` for streamed text.
    pub answer: String,
    /// Whether it is partial.
    pub partial: bool,
    /// The error the run ended with.
    pub error: Option<ErrorInfo>,
    /// Notices.
    pub notices: Vec<String>,
    /// The page.
    pub page: Option<PageView>,
    /// Earlier turns.
    pub turns: Vec<Turn>,
    /// Trajectory entries recorded.
    pub trajectory_len: usize,
    /// The trajectory, summarized for display (long texts cut).
    pub steps: Vec<StepView>,
    /// The sources the answer cites, in the order it first cites them.
    #[serde(default)]
    pub sources: Vec<Source>,
    /// The pages the user added to this conversation as sources beside its page
    /// ("Also using: …"), in the order added.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<crate::state::read_pages::AddedPage>,
    /// What the run's tokens cost (`None`: no price known for the model).
    #[serde(default)]
    pub cost: Option<CostView>,
    /// The share (0..1) of the model's context window the last request used.
    #[serde(default)]
    pub context_share: Option<Finite>,
    /// The question the run is waiting for the user to answer.
    #[serde(default)]
    pub pending_input: Option<PendingInputView>,
    /// Last change (ms).
    pub updated_at: u64,
    /// No model is set up yet: the popup shows its setup card.
    #[serde(default)]
    pub setup_needed: bool,
    /// The saved settings cannot be used (unreadable, invalid, or from a newer version), so
    /// runs use the defaults: what happened and what to do, for the popup to show with a way
    /// to Options. `None` when they are fine (or none are saved).
    #[serde(default)]
    pub settings_notice: Option<String>,
    /// Set on the reply to `ask` while web search is off and its offer was never answered:
    /// the popup offers to turn it on (`search_offer`).
    #[serde(default)]
    pub search_offer: bool,
    /// The session's persisted revision this view reflects.
    #[serde(default)]
    pub rev: u64,
    /// The last event this view reflects: with `rev`, it orders the view against events
    /// (the UI applies only events newer than `(rev, seq)`).
    #[serde(default)]
    pub seq: u64,
    /// The answer streamed so far (since the last `answer_reset`) while running; empty when
    /// the view comes from storage (the draft is never saved).
    #[serde(default)]
    pub draft: String,
    /// An archived conversation, shown read-only (`open_conversation`); false for a live
    /// session.
    #[serde(default)]
    pub archived: bool,
}

/// A question from the run to the user, as the popup shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct PendingInputView {
    /// Send it back with the acknowledgement and the answer.
    pub request_id: String,
    /// The question.
    pub question: String,
    /// Whether a UI has acknowledged showing it.
    pub acknowledged: bool,
}

/// The phase a snapshot shows while the engine searches: the name of the event that
/// stage sends.
fn search_phase(stage: &SearchStage) -> &'static str {
    match stage {
        SearchStage::Search { .. } => "searching",
        SearchStage::Grade { .. } => "grading",
        SearchStage::Rewrite { .. } => "rewriting",
    }
}

impl SessionView {
    /// The view of a state.
    pub fn of(state: &SessionState) -> Self {
        let running = state.status == RunStatus::Running;
        let (phase, tool) = match (&state.next, running) {
            (Some(Next::Reason), true) => (Some("thinking"), None),
            (Some(Next::Act { call, .. }), true) => (Some("executing"), Some(call.name.clone())),
            (Some(Next::Observe), true) => (Some("analyzing"), None),
            (Some(Next::Synthesize { .. }), true) => (Some("synthesizing"), None),
            (Some(Next::AwaitInput), true) => (Some("awaiting_input"), None),
            (Some(Next::Compact { .. }), true) => (Some("compacting"), None),
            (Some(Next::Reflect { .. }), true) => (Some("reflecting"), None),
            (Some(Next::Search(run)), true) => (Some(search_phase(&run.stage)), None),
            (Some(Next::Summarize(_)), true) => (Some("summarizing"), None),
            _ => (None, None),
        };
        Self {
            session: state.session.clone(),
            run: state.run_id,
            status: state.status,
            phase: phase.map(str::to_string),
            tool,
            step: state.step,
            max_steps: state.step_bound(),
            usage: state.usage_view(),
            budget_warned: state.budget_warned,
            question: state.question.clone(),
            explain: state.selection.is_some(),
            answer: state.answer.clone(),
            partial: state.partial,
            error: state.error.clone(),
            notices: state.notices.clone(),
            page: state.page.as_ref().map(|p| PageView {
                title: p.title.clone(),
                url: p.url.clone(),
                has_text: !p.text.is_empty(),
            }),
            turns: state.turns.clone(),
            trajectory_len: state.trajectory.len(),
            steps: state.steps(),
            sources: state.sources.clone(),
            added: state.added_pages().cloned().collect(),
            cost: state.config.prices.and_then(|p| {
                Some(CostView {
                    usd: Finite::new(p.cost(&state.usage))?,
                    source: p.source,
                })
            }),
            context_share: state.context_share().and_then(Finite::new),
            pending_input: state.input.pending.as_ref().filter(|_| running).map(|p| {
                PendingInputView {
                    request_id: p.request_id.clone(),
                    question: p.question.clone(),
                    acknowledged: p.acknowledged_at.is_some(),
                }
            }),
            updated_at: state.updated_at,
            setup_needed: false,
            settings_notice: None,
            search_offer: false,
            rev: state.rev,
            seq: state.seq,
            draft: if running {
                state.draft.clone()
            } else {
                String::new()
            },
            archived: false,
        }
    }
}
