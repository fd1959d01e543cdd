//! The bounded phase API, case by case: stop reasons, no token
//! figures in results, context labels, tool subsets, tool-only phases and global accounting.

use std::cell::RefCell;
use std::rc::Rc;

use futures::executor::block_on;
use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;
use kljson::FromJson;
use knowledgelens::agent::config::RunConfig;
use knowledgelens::agent::phase::{Phase, PhaseResult, StopReason};
use knowledgelens::agent::StopSignal;
use knowledgelens::llm::{LlmErrorKind, Role, ToolCall, Usage};
use knowledgelens::testing::Phases;
use knowledgelens::testing::{ManualClock, Reply, ScriptedLlm};
use knowledgelens::tools::{RateLimit, Risk, ToolBox, ToolContext, ToolError, TypedTool};
use knowledgelens::types::RunErrorKind;
use schemars::JsonSchema;

/// Tools that record that they ran.
type Ran = Rc<RefCell<Vec<String>>>;

#[derive(FromJson, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoteArgs {
    text: String,
}

macro_rules! note_tool {
    ($ty:ident, $name:literal, $risk:expr, $per_run:expr) => {
        struct $ty(Ran);
        impl TypedTool for $ty {
            const NAME: &'static str = $name;
            const DESCRIPTION: &'static str = "Notes a text.";
            type Args = NoteArgs;
            type Output = String;
            fn risk(&self) -> Risk {
                $risk
            }
            fn rate_limit(&self) -> RateLimit {
                RateLimit {
                    per_run: $per_run,
                    per_minute: None,
                }
            }
            fn call<'a>(
                &'a self,
                args: NoteArgs,
                _ctx: &'a ToolContext<'a>,
            ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
                self.0.borrow_mut().push(format!("{}:{}", $name, args.text));
                future::ready(Ok(format!("{} noted {}", $name, args.text))).boxed_local()
            }
        }
    };
}

note_tool!(ToolA, "tool_a", Risk::Low, None);
note_tool!(ToolB, "tool_b", Risk::Low, None);
note_tool!(Dangerous, "dangerous", Risk::High, None);
note_tool!(Once, "once", Risk::Low, Some(1));

struct Setup {
    llm: ScriptedLlm,
    clock: Rc<ManualClock>,
    tools: ToolBox,
    ran: Ran,
    stop: StopSignal,
    config: RunConfig,
}

fn setup(replies: Vec<Reply>) -> Setup {
    let ran: Ran = Rc::default();
    let tools = ToolBox::default()
        .with(Box::new(ToolA(ran.clone())))
        .with(Box::new(ToolB(ran.clone())))
        .with(Box::new(Dangerous(ran.clone())))
        .with(Box::new(Once(ran.clone())));
    Setup {
        llm: ScriptedLlm::new(replies),
        clock: ManualClock::new(1_000),
        tools,
        ran,
        stop: StopSignal::new(),
        config: RunConfig::default(),
    }
}

impl Setup {
    fn phases(&self) -> Phases<'_> {
        Phases::new(
            &self.llm,
            &self.clock,
            &self.tools,
            self.stop.clone(),
            self.config,
            "You are a test.",
        )
    }
    fn calls(&self) -> usize {
        self.llm.requests.borrow().len()
    }
    /// The user messages of request `n`, in order.
    fn user_messages(&self, n: usize) -> Vec<String> {
        self.llm.requests.borrow()[n]
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.content.clone())
            .collect()
    }
    fn offered(&self, n: usize) -> Vec<String> {
        self.llm.requests.borrow()[n]
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }
}

fn run(phases: &Phases<'_>, phase: Phase) -> PhaseResult {
    block_on(phases.run_bounded(phase)).expect("phase")
}

