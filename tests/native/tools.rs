//! The tool system: schemas derived from argument types, validation that names the field,
//! definitions that round-trip through JSON (seed property 4), schema violations rejected
//! with a descriptive error (property 5), text tool calls parsed without panicking, risk
//! levels and rate limits enforced as error results the model sees.

use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;
use knowledgelens::agent::config::RunConfig;
use knowledgelens::agent::trajectory::Item;
use knowledgelens::agent::{Engine, StopSignal};
use knowledgelens::state::{PageInfo, RunStatus, SessionState};
use knowledgelens::testing::{ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm};
use knowledgelens::tools::parse::tool_call_in_text;
use knowledgelens::tools::{
    CallCounts, Policy, RateLimit, ReadPage, Risk, Tool, ToolBox, ToolContext, ToolDefinition,
    ToolError, ToolErrorKind, ToolExample, TypedTool,
};
use proptest::prelude::*;
use serde_json::json;

struct Wipe;

#[derive(kljson::FromJson, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct WipeArgs {
    /// What to wipe.
    target: String,
}

impl TypedTool for Wipe {
    const NAME: &'static str = "wipe";
    const DESCRIPTION: &'static str = "Wipes something.";
    type Args = WipeArgs;
    type Output = String;
    fn risk(&self) -> Risk {
        Risk::High
    }
    fn rate_limit(&self) -> RateLimit {
        RateLimit {
            per_run: Some(1),
            per_minute: None,
        }
    }
    fn call<'a>(
        &'a self,
        args: WipeArgs,
        _ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        future::ready(Ok(format!("wiped {}", args.target))).boxed_local()
    }
}

#[test]
fn schemas_come_from_the_argument_types() {
    let def = ReadPage.definition();
    assert_eq!(def.name, "read_page");
    assert_eq!(def.parameters["type"], "object");
    assert_eq!(def.parameters["additionalProperties"], false);
    assert!(def.parameters["properties"]["offset"].is_object());
    assert_eq!(def.parameters["properties"]["max_chars"]["maximum"], 8000);
    assert!(def
        .spec()
        .description
        .contains("Example: {\"offset\":6000}"));
    let wipe = Wipe.definition();
    assert_eq!(wipe.parameters["required"], json!(["target"]));
    assert_eq!(
        wipe.parameters["properties"]["target"]["description"],
        "What to wipe."
    );
}

