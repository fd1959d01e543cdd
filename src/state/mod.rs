//! The persisted state of a session: one versioned record per session key, saved as a JSON
//! string in the state store after every phase, so a stopped service worker loses nothing.
//! Newer versions are refused rather than guessed at.

use serde::{Deserialize, Serialize};

use crate::agent::config::RunConfig;
use crate::agent::trajectory::{Entry, ErrorInfo, Item, Metrics};
use crate::llm::{ToolCall, Usage};
use crate::ports::{StateStore, StoreError};

/// The schema version written by this build.
pub const SCHEMA_VERSION: u32 = 1;

/// Storage key prefix of session records.
pub const SESSION_PREFIX: &str = "session:";

/// Whether a run is going on, and how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// No run yet.
    #[default]
    Idle,
    /// A run is in progress (or was interrupted and will resume).
    Running,
    /// Ended with an answer (maybe partial).
    Completed,
    /// Stopped by the user.
    Stopped,
    /// Ended with an error.
    Failed,
}

/// Why the run synthesizes an answer instead of taking another step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SynthesisReason {
    /// The Observe phase said stop without giving the answer.
    Ready,
    /// `max_steps` was reached.
    StepLimit,
    /// The user pressed Stop.
    Stopped,
}

/// The phase the run does next (persisted: a resumed run starts here).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Next {
    /// Begin a step: call the model with the tools.
    Reason,
    /// Run the selected tool.
    Act {
        /// The call.
        call: ToolCall,
    },
    /// Judge the last tool result.
    Observe,
    /// Write the answer from what the run has.
    Synthesize {
        /// Why.
        why: SynthesisReason,
    },
}

/// The page a question is about, captured when it was asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageInfo {
    /// Title.
    pub title: String,
    /// URL.
    pub url: String,
    /// Readable text (empty when the page could not be read).
    pub text: String,
}

/// A finished question of this session, kept as conversation history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// The question.
    pub question: String,
    /// The answer it got (maybe partial or empty).
    pub answer: String,
    /// How it ended.
    pub status: RunStatus,
}

/// Everything about one session: the current (or last) run and earlier turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
        if self.run_id > 0 && !self.question.is_empty() {
            self.turns.push(Turn {
                question: self.question.clone(),
                answer: self.answer.clone(),
                status: self.status,
            });
        }
        let turns = std::mem::take(&mut self.turns);
        *self = Self {
            run_id: self.run_id + 1,
            turns,
            ..Self::new(&self.session, now_ms)
        };
        self.status = RunStatus::Running;
        self.next = Some(Next::Reason);
        self.question = question.to_string();
        self.page = page;
        self.config = config.sanitized();
    }

    /// Appends a trajectory entry at the current step.
    pub fn record(&mut self, at_ms: u64, item: Item) {
        self.trajectory.push(Entry {
            step: self.step,
            at_ms,
            item,
        });
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

/// The storage key of session `session`.
pub fn session_key(session: &str) -> String {
    format!("{SESSION_PREFIX}{session}")
}

/// Why a stored state could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Not valid JSON, or not a valid state.
    #[error("the saved session is corrupted ({0}); a fresh session was started")]
    Corrupted(String),
    /// Written by a newer version of KnowledgeLens.
    #[error("the saved session was written by a newer version of KnowledgeLens (schema {0}); a fresh session was started")]
    NewerVersion(u32),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Decodes a stored state. Never panics, whatever the input.
pub fn decode(text: &str) -> Result<SessionState, StateError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| StateError::Corrupted(e.to_string()))?;
    let version = value
        .get("version")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| StateError::Corrupted("no version".into()))?;
    if version > u64::from(SCHEMA_VERSION) {
        return Err(StateError::NewerVersion(
            version.min(u64::from(u32::MAX)) as u32
        ));
    }
    serde_json::from_value(value).map_err(|e| StateError::Corrupted(e.to_string()))
}

/// Encodes a state for storage.
pub fn encode(state: &SessionState) -> String {
    // Serializing plain data structures to a String cannot fail.
    serde_json::to_string(state).unwrap_or_default()
}

/// Loads the state of `session`: `Ok(None)` when there is none.
pub async fn load(
    store: &dyn StateStore,
    session: &str,
) -> Result<Option<SessionState>, StateError> {
    match store.get(&session_key(session)).await? {
        None => Ok(None),
        Some(text) => decode(&text).map(Some),
    }
}

/// Saves a state.
pub async fn save(store: &dyn StateStore, state: &SessionState) -> Result<(), StoreError> {
    store.set(vec![(state.key(), encode(state))]).await
}
