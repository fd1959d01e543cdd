//! The grounding (what a compaction summarises towards) and the notes a request carries
//! before the current question. Pure: no browser access.

use serde_json::Value;

use super::{builtin, strings, Builtin};
use crate::agent::context;
use crate::state::SessionState;
use crate::template::{Context, TemplateError};

/// The grounding as the model reads it (`agent::context::grounding`): what a compaction
/// request summarises towards.
pub fn grounding_text(state: &SessionState) -> Result<String, TemplateError> {
    grounding_with(state, builtin()?)
}

pub(crate) fn grounding_with(
    state: &SessionState,
    templates: &Builtin,
) -> Result<String, TemplateError> {
    let grounding = context::grounding(state);
    let mut values = strings(&[("goal", &grounding.goal)]);
    let mut sections = vec!["grounding"];
    for (name, lines) in [
        ("completed", &grounding.completed),
        ("decisions", &grounding.decisions),
        ("preferences", &grounding.preferences),
    ] {
        if !lines.is_empty() {
            sections.push(name);
            values.insert(name.to_string(), Value::from(lines.clone()));
        }
    }
    templates.context.render(&values, &sections)
}

/// The notes a request carries before the current question, when the conversation it shows
/// does not carry them itself: the run's completed calls and decisions once its start was
/// compacted away, and what the user answered to `request_input` in earlier runs (or in
/// this one, once compacted). `None` when there is nothing to note. The question stays the
/// last thing the model reads; reading level and answer language are in the system text.
pub fn notes_text(state: &SessionState) -> Result<Option<String>, TemplateError> {
    notes_with(state, builtin()?)
}

pub(super) fn notes_with(
    state: &SessionState,
    templates: &Builtin,
) -> Result<Option<String>, TemplateError> {
    let grounding = context::grounding(state);
    let compacted = context::covered_entries(state) > 0;
    let answers = if compacted {
        grounding.answers
    } else {
        grounding.answers[..state.input.kept_answers.len().min(grounding.answers.len())].to_vec()
    };
    let mut values = Context::new();
    let mut sections = vec!["notes"];
    for (section, name, lines) in [
        (
            "notes_completed",
            "completed",
            if compacted {
                grounding.completed
            } else {
                Vec::new()
            },
        ),
        (
            "notes_decisions",
            "decisions",
            if compacted {
                grounding.decisions
            } else {
                Vec::new()
            },
        ),
        ("notes_answers", "answers", answers),
    ] {
        if !lines.is_empty() {
            sections.push(section);
            values.insert(name.to_string(), Value::from(lines));
        }
    }
    if sections.len() == 1 {
        return Ok(None);
    }
    templates.context.render(&values, &sections).map(Some)
}

/// The question as the last line of an instruction names it: as typed (its start, when
/// long), or for an explanation what the user asked for.
pub(super) fn question_line(state: &SessionState) -> String {
    if let Some(action) = &state.action {
        return format!("{}: the text I selected on the page.", action.name);
    }
    if state.selection.is_some() {
        return "Explain the text I selected on the page.".to_string();
    }
    let goal = context::grounding(state).goal;
    goal.trim().to_string()
}
