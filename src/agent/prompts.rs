//! The loop's prompts, derived from the session state (the trajectory is the memory, so a
//! resumed run rebuilds exactly the prompt it had). Their text lives in the built-in
//! templates beside it in `src/agent/prompts/` (see [`crate::template`]; each capability's
//! prompts are in its folder, [`crate::agent::capabilities`]); this module picks
//! their sections and fills in the values. Page text is untrusted data: it never goes into
//! the system message; the page block (title, URL, passages) is the first user message,
//! and it, an explained selection and every page-tool result are quoted inside the run's
//! fence ([`crate::agent::fence`]), which the system message names and calls data, never
//! instructions. Placeholders in page text are never expanded. Pure: no browser access.

use std::sync::OnceLock;

use serde_json::Value;

use crate::agent::context::{self, Fit};
use crate::agent::control;
use crate::agent::fence::Fence;
use crate::llm::{ChatMessage, ChatRequest, JsonSchemaFormat, Role, ToolSpec};
use crate::state::config::ReadingLevel;
use crate::state::memory::Reflection;
use crate::state::trajectory::Item;
use crate::state::{SessionState, SynthesisReason};
use crate::template::{BuiltinTemplate, Context, Template, TemplateError};
use crate::tools::explain::{cut_instruction, EXPLAIN_TEXT_WITH_CONTEXT};
use crate::tools::PAGE_DATA_TOOLS;
pub(crate) use grounding::grounding_with;
pub use grounding::{grounding_text, notes_text};
use grounding::{notes_with, question_line};
pub(crate) use page::page_block;
use page::{excerpt, page_cut, page_extra, question_passages, shows_whole};

/// The loop's own templates (beside this file, in `prompts/`); each capability's are in its
/// folder under `agent/step/`.
pub const TEMPLATES: [BuiltinTemplate; 7] = [
    BuiltinTemplate {
        file: "system.tpl",
        text: include_str!("prompts/system.tpl"),
        sections: &[
            "role",
            "abstain",
            "reading_simple",
            "reading_expert",
            "web_search",
        ],
    },
    BuiltinTemplate {
        file: "user.tpl",
        text: include_str!("prompts/user.tpl"),
        sections: &[
            "page",
            "page_cut",
            "page_extra",
            "page_unreadable",
            "no_page",
            "explain_request",
            "explain_close",
            "explained_selection",
            "action_selection",
            "action_cut",
        ],
    },
    BuiltinTemplate {
        file: "reason.tpl",
        text: include_str!("prompts/reason.tpl"),
        sections: &["observation"],
    },
    BuiltinTemplate {
        file: "observe.tpl",
        text: include_str!("prompts/observe.tpl"),
        sections: &["instruction"],
    },
    BuiltinTemplate {
        file: "synthesis.tpl",
        text: include_str!("prompts/synthesis.tpl"),
        sections: &[
            "ready",
            "step_limit",
            "stopped",
            "repeating",
            "abstain",
            "question",
        ],
    },
    BuiltinTemplate {
        file: "note.tpl",
        text: include_str!("prompts/note.tpl"),
        sections: &["note", "alternative"],
    },
    BuiltinTemplate {
        file: "context.tpl",
        text: include_str!("prompts/context.tpl"),
        sections: &[
            "grounding",
            "completed",
            "decisions",
            "preferences",
            "notes",
            "notes_completed",
            "notes_decisions",
            "notes_answers",
            "summary",
        ],
    },
];

/// The loaded built-in templates.
#[derive(Debug)]
pub(crate) struct Builtin {
    pub(crate) system: Template,
    pub(crate) user: Template,
    pub(crate) reason: Template,
    pub(crate) observe: Template,
    pub(crate) synthesis: Template,
    pub(crate) note: Template,
    pub(crate) context: Template,
}