fn note(name: &str, text: &str) -> Reply {
    Reply::tool(name, &format!(r#"{{"text": "{text}"}}"#))
}

fn call(id: &str, name: &str, text: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: format!(r#"{{"text": "{text}"}}"#),
    }
}

#[test]
fn done_when_the_model_answers_before_the_limit() {
    let s = setup(vec![note("tool_a", "x"), Reply::text("All noted.")]);
    let result = run(&s.phases(), Phase::new("Note x.", 5));
    assert_eq!(result.stop_reason, StopReason::Done);
    assert_eq!(result.final_text, "All noted.");
    assert_eq!(result.tool_calls.len(), 1);
    assert!(result.tool_calls[0].ok);
    assert_eq!(s.calls(), 2);
}

#[test]
fn max_iterations_at_the_limit() {
    let s = setup(vec![note("tool_a", "1"), note("tool_a", "2")]);
    let result = run(&s.phases(), Phase::new("Keep noting.", 2));
    assert_eq!(result.stop_reason, StopReason::MaxIterations);
    assert_eq!(s.calls(), 2);
    assert_eq!(*s.ran.borrow(), ["tool_a:1", "tool_a:2"]);
}

#[test]
fn budget_exhausted_on_entry_makes_no_call_and_stays_exhausted() {
    let mut s = setup(vec![Reply::text("first")]);
    s.config.token_budget = 2_000;
    s.llm.usage.set(Some(Usage::new(1_500, 500)));
    let phases = s.phases();
    assert_eq!(
        run(&phases, Phase::new("Hi.", 3)).stop_reason,
        StopReason::Done
    );
    let second = run(&phases, Phase::new("Again.", 3));
    assert_eq!(second.stop_reason, StopReason::BudgetExhausted);
    assert_eq!(s.calls(), 1, "no model call once the budget is used");
    let third = run(&phases, Phase::new("And again.", 3).in_context("other"));
    assert_eq!(third.stop_reason, StopReason::BudgetExhausted);
    assert_eq!(s.calls(), 1, "the budget is global across contexts");
}

#[test]
fn stop_requested_at_entry_and_during_a_phase() {
    let s = setup(vec![]);
    s.stop.raise();
    let result = run(&s.phases(), Phase::new("Note.", 5));
    assert_eq!(result.stop_reason, StopReason::StopRequested);
    assert_eq!(s.calls(), 0);

    // Raised by a tool mid-phase: the next round does not start.
    struct Stopper(StopSignal);
    impl TypedTool for Stopper {
        const NAME: &'static str = "stopper";
        const DESCRIPTION: &'static str = "Presses Stop.";
        type Args = NoteArgs;
        type Output = String;
        fn call<'a>(
            &'a self,
            _args: NoteArgs,
            _ctx: &'a ToolContext<'a>,
        ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
            self.0.raise();
            future::ready(Ok("stopped".to_string())).boxed_local()
        }
    }
    let mut s = setup(vec![note("stopper", "1")]);
    s.tools = ToolBox::default().with(Box::new(Stopper(s.stop.clone())));
    let result = run(&s.phases(), Phase::new("Go.", 5));
    assert_eq!(result.stop_reason, StopReason::StopRequested);
    assert_eq!(result.tool_calls.len(), 1);
    assert_eq!(s.calls(), 1);
}

#[test]
fn results_carry_no_token_or_cost_figures() {
    let s = setup(vec![Reply::text("ok")]);
    let result = run(&s.phases(), Phase::new("Hi.", 1));
    let value = serde_json::to_value(&result).expect("serialize");
    let mut keys: Vec<&String> = value.as_object().expect("object").keys().collect();
    keys.sort();
    assert_eq!(keys, ["final_text", "stop_reason", "tool_calls"]);
}

#[test]
fn continue_context_keeps_history_and_false_resets_it() {
    let s = setup(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::text("three"),
    ]);
    let phases = s.phases();
    run(&phases, Phase::new("First.", 1));
    run(&phases, Phase::new("Second.", 1));
    assert_eq!(s.user_messages(1), ["First.", "Second."]);
    let assistant_seen = s.llm.requests.borrow()[1]
        .messages
        .iter()
        .any(|m| m.role == Role::Assistant && m.content == "one");
    assert!(assistant_seen, "the prior reply is in the history");
    run(&phases, Phase::new("Third.", 1).fresh());
    assert_eq!(s.user_messages(2), ["Third."]);
}

#[test]
fn labels_keep_independent_histories_and_the_primary_is_separate() {
    let s = setup(vec![
        Reply::text("p1"),
        Reply::text("a1"),
        Reply::text("b1"),
        Reply::text("a2"),
        Reply::text("p2"),
    ]);
    let phases = s.phases();
    run(&phases, Phase::new("primary 1", 1));
    run(&phases, Phase::new("a 1", 1).in_context("label_a"));
    run(&phases, Phase::new("b 1", 1).in_context("label_b"));
    run(&phases, Phase::new("a 2", 1).in_context("label_a"));
    run(&phases, Phase::new("primary 2", 1));
    assert_eq!(s.user_messages(1), ["a 1"]);
    assert_eq!(s.user_messages(2), ["b 1"]);
    assert_eq!(s.user_messages(3), ["a 1", "a 2"]);
    assert_eq!(s.user_messages(4), ["primary 1", "primary 2"]);
    // Resetting one label leaves the others alone.
    let s2 = setup(vec![Reply::text("x"), Reply::text("y"), Reply::text("z")]);
    let phases = s2.phases();
    run(&phases, Phase::new("keep me", 1).in_context("keep"));
    run(
        &phases,
        Phase::new("reset me", 1).in_context("reset").fresh(),
    );
    run(&phases, Phase::new("still here?", 1).in_context("keep"));
    assert_eq!(s2.user_messages(2), ["keep me", "still here?"]);
    assert_eq!(phases.history(Some("reset")).len(), 2);
}

#[test]
fn a_tool_subset_restricts_what_is_offered_and_accepted() {
    let s = setup(vec![
        note("tool_b", "sneaky"),
        note("tool_a", "fine"),
        Reply::text("done"),
    ]);
    let result = run(
        &s.phases(),
        Phase::new("Use tool_a.", 5).with_tools(&["tool_a"]),
    );
    assert_eq!(s.offered(0), ["tool_a"]);
    assert_eq!(result.tool_calls.len(), 2);
    assert!(!result.tool_calls[0].ok);
    assert!(
        result.tool_calls[0].content.contains("not offered"),
        "{}",
        result.tool_calls[0].content
    );
    assert!(result.tool_calls[1].ok);
    assert_eq!(*s.ran.borrow(), ["tool_a:fine"], "tool_b never ran");
}

