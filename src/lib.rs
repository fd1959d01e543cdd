//! # KnowledgeLens
//!
//! The brain of a reading agent for the browser. A user selects text or asks a question
//! about the page they are reading; a bounded ReAct agent (Reason -> Act -> Observe) answers
//! with the page as context, streaming its progress to the popup and saving its state after
//! every phase so it survives the service worker being stopped.
//!
//! The crate is a pure, deterministic core plus one browser layer:
//! - [`agent`], [`llm`], [`search`], [`tools`], [`state`], [`settings`], [`protocol`], [`service`]:
//!   no JS types; they reach the world only through the traits in [`ports`].
//! - `web` (wasm32 only): the single place that touches wasm-bindgen, web-sys and js-sys.
//! - `testing` (feature `testing`, which `bench` enables): the in-memory doubles the tests
//!   and benchmarks drive the core with; never in the shipped build.
//!
//! ```
//! use std::rc::Rc;
//! use knowledgelens::agent::{Engine, StopSignal};
//! use knowledgelens::agent::config::RunConfig;
//! use knowledgelens::state::{RunStatus, SessionState};
//! use knowledgelens::testing::{ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm};
//! use knowledgelens::tools::ToolBox;
//!
//! let llm = ScriptedLlm::new(vec![Reply::text("Photosynthesis turns light into sugar.")]);
//! let (clock, store, sink, tools) = (ManualClock::new(0), MemoryStore::new(), RecordingSink::default(), ToolBox::builtin());
//! let engine = Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new());
//! let mut state = SessionState::new("popup", 0);
//! state.begin_run("What is photosynthesis?", None, RunConfig::default(), 0);
//! futures::executor::block_on(engine.drive(&mut state));
//! assert_eq!(state.status, RunStatus::Completed);
//! assert_eq!(state.answer, "Photosynthesis turns light into sugar.");
//! ```
#![deny(missing_docs)]

pub mod actions;
pub mod agent;
#[cfg(feature = "bench")]
pub mod bench;
pub mod llm;
pub mod page;
pub mod ports;
pub mod protocol;
pub mod search;
pub mod service;
pub mod settings;
pub mod state;
pub mod template;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod tools;
pub mod types;
pub mod url;

#[cfg(target_arch = "wasm32")]
pub mod web;
