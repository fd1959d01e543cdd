//! Research mode's prompts (`agent::step::research::run`): every stage opens its context with the same
//! system message and page block as any run (so the prefix is the same in every context
//! label, and a provider's prompt cache can reuse it), then the stage's instruction from
//! `research.tpl`. Subtopics, findings and reports are model output made from page
//! and web text: they are quoted inside the run's fence. Pure.

use crate::agent::context::Fit;
use crate::agent::fence::Fence;
use crate::agent::prompts::{builtin, page_block, strings, system};
use crate::llm::JsonSchemaFormat;
use crate::state::research::{ResearchRun, Stage};
use crate::state::SessionState;
use crate::template::{BuiltinTemplate, Loaded, Template, TemplateError};

/// Longest subtopic kept (characters).
pub const MAX_SUBTOPIC_CHARS: usize = 160;
/// Longest findings kept per subtopic (characters).
pub const MAX_FINDINGS_CHARS: usize = 4_000;

/// The template file, and the sections rendered from it.
pub const TEMPLATE: BuiltinTemplate = BuiltinTemplate {
    file: "research.tpl",
    text: include_str!("research.tpl"),
    sections: &["decompose", "subtopic", "fallback", "synthesize", "review"],
};

/// The research template, loaded and validated once.
fn template() -> Result<&'static Template, TemplateError> {
    static LOADED: Loaded = Loaded::new();
    TEMPLATE.loaded(&LOADED)
}

/// The system message of every research stage: the run's own (role, fence, reading level,
/// web search), the same in every context.
pub fn research_system(state: &SessionState) -> Result<String, TemplateError> {
    system(state, builtin()?)
}

/// The findings of every subtopic, one headed block each, inside the fence.
fn findings(fence: Fence<'_>, run: &ResearchRun) -> String {
    let blocks: Vec<String> = run
        .subtopics
        .iter()
        .map(|s| {
            let found = if s.findings.trim().is_empty() {
                "(nothing found)"
            } else {
                s.findings.trim()
            };
            format!("## {}\n{found}", s.title)
        })
        .collect();
    fence.wrap(&blocks.join("\n\n"))
}

/// The user message that opens `stage`'s context: the page block, then the stage's
/// instruction. `searchable`: whether the subtopic stage has a tool to use.
pub fn opening(
    state: &SessionState,
    run: &ResearchRun,
    stage: Stage,
    searchable: bool,
) -> Result<String, TemplateError> {
    let template = template()?;
    let fence = Fence::new(&state.nonce);
    let count = run.max_subtopics.to_string();
    let instruction = match stage {
        Stage::Decompose => template.render(
            &strings(&[("question", &state.question), ("count", &count)]),
            &["decompose"],
        )?,
        Stage::Research(n) => {
            let subtopic = run.subtopics.get(n).map_or("", |s| s.title.as_str());
            let others: Vec<&str> = run
                .subtopics
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != n)
                .map(|(_, s)| s.title.as_str())
                .collect();
            let others = if others.is_empty() {
                "(none)".to_string()
            } else {
                fence.wrap(&others.join("; "))
            };
            template.render(
                &strings(&[
                    ("question", &state.question),
                    ("subtopic", &fence.wrap(subtopic)),
                    ("index", &(n + 1).to_string()),
                    ("of", &run.subtopics.len().to_string()),
                    ("others", &others),
                ]),
                &[if searchable { "subtopic" } else { "fallback" }],
            )?
        }
        Stage::Synthesize => template.render(
            &strings(&[
                ("question", &state.question),
                ("findings", &findings(fence, run)),
            ]),
            &["synthesize"],
        )?,
        Stage::Review => template.render(
            &strings(&[
                ("question", &state.question),
                ("findings", &findings(fence, run)),
                ("report", &fence.wrap(&run.report)),
            ]),
            &["review"],
        )?,
    };
    let page = page_block(state, builtin()?, &Fit::NONE)?;
    Ok(format!("{page}\n\n{instruction}"))
}

/// The decompose stage's output schema (a constant parsed when used: `json!` would add
/// ~6 KB of code to the wasm; `tests/native/research.rs` checks it parses and bounds the list).
const SUBTOPICS_SCHEMA: &str = r#"{"type": "object", "properties": {"subtopics": {"type": "array", "items": {"type": "string", "maxLength": 160}, "maxItems": 6}}, "required": ["subtopics"], "additionalProperties": false}"#;

/// The review stage's output schema.
const REVIEW_SCHEMA: &str = r#"{"type": "object", "properties": {"fixes": {"type": "array", "items": {"type": "object", "properties": {"find": {"type": "string"}, "replace": {"type": "string"}}, "required": ["find", "replace"], "additionalProperties": false}}}, "required": ["fixes"], "additionalProperties": false}"#;

/// The constrained output of `stage`, if it has one.
pub fn format(stage: Stage) -> Option<JsonSchemaFormat> {
    let (name, schema) = match stage {
        Stage::Decompose => ("subtopics", SUBTOPICS_SCHEMA),
        Stage::Review => ("review", REVIEW_SCHEMA),
        Stage::Research(_) | Stage::Synthesize => return None,
    };
    Some(JsonSchemaFormat {
        name: name.into(),
        schema: kljson::parse_value(schema).ok()?,
    })
}
