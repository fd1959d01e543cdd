//! The requests of the in-page explanation panel (a content script, on the Port named
//! [`super::PANEL_PORT_NAME`]): only a snapshot, Stop and a follow-up, each about the
//! panel's own tab. What a request may ask is decided by `service::panel`; this module only
//! names the shapes.

use serde::Serialize;
use serde_json::Value;

use super::SessionKey;
use crate::types::json::ToJson;

/// What the panel may ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PanelCommand {
    /// The session's view. Reply: [`super::SessionView`].
    Snapshot,
    /// Stop the session's run. Reply: [`super::reply::StopReply`].
    Stop,
    /// Open the popup on the session (to ask a follow-up). Reply: [`FollowUpReply`].
    FollowUp,
}

impl PanelCommand {
    /// Every panel request's wire name (`"type"`), in the order of the variants.
    pub const NAMES: [&'static str; 3] = ["snapshot", "stop", "follow_up"];

    /// The command named `name`, if the panel may send it.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "snapshot" => Some(Self::Snapshot),
            "stop" => Some(Self::Stop),
            "follow_up" => Some(Self::FollowUp),
            _ => None,
        }
    }
}

/// A panel request that passed the check: its id, its tab's session and the command.
#[derive(Debug, Clone, PartialEq)]
pub struct PanelRequest {
    /// Chosen by the sender, echoed in the reply.
    pub id: Value,
    /// The session of the sender's tab.
    pub session: SessionKey,
    /// What is asked.
    pub command: PanelCommand,
}

/// `follow_up`: how the conversation was brought up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
pub struct FollowUpReply {
    /// `"popup"`, `"window"` (the popup page in a window of its own) or `"side_panel"`.
    pub opened: String,
}
