//! The native integration tests, in one binary: each file of this folder is a module (by
//! area below), so the crate is linked once, not once per file. Run one file's tests with
//! `cargo test --all-features --test native <module>::` (e.g. `prompts::`). Recorded
//! proptest cases are in `tests/proptest-regressions/<module>.txt` (where proptest looks for a
//! file of a crate whose root is `main.rs`).

// The agent loop and its phases.
mod actions;
mod agent_loop;
mod answer_links;
mod capabilities;
mod context;
mod context_too_long;
mod executor;
mod explain;
mod fence;
mod locate;
mod page_timeout;
mod page_tools;
mod passages;
mod phases;
mod prompt_cache;
mod prompt_costs;
mod prompts;
mod reasoning;
mod reflexion;
mod request_input;
mod research;
mod research_chaos;
mod research_props;
mod screenshot;
mod step_views;
mod summarize;
mod templates;
mod tool_schemas;
mod tools;

// Model and search wire formats.
mod anthropic_wire;
mod connection;
mod gemini_wire;
mod hostile_wire;
mod keys;
mod local_servers;
mod ollama_wire;
mod openai_props;
mod openai_wire;
mod screenshot_wire;
mod search;
mod search_check;
mod search_offer;
mod search_wire;
mod tokens;
mod wire_common;

// Persistence, the service and the protocol.
mod attention;
mod chaos;
mod conversations;
mod crash;
mod cycles;
mod doctor_texts;
mod event_names;
mod layers;
mod parsers_prop;
mod persistence;
mod protocol_gen;
mod read_pages;
mod service;
mod state_bounds;

// The crate's own libraries.
mod json;
mod names;
mod order;
mod text;
