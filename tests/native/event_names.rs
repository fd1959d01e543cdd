//! Event and message names are API: the popup and the end-to-end tests match them. This
//! freezes the wire form of every event and of the session view.

use knowledgelens::agent::events::{AgentEvent, EventEnvelope, EventKind, UsageView};
use knowledgelens::agent::trajectory::ErrorInfo;
use knowledgelens::types::{LlmErrorKind, RunErrorKind};
use serde_json::json;

fn all_kinds() -> Vec<EventKind> {
    vec![
        EventKind::RunStarted {
            question: "q".into(),
        },
        EventKind::StepStarted,
        EventKind::Thinking,
        EventKind::Executing {
            tool: "read_page".into(),
        },
        EventKind::ToolCompleted {
            tool: "read_page".into(),
        },
        EventKind::ToolFailed {
            tool: "read_page".into(),
            error: "e".into(),
        },
        EventKind::Analyzing,
        EventKind::Synthesizing,
        EventKind::Reflecting,
        EventKind::AnswerDelta { text: "t".into() },
        EventKind::AnswerReset,
        EventKind::BudgetWarning {
            used: 8,
            budget: 10,
        },
        EventKind::Notice {
            message: "m".into(),
        },
        EventKind::Stopped {
            answer: "a".into(),
            sources: Vec::new(),
        },
        EventKind::Completed {
            answer: "a".into(),
            partial: false,
            sources: Vec::new(),
        },
        EventKind::Failed {
            error: ErrorInfo {
                kind: RunErrorKind::Llm(LlmErrorKind::Auth),
                message: "m".into(),
            },
            answer: String::new(),
            sources: Vec::new(),
        },
        EventKind::AwaitingInput {
            request_id: "1-2-3".into(),
            question: "Which one?".into(),
        },
        EventKind::TimedOut {
            error: ErrorInfo {
                kind: RunErrorKind::InputTimeout,
                message: "m".into(),
            },
            answer: String::new(),
            sources: Vec::new(),
        },
        EventKind::Compacting,
        EventKind::Searching {
            query: "tides".into(),
        },
        EventKind::Grading { count: 5 },
        EventKind::Rewriting,
        EventKind::Summarizing {
            section: Some(3),
            of: 12,
        },
        EventKind::StepItem {
            item: knowledgelens::agent::events::StepView {
                index: 0,
                step: 1,
                kind: "tool_call".into(),
                text: "read_page".into(),
                text_chars: 9,
                failed: false,
                retrying: false,
                tool: Some("read_page".into()),
                arguments: Some("{}".into()),
                arguments_chars: Some(2),
                at_ms: 5,
                grades: None,
            },
        },
    ]
}

#[test]
fn event_names_are_frozen() {
    let names: Vec<String> = all_kinds()
        .into_iter()
        .map(|kind| {
            let event = AgentEvent {
                kind,
                step: 1,
                max_steps: 5,
                usage: UsageView::default(),
                rev: 3,
                seq: 9,
            };
            let v = serde_json::to_value(&event).expect("serialize");
            let name = v["type"].as_str().expect("type").to_string();
            assert_eq!(name, event.kind.name());
            name
        })
        .collect();
    assert_eq!(
        names,
        [
            "run_started",
            "step_started",
            "thinking",
            "executing",
            "tool_completed",
            "tool_failed",
            "analyzing",
            "synthesizing",
            "reflecting",
            "answer_delta",
            "answer_reset",
            "budget_warning",
            "notice",
            "stopped",
            "completed",
            "failed",
            "awaiting_input",
            "timed_out",
            "compacting",
            "searching",
            "grading",
            "rewriting",
            "summarizing",
            "step_item"
        ]
    );
    assert_eq!(
        names,
        EventKind::NAMES,
        "the generated protocol file lists them all"
    );
}

#[test]
fn envelope_wire_form_is_frozen() {
    let event = AgentEvent {
        kind: EventKind::Executing {
            tool: "read_page".into(),
        },
        step: 2,
        max_steps: 5,
        usage: UsageView {
            input: 10,
            output: 3,
            budget: 32000,
            cached_input: 0,
        },
        rev: 7,
        seq: 42,
    };
    let v = serde_json::to_value(EventEnvelope::new("tab:4", 7, event)).expect("serialize");
    assert_eq!(
        v,
        json!({"type": "event", "session": "tab:4", "run": 7, "event": {"type": "executing", "tool": "read_page", "step": 2, "max_steps": 5, "usage": {"input": 10, "output": 3, "budget": 32000}, "rev": 7, "seq": 42}})
    );
}

#[test]
fn session_view_fields_are_frozen() {
    let state = knowledgelens::state::SessionState::new("popup", 7);
    let v =
        serde_json::to_value(knowledgelens::protocol::SessionView::of(&state)).expect("serialize");
    let mut keys: Vec<&str> = v
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "answer",
            "archived",
            "budget_warned",
            "context_share",
            "cost",
            "draft",
            "error",
            "explain",
            "max_steps",
            "notices",
            "page",
            "partial",
            "pending_input",
            "phase",
            "question",
            "rev",
            "run",
            "search_offer",
            "seq",
            "session",
            "settings_notice",
            "setup_needed",
            "sources",
            "status",
            "step",
            "steps",
            "tool",
            "trajectory_len",
            "turns",
            "updated_at",
            "usage"
        ]
    );
    assert_eq!(v["status"], "idle");
}

#[test]
fn step_item_wire_form_is_frozen() {
    let entry = knowledgelens::agent::trajectory::Entry {
        step: 2,
        at_ms: 99,
        item: knowledgelens::agent::trajectory::Item::ToolCall {
            call: knowledgelens::types::ToolCall {
                id: "c1".into(),
                name: "read_page".into(),
                arguments: r#"{"offset":0}"#.into(),
            },
        },
    };
    let event = AgentEvent {
        kind: EventKind::StepItem {
            item: entry.view(3),
        },
        step: 2,
        max_steps: 5,
        usage: UsageView::default(),
        rev: 1,
        seq: 4,
    };
    assert_eq!(
        serde_json::to_value(&event).expect("serialize"),
        json!({"type": "step_item", "item": {"index": 3, "step": 2, "kind": "tool_call", "text": "read_page", "text_chars": 9, "failed": false, "retrying": false, "tool": "read_page", "arguments": "{\"offset\":0}", "arguments_chars": 12, "at_ms": 99}, "step": 2, "max_steps": 5, "usage": {"input": 0, "output": 0, "budget": 0}, "rev": 1, "seq": 4})
    );
}
