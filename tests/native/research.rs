//! Research mode through the real [`Service`] with a scripted model and search: the stage
//! sequence and its Steps headings, context isolation between the labels, the global budget
//! ending research partway with a partial report, Stop in each stage, the review fixing an
//! unsupported claim, permissions per stage, and the orchestration's blindness to
//! accounting (`PhaseResult` has no token or cost field: a compile-time check below).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use knowledgelens::agent::phase::{PhaseResult, StopReason};
use knowledgelens::agent::step::research::run::{self as research, Directive};
use knowledgelens::agent::trajectory::Item;
use knowledgelens::llm::{ChatRequest, Role};
use knowledgelens::service::{Ports, Service};
use knowledgelens::settings::{Settings, WebSearch, SETTINGS_KEY};
use knowledgelens::state::research::{ResearchRun, Stage};
use knowledgelens::state::{RunStatus, SessionState};
use knowledgelens::testing::research::{tides_pages, ResearchScript, TopicSearch, UNSUPPORTED};
use knowledgelens::testing::{
    FixedModel, ManualClock, MemoryStore, RecordingSink, Reply, ResponderLlm, SeededRandom,
};
use serde_json::{json, Value};

const SESSION: &str = "tab:1";
const QUESTION: &str = "What moves the tides, and how?";
const SUBTOPICS: [&str; 3] = ["The moon", "The sun", "the  Moon"];

type Model = ResponderLlm<Box<dyn Fn(&ChatRequest, usize) -> Reply>>;

struct World {
    store: Rc<MemoryStore>,
    sink: Rc<RecordingSink>,
    llm: Rc<Model>,
    search: Rc<TopicSearch>,
    service: Rc<Service>,
}

/// A world whose model follows `script` (`respond` may override a call by its number).
fn world_with(
    script: ResearchScript,
    settings: Settings,
    respond: impl Fn(&ChatRequest, usize) -> Option<Reply> + 'static,
) -> World {
    let store = Rc::new(MemoryStore::new());
    let settings_store = Rc::new(MemoryStore::new());
    settings_store.data.borrow_mut().insert(
        SETTINGS_KEY.into(),
        serde_json::to_string(&settings).unwrap(),
    );
    let sink = Rc::new(RecordingSink::default());
    let llm: Rc<Model> = Rc::new(ResponderLlm::new(Box::new(move |request, n| {
        respond(request, n).unwrap_or_else(|| script.reply(request))
    })));
    let search = Rc::new(TopicSearch::default());
    let ports = Ports {
        capture: Rc::new(knowledgelens::ports::NoCapture),
        sessions: store.clone(),
        settings: settings_store,
        clock: ManualClock::new(1_000),
        events: sink.clone(),
        pages: Rc::new(tides_pages()),
        models: Rc::new(FixedModel(llm.clone())),
        random: Rc::new(SeededRandom::new(7)),
        search: search.clone(),
    };
    World {
        store,
        sink,
        llm,
        search,
        service: Service::new(ports),
    }
}

fn searching() -> Settings {
    Settings {
        search_provider: WebSearch::Wikipedia,
        ..Settings::default()
    }
}

fn world(script: ResearchScript) -> World {
    world_with(script, searching(), |_, _| None)
}

impl World {
    /// Asks `request` and drives its run to the end.
    fn ask(&self, request: Value) -> Value {
        let (reply, run) = futures::executor::block_on(self.service.handle_json(request));
        if let Some(run) = run {
            futures::executor::block_on(run);
        }
        reply
    }

    fn research(&self, subtopics: u32) -> Value {
        self.ask(json!({
            "id": 1, "type": "ask", "session": SESSION, "question": QUESTION, "tab_id": 1,
            "research": {"subtopics": subtopics},
        }))
    }

    fn stored(&self) -> SessionState {
        self.store.session(SESSION).expect("stored")
    }

    fn requests(&self) -> Vec<ChatRequest> {
        self.llm.requests.borrow().clone()
    }
}

/// The Steps headings of a run, in order.
fn headings(state: &SessionState) -> Vec<String> {
    state
        .trajectory
        .iter()
        .filter_map(|e| match &e.item {
            Item::Phase { heading } => Some(heading.clone()),
            _ => None,
        })
        .collect()
}

/// The opening user message of a request.
fn opening(request: &ChatRequest) -> &str {
    knowledgelens::testing::research::opening(request)
}