#[test]
fn an_empty_subset_runs_the_model_but_rejects_every_tool_call() {
    let s = setup(vec![note("tool_a", "x"), Reply::text("fine, no tools")]);
    let result = run(&s.phases(), Phase::new("Hi.", 3).with_tools(&[]));
    assert!(s.offered(0).is_empty());
    assert_eq!(result.stop_reason, StopReason::Done);
    assert!(!result.tool_calls[0].ok);
    assert!(s.ran.borrow().is_empty());
}

#[test]
fn no_subset_offers_every_tool() {
    let s = setup(vec![Reply::text("ok")]);
    run(&s.phases(), Phase::new("Hi.", 1));
    assert_eq!(s.offered(0), ["tool_a", "tool_b", "dangerous", "once"]);
}

#[test]
fn tool_only_phases_make_no_model_call() {
    let s = setup(vec![]);
    let phases = s.phases();
    let result = run(
        &phases,
        Phase::tool_only(vec![call("1", "tool_a", "x"), call("2", "tool_b", "y")]),
    );
    assert_eq!(result.stop_reason, StopReason::Done);
    assert_eq!(result.final_text, "");
    assert_eq!(result.tool_calls.len(), 2);
    assert!(result.tool_calls.iter().all(|o| o.ok));
    assert_eq!(*s.ran.borrow(), ["tool_a:x", "tool_b:y"]);
    let empty = run(&phases, Phase::tool_only(vec![]));
    assert_eq!(empty.stop_reason, StopReason::Done);
    assert!(empty.tool_calls.is_empty());
    assert_eq!(s.calls(), 0);
}

#[test]
fn tool_only_phases_are_gated_by_stop_but_not_by_the_budget() {
    let s = setup(vec![]);
    s.stop.raise();
    let result = run(
        &s.phases(),
        Phase::tool_only(vec![call("1", "tool_a", "x")]),
    );
    assert_eq!(result.stop_reason, StopReason::StopRequested);
    assert!(result.tool_calls.is_empty());
    assert!(s.ran.borrow().is_empty());

    let mut s = setup(vec![]);
    s.config.token_budget = 10;
    let phases = s.phases();
    // One call is over the budget already by its estimate: exhausted without a call.
    assert_eq!(
        run(&phases, Phase::new("Hi.", 1)).stop_reason,
        StopReason::BudgetExhausted
    );
    let result = run(&phases, Phase::tool_only(vec![call("1", "tool_a", "x")]));
    assert_eq!(result.stop_reason, StopReason::Done);
    assert!(result.tool_calls[0].ok, "tools run whatever the budget");
}

#[test]
fn tool_only_calls_that_are_not_allowed_become_error_results() {
    let s = setup(vec![]);
    let result = run(
        &s.phases(),
        Phase::tool_only(vec![
            call("1", "unknown_tool", "x"),
            call("2", "dangerous", "x"),
            call("3", "once", "first"),
            call("4", "once", "second"),
            call("5", "tool_a", "still runs"),
        ]),
    );
    let oks: Vec<bool> = result.tool_calls.iter().map(|o| o.ok).collect();
    assert_eq!(oks, [false, false, true, false, true]);
    assert!(result.tool_calls[0].content.contains("no tool"));
    assert!(result.tool_calls[1].content.contains("risk level"));
    assert!(result.tool_calls[3].content.contains("1 times per run"));
    assert_eq!(*s.ran.borrow(), ["once:first", "tool_a:still runs"]);
}

#[test]
fn token_totals_are_the_sum_across_phases_and_contexts() {
    let s = setup(vec![Reply::text("a"), Reply::text("b"), Reply::text("c")]);
    s.llm.usage.set(Some(Usage::new(100, 7)));
    let phases = s.phases();
    run(&phases, Phase::new("1", 1));
    run(&phases, Phase::new("2", 1).in_context("x"));
    run(&phases, Phase::tool_only(vec![call("1", "tool_a", "x")]));
    run(&phases, Phase::new("3", 1).in_context("y"));
    assert_eq!(phases.usage(), Usage::new(300, 21));
}

#[test]
fn a_failing_provider_is_retried_then_reported() {
    let s = setup(vec![
        Reply::status(503),
        Reply::status(429),
        Reply::text("recovered"),
    ]);
    let result = run(&s.phases(), Phase::new("Hi.", 1));
    assert_eq!(result.final_text, "recovered");
    assert_eq!(s.clock.sleeps.borrow().len(), 2, "two backoffs");

    let s = setup(vec![Reply::status(401)]);
    let err = block_on(s.phases().run_bounded(Phase::new("Hi.", 1))).unwrap_err();
    assert_eq!(err.0.kind, RunErrorKind::Llm(LlmErrorKind::Auth));
    assert!(err.0.message.contains("401"), "{}", err.0.message);
    assert_eq!(s.calls(), 1, "auth errors are not retried");
}
