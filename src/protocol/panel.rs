//! The requests of the in-page explanation panel (an extension page in a frame of the
//! tab's page, on the Port named [`super::PANEL_PORT_NAME`]): a snapshot and Stop of the
//! run it shows, and another selection action on that run's selection, in the panel's own
//! tab. What a request may ask
//! is decided by `service::panel`; this module only names the shapes.

use serde::Serialize;
use serde_json::Value;

use super::SessionKey;
use crate::state::RunStatus;
use crate::types::ErrorInfo;
use kljson::ToJson;

/// What the panel may ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PanelCommand {
    /// The run's view. Reply: [`PanelView`].
    Snapshot,
    /// Stop the run. Reply: [`super::reply::StopReply`].
    Stop,
    /// Apply a selection action to the run's selection (the worker keeps it): a new run of
    /// the tab, which the panel then shows. Reply: [`PanelView`] of the new run.
    RunAction {
        /// The action's id (as `run_action`'s).
        action: String,
        /// The browser's language, by name (as `run_action`'s, checked).
        language: Option<String>,
    },
}

impl PanelCommand {
    /// Every panel request's wire name (`"type"`), in the order of the variants.
    pub const NAMES: [&'static str; 3] = ["snapshot", "stop", "run_action"];
}

/// A panel request that passed the check: its id, its tab's session, the run and the
/// command.
#[derive(Debug, Clone, PartialEq)]
pub struct PanelRequest {
    /// Chosen by the sender, echoed in the reply.
    pub id: Value,
    /// The session of the sender's tab.
    pub session: SessionKey,
    /// The run that opened the panel (the `run` of the `explain` reply).
    pub run: u32,
    /// What is asked.
    pub command: PanelCommand,
}

/// `snapshot` (a panel request): the panel's run, and nothing else of the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct PanelView {
    /// The run.
    pub run: u32,
    /// Its status.
    pub status: RunStatus,
    /// The answer it settled on.
    pub answer: String,
    /// The answer streamed so far, while it runs.
    pub draft: String,
    /// The error it ended with.
    pub error: Option<ErrorInfo>,
    /// With `seq`, orders the view against the run's events (as [`super::SessionView`]).
    pub rev: u64,
    /// See `rev`.
    pub seq: u64,
    /// The actions the panel offers as buttons (those shown in the panel, Explain aside), in
    /// order.
    #[serde(default)]
    pub actions: Vec<PanelAction>,
}

/// An action button of the panel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct PanelAction {
    /// The action's id (what `run_action` sends).
    pub id: String,
    /// Its name (the button's).
    pub name: String,
}

impl PanelView {
    /// The panel's part of `view`, the session's view, whose run is the panel's.
    pub fn of(view: &super::SessionView) -> Self {
        Self {
            run: view.run,
            status: view.status,
            answer: view.answer.clone(),
            draft: view.draft.clone(),
            error: view.error.clone(),
            rev: view.rev,
            seq: view.seq,
            actions: Vec::new(),
        }
    }
}
