//! The agent: a bounded Reason -> Act -> Observe loop over the ports, with retries, a token
//! budget, stop, live events and a trajectory. Pure: it never touches the browser; time,
//! models, storage and the UI are all reached through [`crate::ports`].

pub mod cache;
pub mod capabilities;
pub mod citations;
pub mod context;
pub mod control;
pub mod engine;
pub mod executor;
pub mod fence;
pub mod grounding;
pub mod input;
pub mod links;
pub mod phase;
pub mod prompts;
pub mod signal;
pub mod step;

pub use crate::state::{config, trajectory};
pub use crate::types::events;

pub use engine::{Engine, StopSignal};
pub use input::{Inbox, InputMessage};
