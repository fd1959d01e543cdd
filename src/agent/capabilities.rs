//! The registry of the agent's capabilities. Each one is a folder under `agent/step/`
//! holding its transitions (`mod.rs`), its prompt code (`prompt.rs`), its template
//! (`<name>.tpl`) and, where it keeps state across a save, its state type (`state.rs`,
//! compiled into the state layer as `state::<module>` because the session record holds it;
//! see `state/mod.rs`). Adding a capability adds a folder and a line here; its tests
//! (`tests/native/capabilities.rs`) then check that the folder holds what the line says
//! and that its template loads. The loop itself (Reason, Act, Observe, Synthesize) and its
//! shared prompt parts are in `agent::step` and `agent::prompts`.
//!
//! The phase a capability runs in is a variant of `state::Next` (search, summarize,
//! compact, reflect) or a tool call the loop makes (screenshot) or a run of bounded phases
//! (research); `agent::step::plan` dispatches on it, so a capability with a phase of its
//! own also adds that variant and its arm there.
//!
//! Explaining a selection is not a folder: it has no phase of its own. It is a run whose
//! first step is a prepared call of `explain_text_with_context` (`tools/explain.rs`, with
//! the other tools) and whose words are part of the loop's first message (`user.tpl`'s
//! `explain_*` sections, rendered by `agent::prompts`).

use crate::agent::prompts;
use crate::agent::step::{compact, reflect, research, screenshot, search, summarize};
use crate::template::BuiltinTemplate;

/// One capability: its name, its folder, its templates and its state module.
#[derive(Debug, Clone, Copy)]
pub struct Capability {
    /// The name (as the Steps view and the docs call it).
    pub name: &'static str,
    /// Its folder, relative to the crate.
    pub folder: &'static str,
    /// The templates its prompt code renders.
    pub templates: &'static [BuiltinTemplate],
    /// The module of `state` its state type is compiled as (its `state.rs`), if it keeps
    /// state of its own.
    pub state: Option<&'static str>,
}

/// Every capability.
pub const CAPABILITIES: [Capability; 6] = [
    Capability {
        name: "search",
        folder: "src/agent/step/search",
        templates: &[search::prompt::TEMPLATE],
        state: Some("search"),
    },
    Capability {
        name: "summarize",
        folder: "src/agent/step/summarize",
        templates: &[summarize::prompt::TEMPLATE],
        state: Some("summary"),
    },
    Capability {
        name: "screenshot",
        folder: "src/agent/step/screenshot",
        templates: &[screenshot::prompt::TEMPLATE],
        state: None,
    },
    Capability {
        name: "research",
        folder: "src/agent/step/research",
        templates: &[research::prompt::TEMPLATE],
        state: Some("research"),
    },
    Capability {
        name: "reflect",
        folder: "src/agent/step/reflect",
        templates: &[reflect::prompt::TEMPLATE],
        state: Some("memory"),
    },
    Capability {
        name: "compact",
        folder: "src/agent/step/compact",
        templates: &[compact::prompt::TEMPLATE],
        state: Some("compact"),
    },
];

/// Every built-in template with the folder it is in: the loop's own (`agent/prompts/`),
/// each capability's, the built-in tools' descriptions (`tools/tools.tpl`) and the text
/// that offers tools to a model without native tool calling (`llm/prompted_tools.tpl`),
/// and the built-in selection actions' (`actions/`).
pub fn templates() -> impl Iterator<Item = (&'static str, &'static BuiltinTemplate)> {
    const OTHERS: [(&str, BuiltinTemplate); 2] = [
        ("src/tools", crate::tools::descriptions::TEMPLATE),
        ("src/llm", crate::llm::prompted_tools::TEMPLATE),
    ];
    prompts::TEMPLATES
        .iter()
        .map(|t| ("src/agent/prompts", t))
        .chain(
            CAPABILITIES
                .iter()
                .flat_map(|c| c.templates.iter().map(move |t| (c.folder, t))),
        )
        .chain(OTHERS.iter().map(|(folder, t)| (*folder, t)))
        .chain(crate::actions::TEMPLATES.iter().map(|t| ("src/actions", t)))
}