#[test]
fn validation_errors_name_the_field_what_was_expected_and_given() {
    let ctx = ToolContext {
        page: None,
        selection: None,
        added: &[],
    };
    let run =
        |args: &str| futures::executor::block_on(ReadPage.run(args, &ctx)).expect_err("invalid");
    let e = run(r#"{"offset": "ten"}"#);
    assert_eq!(e.kind, ToolErrorKind::InvalidArguments);
    assert!(
        e.message.contains("\"offset\"")
            && e.message.contains("string \"ten\"")
            && e.message.contains("expected u32"),
        "{}",
        e.message
    );
    let e = run(r#"{"offset": 1, "colour": "red"}"#);
    assert!(e.message.contains("colour"), "{}", e.message);
    let e = futures::executor::block_on(Wipe.run("{}", &ctx)).expect_err("missing");
    assert!(
        e.message.contains("missing field `target`"),
        "{}",
        e.message
    );
    assert!(e.for_model().starts_with("Error: ") && e.for_model().contains("Fix the arguments"));
}

#[test]
fn policy_refuses_risky_unoffered_and_rate_limited_calls() {
    let tools = ToolBox::builtin().with(Box::new(Wipe));
    let medium = Policy {
        permitted_risk: Risk::Medium,
        subset: None,
    };
    let err = tools
        .check("wipe", &medium, CallCounts::default())
        .expect_err("too risky");
    assert_eq!(err.kind, ToolErrorKind::Permission);
    let high = Policy {
        permitted_risk: Risk::High,
        subset: None,
    };
    tools
        .check("wipe", &high, CallCounts::default())
        .expect("allowed");
    let err = tools
        .check(
            "wipe",
            &high,
            CallCounts {
                in_run: 1,
                in_last_minute: 1,
            },
        )
        .expect_err("once per run");
    assert_eq!(err.kind, ToolErrorKind::RateLimited);
    let only_read = ["read_page".to_string()];
    let subset = Policy {
        permitted_risk: Risk::High,
        subset: Some(&only_read),
    };
    assert_eq!(
        tools
            .check("wipe", &subset, CallCounts::default())
            .expect_err("not offered")
            .kind,
        ToolErrorKind::Permission
    );
    assert_eq!(
        tools
            .check("nope", &high, CallCounts::default())
            .expect_err("unknown")
            .kind,
        ToolErrorKind::NotFound
    );
    assert!(!ToolErrorKind::Permission.is_retryable() && ToolErrorKind::Network.is_retryable());
}

#[test]
fn a_refused_call_becomes_an_error_result_and_the_run_goes_on() {
    let llm = ScriptedLlm::new(vec![
        Reply::tool("wipe", r#"{"target": "everything"}"#),
        Reply::reflection("Wiping is not allowed here.", "Answer without it."),
        Reply::text(r#"{"should_continue": false, "final_answer": "I could not wipe it."}"#),
    ]);
    let (clock, store, sink) = (
        ManualClock::new(0),
        MemoryStore::new(),
        RecordingSink::default(),
    );
    let tools = ToolBox::builtin().with(Box::new(Wipe));
    let mut state = SessionState::new("popup", 0);
    let page = PageInfo {
        title: "t".into(),
        url: "u".into(),
        text: "text".into(),
        ..Default::default()
    };
    state.begin_run("wipe it", Some(page), RunConfig::default(), 0);
    futures::executor::block_on(
        Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new()).drive(&mut state),
    );
    assert_eq!(state.status, RunStatus::Completed);
    let result = state.trajectory.iter().find_map(|e| match &e.item {
        Item::ToolResult { ok, content, .. } => Some((*ok, content.clone())),
        _ => None,
    });
    let (ok, content) = result.expect("a result");
    assert!(!ok && content.contains("risk level High"), "{content}");
}

#[test]
fn a_tool_call_written_in_text_is_executed() {
    let llm = ScriptedLlm::new(vec![
        Reply::text(
            "Let me look.\n```json\n{\"name\": \"read_page\", \"arguments\": {\"offset\": 0}}\n```",
        ),
        Reply::text(r#"{"should_continue": false, "final_answer": "Found it."}"#),
    ]);
    let (clock, store, sink) = (
        ManualClock::new(0),
        MemoryStore::new(),
        RecordingSink::default(),
    );
    let tools = ToolBox::builtin();
    let mut state = SessionState::new("popup", 0);
    let page = PageInfo {
        title: "t".into(),
        url: "u".into(),
        text: "The text.".into(),
        ..Default::default()
    };
    state.begin_run("q", Some(page), RunConfig::default(), 0);
    futures::executor::block_on(
        Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new()).drive(&mut state),
    );
    assert_eq!(state.answer, "Found it.");
    assert!(state.trajectory.iter().any(|e| matches!(&e.item, Item::ToolResult { ok: true, content, .. } if content.contains("The text."))));
}

fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i32>().prop_map(serde_json::Value::from),
        "\\PC{0,12}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arb_definition() -> impl Strategy<Value = ToolDefinition> {
    (
        "[a-z_]{1,20}",
        "\\PC{0,60}",
        proptest::collection::btree_map("[a-z_]{1,8}", arb_json(), 0..4),
        proptest::collection::vec(
            (
                proptest::collection::btree_map("[a-z]{1,6}", arb_json(), 0..3),
                "\\PC{0,20}",
            ),
            0..3,
        ),
        prop_oneof![Just(Risk::Low), Just(Risk::Medium), Just(Risk::High)],
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
        (
            proptest::option::of(0u32..100),
            proptest::option::of(0u32..100),
        ),
    )
        .prop_map(
            |(
                name,
                description,
                props,
                examples,
                risk,
                (side_effects, needs_page, needs_selection, needs_search),
                (per_run, per_minute),
            )| {
                ToolDefinition {
                    name,
                    description,
                    parameters: json!({"type": "object", "properties": props}).into(),
                    examples: examples
                        .into_iter()
                        .map(|(input, description)| ToolExample {
                            input: serde_json::Value::Object(input.into_iter().collect()),
                            description,
                        })
                        .collect(),
                    risk,
                    side_effects,
                    rate_limit: RateLimit {
                        per_run,
                        per_minute,
                    },
                    needs_page,
                    needs_selection,
                    needs_search,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Property 4: any valid tool definition round-trips through JSON unchanged.
    #[test]
    fn definitions_round_trip(def in arb_definition()) {
        let text = serde_json::to_string(&def).expect("serialize");
        let back: ToolDefinition = serde_json::from_str(&text).expect("parse");
        prop_assert_eq!(back, def);
    }

    /// Property 5: a call violating the schema is rejected with an error naming the field.
    #[test]
    fn schema_violations_name_the_field(
        field in prop_oneof![Just("offset"), Just("max_chars")],
        bad in prop_oneof![
            "[a-z]{1,8}".prop_map(|s| json!(s)),
            any::<bool>().prop_map(|b| json!(b)),
            (-1000i64..-1).prop_map(|n| json!(n)),
            Just(json!(1.5)),
            Just(json!([1])),
            Just(json!({"x": 1})),
        ],
        unknown in "[a-z]{3,10}",
        use_unknown in any::<bool>(),
    ) {
        let (args, named) = if use_unknown && unknown != "offset" && unknown != "max_chars" {
            (json!({ unknown.clone(): 1 }), unknown.clone())
        } else {
            (json!({ field: bad }), field.to_string())
        };
        let ctx = ToolContext {
            page: None,
            selection: None,
            added: &[],
        };
        let err = futures::executor::block_on(ReadPage.run(&args.to_string(), &ctx)).expect_err("must be rejected");
        prop_assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
        prop_assert!(err.message.contains(&named), "{} does not name {}", err.message, named);
    }

    /// The text tool-call parser never panics, whatever the model writes.
    #[test]
    fn text_tool_call_parser_never_panics(text in "\\PC{0,300}") {
        let _ = tool_call_in_text(&text, &["read_page".to_string()]);
    }

    /// A call embedded anywhere in prose is found with its arguments.
    #[test]
    fn embedded_text_calls_are_found(prefix in "[a-zA-Z .,]{0,30}", suffix in "[a-zA-Z .,]{0,30}", offset in 0u32..10_000) {
        let text = format!("{prefix}{}{suffix}", json!({"name": "read_page", "arguments": {"offset": offset}}));
        let call = tool_call_in_text(&text, &["read_page".to_string()]).expect("found");
        let args: serde_json::Value = serde_json::from_str(&call.arguments).expect("json");
        prop_assert_eq!(args["offset"].as_u64(), Some(u64::from(offset)));
    }
}