#[test]
fn research_runs_its_stages_in_order_and_reports_with_sections_and_citations() {
    let w = world(ResearchScript::new(&SUBTOPICS));
    let reply = w.research(4);
    assert_eq!(reply["ok"], true, "{reply}");
    // The bound shown while planning: 1 + 4 × 3 + 2 rounds; then by the 2 subtopics found.
    assert_eq!(reply["data"]["max_steps"], 15);
    let s = w.stored();
    assert_eq!(s.step_bound(), 9);
    assert_eq!(s.step, 1 + 3 + 3 + 2, "each subtopic took 3 rounds");
    assert_eq!(s.status, RunStatus::Completed, "{:?}", s.error);
    assert!(!s.partial);
    // Duplicates ("the  Moon") are dropped; at most the chosen number.
    assert_eq!(
        headings(&s),
        [
            "Planning the subtopics",
            "Subtopic 1 of 2: The moon",
            "Subtopic 2 of 2: The sun",
            "Writing the report",
            "Reviewing the report",
        ]
    );
    // The report: a section per subtopic and the synthesis, the unsupported claim removed
    // by the review, its made-up citation gone; sources are the page passage cited.
    assert!(s.answer.contains("## The moon"), "{}", s.answer);
    assert!(s.answer.contains("## The sun"));
    assert!(s.answer.contains("## Synthesis"));
    assert!(!s.answer.contains("cheese"), "{}", s.answer);
    assert!(!s.answer.contains("[9]"));
    assert_eq!(
        s.sources.iter().map(|x| x.id.as_str()).collect::<Vec<_>>(),
        ["p1"]
    );
    let run = s.research.as_ref().expect("the research record");
    assert_eq!(run.fixes_applied, 1);
    assert_eq!(run.stage, Stage::Review);
    // Each subtopic searched (a band's pages, rewritten, then the tides'), then read the page.
    assert_eq!(w.search.searches.get(), 4);
    let names: Vec<&str> = w.sink.names();
    assert_eq!(names.iter().filter(|n| **n == "completed").count(), 1);
    // Only the report streams (the planning, findings and review replies do not).
    let deltas: String = w
        .sink
        .events
        .borrow()
        .iter()
        .filter_map(|e| match &e.event.kind {
            knowledgelens::types::events::EventKind::AnswerDelta { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(deltas.starts_with("## The moon"), "{deltas}");
    assert!(
        deltas.contains(UNSUPPORTED),
        "the draft is the report as written"
    );
    assert!(names.contains(&"searching"));
    // The stages' contexts are dropped once the report is written.
    assert!(s.phases.contexts.is_empty());
    // The findings keep their citations.
    assert!(run.subtopics[0].findings.contains("[1]"));
    assert!(run.subtopics[0].findings.contains("[p1]"));
}

#[test]
fn each_context_sees_only_its_own_conversation() {
    let w = world(ResearchScript::new(&SUBTOPICS));
    w.research(2);
    let requests = w.requests();
    // The subtopic conversations: tool results that only a subtopic's context has.
    for request in &requests {
        let open = opening(request);
        let own = knowledgelens::testing::research::subtopic_number(open);
        for m in &request.messages {
            if m.role == Role::Assistant || m.role == Role::Tool {
                for n in 1..=2 {
                    let marker = format!("subtopic {n}.");
                    if m.content.contains(&marker) {
                        assert_eq!(own, Some(n), "{marker} leaked into {open:.80}");
                    }
                }
            }
        }
        if own.is_none() {
            // Decompose, synthesis and review: one system and one user message, no history.
            let roles: Vec<Role> = request.messages.iter().map(|m| m.role).collect();
            assert_eq!(roles, [Role::System, Role::User], "{open:.80}");
        }
    }
    // Synthesis saw the findings, never a tool result.
    let synthesis = requests
        .iter()
        .find(|r| opening(r).contains("Write the report"))
        .expect("a synthesis");
    assert!(opening(synthesis).contains("Subtopic 1: the moon pulls the oceans [1] [p1]."));
    assert!(!synthesis.messages.iter().any(|m| m.role == Role::Tool));
    // Every request of the run has the same system message (the cacheable prefix).
    let systems: std::collections::BTreeSet<&str> = requests
        .iter()
        .filter(|r| {
            !r.messages[0].content.starts_with("You grade")
                && !r.messages[0].content.starts_with("You rewrite")
        })
        .map(|r| r.messages[0].content.as_str())
        .collect();
    assert_eq!(systems.len(), 1);
}

#[test]
fn the_subtopic_stage_offers_only_search_and_page_tools_and_refuses_others() {
    // The model asks for a tool outside the allowlist in subtopic 1's first round.
    let w = world_with(
        ResearchScript::new(&["The moon", "The sun"]),
        searching(),
        |r, _| {
            let open = knowledgelens::testing::research::opening(r);
            let first_round = !r.messages.iter().any(|m| m.role == Role::Tool);
            (open.contains("Research subtopic 1 ") && first_round && !r.tools.is_empty())
                .then(|| Reply::tool("request_input", r#"{"question": "Which moon?"}"#))
        },
    );
    w.research(2);
    let s = w.stored();
    for request in w.requests().iter().filter(|r| !r.tools.is_empty()) {
        let mut offered: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        offered.sort_unstable();
        assert_eq!(offered, ["query_page", "read_page", "search_web_for_info"]);
    }
    let refused = s
        .trajectory
        .iter()
        .find_map(|e| match &e.item {
            Item::ToolResult {
                name, ok, content, ..
            } if name == "request_input" => Some((*ok, content.clone())),
            _ => None,
        })
        .expect("the refused call has a result");
    assert!(!refused.0, "{refused:?}");
    assert_eq!(s.status, RunStatus::Completed);
}

#[test]
fn without_web_search_the_subtopics_use_the_page_only() {
    let script = ResearchScript {
        search: false,
        ..ResearchScript::new(&["The moon", "The sun"])
    };
    let w = world_with(script, Settings::default(), |_, _| None);
    w.research(2);
    let s = w.stored();
    assert_eq!(s.status, RunStatus::Completed);
    assert_eq!(w.search.searches.get(), 0);
    for request in w.requests().iter().filter(|r| !r.tools.is_empty()) {
        assert!(request
            .tools
            .iter()
            .all(|t| t.name != "search_web_for_info"));
    }
}

#[test]
fn the_budget_ends_research_partway_with_a_partial_report() {
    // Each call costs 220 tokens, and is checked against the budget with its prompt
    // estimate first: the budget allows the decomposition and subtopic 1 only.
    let settings = Settings {
        token_budget: 1_500,
        ..Settings::default()
    };
    let script = ResearchScript {
        search: false,
        ..ResearchScript::new(&["The moon", "The sun"])
    };
    let w = world_with(script, settings, |_, _| None);
    w.research(2);
    let s = w.stored();
    assert_eq!(s.status, RunStatus::Completed, "{:?}", headings(&s));
    assert!(s.partial, "{} {:?}", s.answer, headings(&s));
    assert!(
        s.notices.iter().any(|n| n.contains("token budget")),
        "{:?}",
        s.notices
    );
    // The report is what was found so far: subtopic 1's findings, under its heading.
    assert!(
        s.answer.starts_with("## The moon"),
        "{} {:?} {:?}",
        s.answer,
        headings(&s),
        s.usage
    );
    assert!(!headings(&s).contains(&"Writing the report".to_string()));
}

/// Research in which Stop is pressed when the `n`-th model call is made.
fn stopped_at_call(stop_at: usize) -> SessionState {
    let stopper: Rc<RefCell<Option<Rc<Service>>>> = Rc::default();
    let handle = stopper.clone();
    let w = world_with(
        ResearchScript::new(&["The moon", "The sun"]),
        searching(),
        move |_, n| {
            if n == stop_at {
                let service = handle.borrow().clone().expect("the service");
                let reply = futures::FutureExt::now_or_never(
                    service.handle_json(json!({"id": 2, "type": "stop", "session": SESSION})),
                )
                .expect("stop answers at once");
                assert_eq!(reply.0["ok"], true);
            }
            None
        },
    );
    *stopper.borrow_mut() = Some(w.service.clone());
    w.research(2);
    let s = w.stored();
    *stopper.borrow_mut() = None;
    s
}

#[test]
fn stop_in_each_stage_ends_with_the_best_report_so_far() {
    // Calls: 1 decompose; subtopic 1: 2 search, 3 grading, 4 rewrite, 5 grading, 6 page
    // query, 7 findings; subtopic 2: 8–13; 14 synthesis; 15 review.
    let cases = [
        (1, "Planning the subtopics"),
        (6, "Subtopic 1 of 2: The moon"),
        (7, "Subtopic 1 of 2: The moon"),
        (14, "Writing the report"),
        (15, "Reviewing the report"),
    ];
    for (call, stage) in cases {
        let s = stopped_at_call(call);
        assert_eq!(s.status, RunStatus::Stopped, "stop at call {call}");
        assert_eq!(s.partial, call != 15, "stop at call {call}");
        assert_eq!(
            headings(&s).last().map(String::as_str),
            Some(stage),
            "call {call}"
        );
        match call {
            1 => assert!(s.answer.is_empty()),
            // Cut off while still using tools: what the tools found, as the report.
            6 => {
                assert!(s.answer.starts_with("## The moon\n\n"), "{}", s.answer);
                assert!(s.answer.contains("[1] Tide 1 — https://wiki.test/Tide/1"));
                let cited: Vec<&str> = s.sources.iter().map(|x| x.id.as_str()).collect();
                assert_eq!(cited, ["1", "2"]);
            }
            // Subtopic 1's findings, as the report.
            7 => assert_eq!(
                s.answer,
                "## The moon\n\nSubtopic 1: the moon pulls the oceans [1] [p1]."
            ),
            // The synthesis, unreviewed: the unsupported claim stays, its made-up citation
            // does not.
            14 => {
                assert!(s.answer.contains("## Synthesis"));
                assert!(
                    s.answer.ends_with("The sun is made of cheese."),
                    "{}",
                    s.answer
                );
            }
            // The review's reply came: its fix is applied.
            _ => {
                assert!(s.answer.contains("## Synthesis"));
                assert!(!s.answer.contains("cheese"));
            }
        }
    }
}

#[test]
fn bad_subtopic_counts_are_refused_with_a_clear_error() {
    let w = world(ResearchScript::new(&SUBTOPICS));
    for n in [0, 1, 7, 100] {
        let reply = w.research(n);
        assert_eq!(reply["ok"], false);
        assert_eq!(reply["error"]["kind"], "bad_request");
        assert_eq!(
            reply["error"]["message"],
            format!("Subtopics must be 2 to 6, not {n}.")
        );
    }
    assert!(w.requests().is_empty());
}

#[test]
fn the_orchestration_reads_only_the_phase_result() {
    // A compile-time property: `PhaseResult` has exactly these three fields (an added
    // token or cost field breaks this pattern), and `advance` takes nothing else.
    let result = PhaseResult {
        final_text: r#"{"subtopics": ["A", "a", "B", "C"]}"#.into(),
        tool_calls: Vec::new(),
        stop_reason: StopReason::Done,
    };
    let PhaseResult {
        final_text: _,
        tool_calls: _,
        stop_reason: _,
    } = &result;
    let mut run = ResearchRun::new(2);
    let directive = research::advance(&mut run, QUESTION, &result);
    assert_eq!(
        run.subtopics
            .iter()
            .map(|s| s.title.as_str())
            .collect::<Vec<_>>(),
        ["A", "B"]
    );
    assert!(matches!(directive, Directive::Run(plan) if plan.stage == Stage::Research(0)));
}

#[test]
fn the_review_fixes_an_unsupported_claim_once() {
    let report =
        format!("## A\nThe moon pulls [1].\n\n## Synthesis\nTides follow the moon. {UNSUPPORTED}");
    let reply = json!({"fixes": [
        {"find": UNSUPPORTED, "replace": ""},
        {"find": "not in the report", "replace": "x"},
        {"find": "## A", "replace": ""},
    ]});
    let fixes = research::fixes(&reply.to_string());
    assert_eq!(fixes.len(), 3);
    let (fixed, applied) = research::apply_fixes(&report, &fixes);
    assert_eq!(applied, 1);
    assert_eq!(
        fixed,
        "## A\nThe moon pulls [1].\n\n## Synthesis\nTides follow the moon."
    );
    // Not JSON: no fixes.
    assert!(research::fixes("Looks fine to me.").is_empty());
}

#[test]
fn a_question_after_research_is_an_ordinary_run_with_the_report_as_a_turn() {
    let w = world_with(ResearchScript::new(&SUBTOPICS), searching(), |r, _| {
        (!r.messages
            .iter()
            .any(|m| m.content.contains("Research mode")))
        .then(|| Reply::text("Because of the moon."))
    });
    w.research(2);
    let report = w.stored().answer;
    let reply = w.ask(json!({
        "id": 2, "type": "ask", "session": SESSION, "question": "And why twice a day?", "tab_id": 1,
    }));
    assert_eq!(reply["ok"], true, "{reply}");
    let s = w.stored();
    assert_eq!(s.status, RunStatus::Completed);
    assert_eq!(s.answer, "Because of the moon.");
    assert_eq!(s.research, None);
    assert!(headings(&s).is_empty());
    assert_eq!(s.turns.len(), 1);
    assert_eq!(s.turns[0].answer, report);
}

#[test]
fn each_context_label_has_its_own_prompt_cache_key() {
    let w = world(ResearchScript::new(&SUBTOPICS));
    w.research(2);
    // The stage of each request, by its opening instruction (grading and rewrite calls of
    // a search belong to the subtopic that searched).
    let mut by_stage: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    let mut stage = String::new();
    for request in w.requests() {
        let open = opening(&request);
        if open.contains("Research mode") {
            stage = match knowledgelens::testing::research::subtopic_number(open) {
                Some(n) => format!("subtopic {n}"),
                None if open.contains("Split the question") => "decompose".into(),
                None if open.contains("Write the report") => "synthesis".into(),
                None => "review".into(),
            };
        }
        let key = request
            .cache_key
            .clone()
            .expect("every request has a cache key");
        by_stage.entry(stage.clone()).or_default().insert(key);
    }
    assert_eq!(by_stage.len(), 5, "{by_stage:?}");
    // One key per stage (the same in all of a subtopic's rounds), and no two stages share one.
    let keys: std::collections::BTreeSet<&String> = by_stage
        .values()
        .map(|k| {
            assert_eq!(k.len(), 1, "{by_stage:?}");
            k.iter().next().unwrap()
        })
        .collect();
    assert_eq!(keys.len(), 5);
}

#[test]
fn a_subtopic_that_hits_its_bound_keeps_what_it_found() {
    // Subtopic 1's model never stops calling tools: three rounds, then the next subtopic.
    let w = world_with(
        ResearchScript::new(&["The moon", "The sun"]),
        searching(),
        |r, _| {
            let open = knowledgelens::testing::research::opening(r);
            (open.contains("Research subtopic 1 ") && !r.tools.is_empty()).then(|| {
                let n = r.messages.iter().filter(|m| m.role == Role::Tool).count();
                Reply::tool("query_page", &format!(r#"{{"query": "moon {n}"}}"#))
            })
        },
    );
    w.research(2);
    let s = w.stored();
    assert_eq!(s.status, RunStatus::Completed);
    assert!(!s.partial, "a bound reached is not a cut");
    let run = s.research.as_ref().unwrap();
    assert_eq!(
        run.subtopics[0].stop_reason,
        Some(StopReason::MaxIterations)
    );
    // Its findings are its three page queries' results.
    let found = &run.subtopics[0].findings;
    assert_eq!(found.matches("passage for \"moon").count(), 3, "{found}");
    assert_eq!(run.subtopics[1].stop_reason, Some(StopReason::Done));
    assert!(headings(&s).contains(&"Reviewing the report".to_string()));
}

#[test]
fn the_stage_schemas_parse_and_bound_what_they_ask_for() {
    use knowledgelens::agent::step::research::prompt::{format, MAX_SUBTOPIC_CHARS};
    use knowledgelens::state::research::MAX_SUBTOPICS;
    let subtopics = format(Stage::Decompose).expect("decompose asks for JSON");
    assert_eq!(subtopics.name, "subtopics");
    let list = &subtopics.schema["properties"]["subtopics"];
    assert_eq!(list["maxItems"], MAX_SUBTOPICS);
    assert_eq!(list["items"]["maxLength"], MAX_SUBTOPIC_CHARS);
    let review = format(Stage::Review).expect("review asks for JSON");
    assert_eq!(review.schema["required"], json!(["fixes"]));
    assert_eq!(
        review.schema["properties"]["fixes"]["items"]["required"],
        json!(["find", "replace"])
    );
    assert!(format(Stage::Research(0)).is_none());
    assert!(format(Stage::Synthesize).is_none());
}