/// The loop's templates, loaded and validated once. An error here is a bug in a template
/// file (the tests load every one), and ends the run with that error instead of a panic.
pub(crate) fn builtin() -> Result<&'static Builtin, TemplateError> {
    static BUILTIN_TEMPLATES: OnceLock<Result<Builtin, TemplateError>> = OnceLock::new();
    BUILTIN_TEMPLATES
        .get_or_init(|| {
            Ok(Builtin {
                system: TEMPLATES[0].load()?,
                user: TEMPLATES[1].load()?,
                reason: TEMPLATES[2].load()?,
                observe: TEMPLATES[3].load()?,
                synthesis: TEMPLATES[4].load()?,
                note: TEMPLATES[5].load()?,
                context: TEMPLATES[6].load()?,
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A context of string values (inserted one by one: collecting would sort, and pull a
/// sort into the wasm for each call site).
pub(crate) fn strings(pairs: &[(&str, &str)]) -> Context {
    let mut context = Context::new();
    for (name, value) in pairs {
        context.insert((*name).to_string(), Value::String((*value).to_string()));
    }
    context
}

/// The user message a reflection adds after the failed result (`Item::Reflection`, the
/// reflect capability's outcome, `agent::step::reflect`): the analysis and the fix, and with
/// `alternative` the request for another approach.
pub(crate) fn note(
    templates: &Builtin,
    reflection: &Reflection,
    alternative: bool,
) -> Result<String, TemplateError> {
    let context = strings(&[
        ("tool", &reflection.tool),
        ("error_type", &reflection.error_type),
        ("analysis", &reflection.analysis),
        ("suggested_fix", &reflection.suggested_fix),
    ]);
    let sections: &[&str] = if alternative {
        &["note", "alternative"]
    } else {
        &["note"]
    };
    templates.note.render(&context, sections)
}

/// What the prompt asks for when the page does not hold the answer: an answer of exactly
/// this sentence (the system text names it for a page shown whole, the Observe request
/// for every page; the benchmark counts it).
pub const ABSTAIN: &str = "The page does not say.";

/// Whether the request `fit` shapes shows the state's whole page (so the tools that read
/// more of it have nothing to add).
pub fn shows_page_whole(state: &SessionState, fit: &Fit) -> bool {
    excerpt(state, fit).is_some_and(|e| shows_whole(state, &e))
}

/// The system prompt: the role (naming the fence), when to call the page tools beside a
/// cut page, what to answer when the page does not say, the reading level, and web search when it is on. No page text, and nothing that
/// changes from one question to the next on the same page, so a second question's request
/// starts with the first one's bytes (the model server's prompt cache).
pub(crate) fn system(state: &SessionState, templates: &Builtin) -> Result<String, TemplateError> {
    let fence = Fence::new(&state.nonce);
    let mut sections = Vec::with_capacity(3);
    // A question about a page gets the phrase; a page cut to its start first the sentence
    // that says when to call the page tools (the Reason request offers them only then). A
    // model that answers the phrase about a cut page gets the page searched for it
    // (`step::further`): told only one of the two, the 1.5B either abstained rather than
    // look or guessed. An explanation of a selection on a cut page explains it: no phrase.
    let has_text = state.page.as_ref().is_some_and(|p| !p.text.is_empty());
    let whole = shows_page_whole(state, &Fit::NONE);
    if has_text && !whole {
        sections.push("page_tools");
    }
    // A selection action (not Explain) asks for a rewrite of the selection, never an answer
    // the page may lack: no phrase either.
    if (whole && state.action.is_none()) || (has_text && state.selection.is_none()) {
        sections.push("abstain");
    }
    match state.config.reading_level {
        ReadingLevel::Simple => sections.push("reading_simple"),
        ReadingLevel::Standard => {}
        ReadingLevel::Expert => sections.push("reading_expert"),
    }
    if state.config.web_search {
        sections.push("web_search");
    }
    templates
        .system
        .render(&strings(&[("fence_tag", &fence.tag())]), &sections)
}

/// What the user asked in a turn: the question as typed, or for an explanation the
/// request with the selection (page text: fenced), or for another action (`action`, its
/// name) the same with the action's name. The current explanation's selection comes in its
/// tool result instead, so it is not repeated here (the current action's request is
/// [`action_request`]).
fn user_text(
    templates: &Builtin,
    fence: Fence<'_>,
    question: &str,
    explain: bool,
    current: bool,
    action: Option<&str>,
) -> Result<String, TemplateError> {
    match (explain, current, action) {
        (false, _, _) => Ok(question.to_string()),
        (true, true, _) => templates.user.render(&Context::new(), &["explain_request"]),
        (true, false, None) => templates.user.render(
            &strings(&[("page_data", &fence.wrap(question))]),
            &["explained_selection"],
        ),
        (true, false, Some(action)) => templates.user.render(
            &strings(&[("page_data", &fence.wrap(question)), ("action", action)]),
            &["action_selection"],
        ),
    }
}

/// The current action run's request: the action's template with the selection, its
/// context and the page title each fenced (page text, never instructions), the page's
/// language tag checked; a cut selection adds, outside the fence, that the answer must say
/// so.
fn action_request(
    state: &SessionState,
    templates: &Builtin,
    action: &crate::actions::ActionRun,
) -> Result<String, TemplateError> {
    let fence = Fence::new(&state.nonce);
    let Some(selection) = state.selection.as_ref() else {
        return Ok(state.question.clone());
    };
    let mut context = String::new();
    let headings = selection.heading_path();
    if !headings.is_empty() {
        context.push_str(&format!("Headings: {headings}\n"));
    }
    context.push_str(if selection.context.is_empty() {
        "(unknown)"
    } else {
        &selection.context
    });
    let values = crate::actions::ActionValues {
        selection: fence.wrap(&selection.text),
        context: fence.wrap(&context),
        title: fence.wrap(&selection.title),
        page_language: crate::actions::checked_lang_tag(&selection.lang),
    };
    let mut text = action.render(&values)?;
    if selection.truncated {
        let counts = strings(&[
            ("shown", &selection.text.chars().count().to_string()),
            ("total", &selection.full_length.to_string()),
        ]);
        text.push('\n');
        text.push_str(&templates.user.render(&counts, &["action_cut"])?);
    }
    Ok(text)
}

/// A tool result as the model sees it: a page tool's is fenced; an explanation's cut
/// selection adds, outside the fence, that the answer must say so.
pub(crate) fn tool_content(state: &SessionState, name: &str, ok: bool, content: &str) -> String {
    if !ok || !PAGE_DATA_TOOLS.contains(&name) {
        return content.to_string();
    }
    let mut text = Fence::new(&state.nonce).wrap(content);
    if name == EXPLAIN_TEXT_WITH_CONTEXT {
        if let Some(note) = state.selection.as_ref().and_then(cut_instruction) {
            text.push('\n');
            text.push_str(&note);
        }
    }
    text
}

/// The conversation so far: system prompt with the page, earlier turns, the question, and
/// the current run's tool calls, results and observations.
pub fn conversation(state: &SessionState) -> Result<Vec<ChatMessage>, TemplateError> {
    conversation_with(state, builtin()?, &Fit::NONE)
}

/// The conversation shrunk by `fit`: system text, page block, the compaction's summary,
/// earlier turns, the notes, the current question, then the run's calls, results and
/// observations.
fn conversation_with(
    state: &SessionState,
    templates: &Builtin,
    fit: &Fit,
) -> Result<Vec<ChatMessage>, TemplateError> {
    let fence = Fence::new(&state.nonce);
    let user = |text: String| ChatMessage::new(Role::User, text);
    // The page block is the conversation's first user turn, a message of its own, so every
    // question stays a message of exactly what the user typed.
    let mut messages = vec![
        ChatMessage::new(Role::System, system(state, templates)?),
        ChatMessage::new(Role::User, page_block(state, templates, fit)?),
    ];
    // The summary of the compacted history is model output made from page data: fenced.
    if let Some(compaction) = &state.compact.compaction {
        let summary = strings(&[("summary", &fence.wrap(&compaction.summary))]);
        messages.push(ChatMessage::new(
            Role::User,
            templates.context.render(&summary, &["summary"])?,
        ));
    }
    let covered = context::covered_turns(state);
    // Earlier turns follow one another with nothing between them, so a follow-up's request
    // starts with the bytes of the one before it and its answer (the model server's prompt
    // cache); the system text says they are context, not instructions.
    for turn in state.turns.iter().skip(covered) {
        let cut = |text: &str| {
            if fit.cut_turns {
                context::cut_result(text)
            } else {
                text.to_string()
            }
        };
        // The turn's request gave these before its question: the same bytes again.
        if !fit.cut_turns {
            messages.extend(page_extra(state, templates, &turn.passages)?.map(user));
            messages.extend(page_cut(state, templates, turn.seen)?.map(user));
        }
        let text = user_text(
            templates,
            fence,
            &cut(&turn.question),
            turn.explain,
            false,
            turn.action.as_deref(),
        )?;
        messages.push(ChatMessage::new(Role::User, text));
        if !turn.answer.is_empty() {
            messages.push(ChatMessage::new(Role::Assistant, cut(&turn.answer)));
        }
    }
    if let Some(notes) = notes_with(state, templates)? {
        messages.push(ChatMessage::new(Role::User, notes));
    }
    let given = question_passages(state, fit);
    messages.extend(page_extra(state, templates, &given.extra)?.map(user));
    messages.extend(page_cut(state, templates, given.seen)?.map(user));
    let text = match &state.action {
        Some(action) => action_request(state, templates, action)?,
        None => user_text(
            templates,
            fence,
            &state.question,
            state.selection.is_some(),
            true,
            None,
        )?,
    };
    messages.push(ChatMessage::new(Role::User, text));
    let mut pending_thought = String::new();
    let mut results_left = fit.cut_results;
    for entry in &state.trajectory[context::covered_entries(state)..] {
        match &entry.item {
            // A derived thought was not the model's text: the reply had none.
            Item::Thought { text, derived } => {
                pending_thought = if *derived {
                    String::new()
                } else {
                    text.clone()
                }
            }
            Item::ToolCall { call } => match messages.last_mut() {
                // Several calls of one reply are one assistant message.
                Some(last)
                    if last.role == Role::Assistant
                        && !last.tool_calls.is_empty()
                        && pending_thought.is_empty() =>
                {
                    last.tool_calls.push(call.clone());
                }
                _ => {
                    let mut m =
                        ChatMessage::new(Role::Assistant, std::mem::take(&mut pending_thought));
                    m.tool_calls = vec![call.clone()];
                    messages.push(m);
                }
            },
            Item::ToolResult {
                call_id,
                name,
                ok,
                content,
            } => {
                let content = if results_left > 0 {
                    results_left -= 1;
                    context::cut_result(content)
                } else {
                    content.clone()
                };
                let mut m = ChatMessage::new(Role::Tool, tool_content(state, name, *ok, &content));
                m.tool_call_id = Some(call_id.clone());
                messages.push(m);
            }
            Item::Reflection {
                reflection,
                alternative,
            } => messages.push(ChatMessage::new(
                Role::User,
                note(templates, reflection, *alternative)?,
            )),
            Item::Observation { text, .. } if !text.trim().is_empty() => {
                let context = strings(&[("observation", text.trim())]);
                messages.push(ChatMessage::new(
                    Role::Assistant,
                    templates.reason.render(&context, &[])?,
                ));
            }
            _ => {}
        }
    }
    Ok(messages)
}

/// The context's estimated tokens: the conversation, unshrunk (what a compaction is
/// measured on).
pub fn context_tokens(state: &SessionState) -> Result<u64, TemplateError> {
    let messages = conversation_with(state, builtin()?, &Fit::NONE)?;
    Ok(crate::types::chat::estimate_request_tokens(&ChatRequest {
        messages,
        ..ChatRequest::default()
    }))
}

/// The reply cap of a request shrunk by `fit`.
pub(crate) fn reply_cap(state: &SessionState, fit: &Fit) -> Option<u32> {
    Some(
        fit.reply_cap
            .unwrap_or(state.config.max_output_tokens)
            .min(state.config.max_output_tokens),
    )
}

/// The conversation, then `last`, an instruction, as the last user message (which ends
/// with the question where the model answers it).
pub(crate) fn instructed(
    state: &SessionState,
    templates: &Builtin,
    fit: &Fit,
    last: String,
) -> Result<Vec<ChatMessage>, TemplateError> {
    let mut messages = conversation_with(state, templates, fit)?;
    messages.push(ChatMessage::new(Role::User, last));
    Ok(messages)
}

/// The Reason call: the conversation with the tools offered to this run (those `fit`
/// leaves in). A question is the conversation's last user message; an explanation ends
/// with what to explain, after the prepared call's result.
pub fn reason(
    state: &SessionState,
    tools: Vec<ToolSpec>,
    fit: &Fit,
) -> Result<ChatRequest, TemplateError> {
    let templates = builtin()?;
    let messages = if state.explains() {
        let close = templates.user.render(&Context::new(), &["explain_close"])?;
        instructed(state, templates, fit, close)?
    } else {
        conversation_with(state, templates, fit)?
    };
    Ok(ChatRequest {
        messages,
        tools: fit.tools(tools),
        response_format: None,
        max_tokens: reply_cap(state, fit),
        stream: state.config.stream,
        cache_key: None,
    })
}

/// A bounded phase's model call: its system text, then its context label's history.
pub fn phase(state: &SessionState, system: &str, tools: Vec<ToolSpec>) -> ChatRequest {
    let label = state.phases.run.as_ref().map_or("", |p| p.label.as_str());
    let history = state
        .phases
        .contexts
        .get(label)
        .map_or(&[][..], Vec::as_slice);
    let mut messages = Vec::with_capacity(history.len() + 1);
    messages.push(ChatMessage::new(Role::System, system.to_string()));
    messages.extend(history.iter().cloned());
    let format = state.phases.run.as_ref().and_then(|p| p.format.clone());
    ChatRequest {
        messages,
        tools,
        response_format: format.filter(|_| state.config.constrained_output),
        max_tokens: Some(state.config.max_output_tokens),
        stream: state.config.stream,
        cache_key: None,
    }
}

/// The Observe call: a plain call asking for the control block.
pub fn observe(state: &SessionState, fit: &Fit) -> Result<ChatRequest, TemplateError> {
    let templates = builtin()?;
    let question = strings(&[("question", &question_line(state))]);
    let instruction = templates.observe.render(&question, &[])?;
    Ok(ChatRequest {
        messages: instructed(state, templates, fit, instruction)?,
        tools: Vec::new(),
        response_format: state.config.constrained_output.then(|| JsonSchemaFormat {
            name: "control".into(),
            schema: control::schema(),
        }),
        max_tokens: reply_cap(state, fit),
        stream: state.config.stream,
        cache_key: None,
    })
}

/// The Synthesis call.
pub fn synthesis(
    state: &SessionState,
    why: SynthesisReason,
    fit: &Fit,
) -> Result<ChatRequest, TemplateError> {
    let templates = builtin()?;
    let section = match why {
        SynthesisReason::Ready => "ready",
        SynthesisReason::StepLimit => "step_limit",
        SynthesisReason::Stopped => "stopped",
        SynthesisReason::Repeating => "repeating",
    };
    let question = strings(&[("question", &question_line(state))]);
    let instruction = templates
        .synthesis
        .render(&question, &[section, "question"])?;
    Ok(ChatRequest {
        messages: instructed(state, templates, fit, instruction)?,
        tools: Vec::new(),
        response_format: None,
        max_tokens: reply_cap(state, fit),
        stream: state.config.stream,
        cache_key: None,
    })
}

/// A request of its own (a system and a user message, not the conversation) with no tools:
/// JSON output constrained to `schema` (name, schema) when the run asks for constrained
/// output, at most `max_tokens` (within the run's cap), streamed like the run's calls.
pub(crate) fn standalone(
    state: &SessionState,
    system: String,
    user: String,
    (name, schema): (&str, Value),
    max_tokens: u32,
) -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::new(Role::System, system),
            ChatMessage::new(Role::User, user),
        ],
        tools: Vec::new(),
        response_format: state.config.constrained_output.then(|| JsonSchemaFormat {
            name: name.into(),
            schema,
        }),
        max_tokens: Some(max_tokens.min(state.config.max_output_tokens)),
        stream: state.config.stream,
        cache_key: None,
    }
}

mod grounding;
mod page;

#[cfg(test)]
mod tests;
