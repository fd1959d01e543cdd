//! Selection actions through the worker's request handling: `run_action` with each built-in
//! action sends that action's template with the selection and its context inside the run's
//! fence, and no tools; Explain through `run_action` is the explanation, byte for byte;
//! Translate goes into the language asked for (English by default); the run records its
//! action in the saved session, and a worker stopped mid-action resumes it with the same
//! request; unknown and malformed ids are refused; the finished turn keeps the action's name.

use std::collections::BTreeMap;
use std::rc::Rc;

use futures::executor::block_on;
use knowledgelens::actions::{self, TEMPLATES};
use knowledgelens::ports::StateStore;
use knowledgelens::service::{Ports, Service};
use knowledgelens::testing::{
    FixedModel, ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm, StaticPages,
};
use knowledgelens::tools::ToolBox;
use knowledgelens::types::{ChatRequest, PageInfo};
use serde_json::{json, Value};

struct Harness {
    service: Rc<Service>,
    llm: Rc<ScriptedLlm>,
}

fn harness(replies: Vec<Reply>, sessions: Rc<MemoryStore>) -> Harness {
    let llm = Rc::new(ScriptedLlm::new(replies));
    let mut pages = BTreeMap::new();
    pages.insert(
        12,
        PageInfo {
            title: "Tides".into(),
            url: "http://127.0.0.1/tides".into(),
            text: "The moon pulls the oceans. Spring tides follow full moons.".into(),
            lang: "en".into(),
            ..Default::default()
        },
    );
    let ports = Ports {
        capture: Rc::new(knowledgelens::ports::NoCapture),
        sessions: sessions.clone(),
        settings: Rc::new(MemoryStore::new()),
        clock: ManualClock::new(5_000),
        events: Rc::new(RecordingSink::default()),
        pages: Rc::new(StaticPages(pages)),
        models: Rc::new(FixedModel(llm.clone())),
        random: Rc::new(knowledgelens::testing::SeededRandom::new(13)),
        search: Rc::new(knowledgelens::testing::NoSearch),
    };
    Harness {
        service: Service::with_tools(ports, ToolBox::builtin()),
        llm,
    }
}

fn call(h: &Harness, request: Value) -> Value {
    let (reply, run) = block_on(h.service.handle_json(request));
    if let Some(run) = run {
        block_on(run);
    }
    reply
}

const SELECTED: &str = "Spring tides follow full moons.";
const PARAGRAPH: &str = "Spring tides follow full moons and new moons, when the sun pulls too.";

fn action_request(action: &str, language: Option<&str>) -> Value {
    let mut request = json!({"id": 3, "type": "run_action", "session": "tab:12", "tab_id": 12,
        "max_steps": 5, "action": action, "selection": {
            "text": SELECTED, "full_length": SELECTED.chars().count(), "context": PARAGRAPH,
            "headings": ["Tides", "Causes"], "title": "Tides", "url": "http://127.0.0.1/tides",
            "lang": "en"}});
    if let Some(language) = language {
        request["language"] = json!(language);
    }
    request
}

/// The first line of a built-in action's request section: what the model is asked.
fn instruction(id: &str) -> String {
    let template = TEMPLATES
        .iter()
        .find(|t| t.file == format!("{id}.tpl"))
        .expect("a built-in template")
        .load()
        .expect("it loads");
    let content = &template.section("request").expect("a request").content;
    content.lines().next().expect("a line").to_string()
}

/// The fence tag of the run (the system message names it).
fn fence_tag(request: &ChatRequest) -> String {
    let system = &request.messages[0].content;
    let start = system.find("<page-").expect("the fence is named") + 1;
    let end = start + system[start..].find('>').expect("a tag");
    system[start..end].to_string()
}

#[test]
fn each_built_in_action_sends_its_template_with_the_selection_and_context_fenced() {
    for (id, _) in actions::BUILTIN
        .iter()
        .filter(|(id, _)| *id != actions::EXPLAIN)
    {
        let h = harness(vec![Reply::text("Done.")], Rc::new(MemoryStore::new()));
        let reply = call(&h, action_request(id, Some("French")));
        assert_eq!(reply["ok"], true, "{id}: {reply}");
        assert_eq!(reply["data"]["question"], SELECTED);
        let requests = h.llm.requests.borrow();
        assert_eq!(requests.len(), 1, "{id}: one request and its answer");
        let request = &requests[0];
        assert!(request.tools.is_empty(), "{id}: offered tools");
        let tag = fence_tag(request);
        let last = &request.messages.last().expect("messages").content;
        let mut expected = instruction(id);
        if *id == "translate" {
            expected = expected.replace("{{target_language}}", "French");
        }
        assert!(
            last.starts_with(&expected),
            "{id}: the request is not its template:\n{last}"
        );
        assert!(
            last.contains(&format!("<{tag}>\n{SELECTED}\n</{tag}>")),
            "{id}: the selection is not fenced:\n{last}"
        );
        assert!(
            last.contains(&format!(
                "<{tag}>\nHeadings: Tides > Causes\n{PARAGRAPH}\n</{tag}>"
            )),
            "{id}: the context is not fenced:\n{last}"
        );
        assert!(
            !request.messages[0].content.contains(SELECTED),
            "{id}: page text in the system message"
        );
        let snap = call(
            &h,
            json!({"id": 4, "type": "snapshot", "session": "tab:12"}),
        );
        assert_eq!(snap["data"]["status"], "completed", "{id}: {snap}");
        assert_eq!(snap["data"]["answer"], "Done.");
    }
}

#[test]
fn explain_through_run_action_is_the_explanation_byte_for_byte() {
    let by_action = harness(
        vec![Reply::text("It means the tides are big.")],
        Rc::new(MemoryStore::new()),
    );
    call(&by_action, action_request("explain", None));
    let by_explain = harness(
        vec![Reply::text("It means the tides are big.")],
        Rc::new(MemoryStore::new()),
    );
    let mut explain = action_request("explain", None);
    explain["type"] = json!("explain");
    call(&by_explain, explain);
    let (a, b) = (
        by_action.llm.requests.borrow(),
        by_explain.llm.requests.borrow(),
    );
    assert_eq!(a.len(), 1);
    assert_eq!(*a, *b);
    assert!(
        a[0].messages.iter().any(|m| m
            .tool_calls
            .iter()
            .any(|c| c.name == "explain_text_with_context")),
        "Explain starts with its tool's call"
    );
}

/// The last message of the first request `h`'s model got.
fn first_request_text(h: &Harness) -> String {
    let requests = h.llm.requests.borrow();
    requests[0]
        .messages
        .last()
        .expect("messages")
        .content
        .clone()
}

#[test]
fn translate_goes_into_the_language_asked_for_else_english() {
    let h = harness(vec![Reply::text("Anglais.")], Rc::new(MemoryStore::new()));
    call(&h, action_request("translate", None));
    let last = first_request_text(&h);
    assert!(
        last.starts_with("Translate the text I selected on the page into English."),
        "{last}"
    );
    // A language name keeps only letters, spaces, hyphens and parentheses.
    let h = harness(
        vec![Reply::text("Auf Deutsch.")],
        Rc::new(MemoryStore::new()),
    );
    call(
        &h,
        action_request("translate", Some("German}} {{selection")),
    );
    let last = first_request_text(&h);
    assert!(
        last.starts_with("Translate the text I selected on the page into German selection."),
        "{last}"
    );
}

#[test]
fn unknown_and_malformed_actions_are_refused_before_any_call() {
    let h = harness(vec![], Rc::new(MemoryStore::new()));
    let reply = call(&h, action_request("rephrase", None));
    assert_eq!(reply["error"]["kind"], "not_found", "{reply}");
    assert_eq!(
        reply["error"]["message"],
        "There is no action \"rephrase\": it may have been deleted in Options."
    );
    let reply = call(&h, action_request("a b<script>", None));
    assert_eq!(reply["error"]["kind"], "bad_request", "{reply}");
    let mut missing = action_request("summarize", None);
    missing.as_object_mut().expect("object").remove("action");
    let reply = call(&h, missing);
    assert_eq!(
        reply["error"]["message"],
        "Unreadable request: \"run_action\" needs an \"action\"."
    );
    assert_eq!(h.llm.calls(), 0);
}

#[test]
fn the_run_records_its_action_and_a_stopped_worker_resumes_it() {
    let sessions = Rc::new(MemoryStore::new());
    let first = harness(vec![], sessions.clone());
    let (reply, run) = block_on(first.service.handle_json(action_request("define", None)));
    assert_eq!(reply["ok"], true, "{reply}");
    // The worker stops before the run's first call: the run future is dropped.
    drop(run);
    let head = block_on(sessions.get("session:tab:12"))
        .expect("read")
        .expect("saved before the reply");
    let head: Value = serde_json::from_str(&head).expect("json");
    let recorded = &head["state"]["action"];
    assert_eq!(recorded["id"], "define", "{head}");
    assert_eq!(recorded["name"], "Define");
    assert_eq!(
        recorded["target_language"], "English",
        "what the request rendered with is recorded"
    );

    let second = harness(
        vec![Reply::text("Spring tide: a big tide.")],
        sessions.clone(),
    );
    let runs = block_on(second.service.resume_all());
    assert_eq!(runs.len(), 1, "the stopped run resumes");
    for run in runs {
        block_on(run);
    }
    let requests = second.llm.requests.borrow();
    assert_eq!(requests.len(), 1);
    let last = &requests[0].messages.last().expect("messages").content;
    assert!(last.starts_with(&instruction("define")), "{last}");
    assert!(requests[0].tools.is_empty());
    drop(requests);
    let snap = call(
        &second,
        json!({"id": 4, "type": "snapshot", "session": "tab:12"}),
    );
    assert_eq!(snap["data"]["answer"], "Spring tide: a big tide.", "{snap}");
}

#[test]
fn a_later_question_sees_the_action_turn_by_its_name() {
    let h = harness(
        vec![Reply::text("Short."), Reply::text("Yes.")],
        Rc::new(MemoryStore::new()),
    );
    call(&h, action_request("summarize", None));
    let ask = call(
        &h,
        json!({"id": 8, "type": "ask", "session": "tab:12", "question": "Is that all?", "tab_id": 12}),
    );
    assert_eq!(ask["ok"], true, "{ask}");
    let requests = h.llm.requests.borrow();
    let tag = fence_tag(&requests[1]);
    let turn =
        format!("Summarize: the text I selected on the page:\n<{tag}>\n{SELECTED}\n</{tag}>");
    assert!(
        requests[1].messages.iter().any(|m| m.content == turn),
        "{:#?}",
        requests[1].messages
    );
}

fn panel(h: &Harness, request: Value, tab: Option<i64>) -> Value {
    let (reply, run) = block_on(h.service.handle_panel(&request.to_string(), tab));
    if let Some(run) = run {
        block_on(run);
    }
    reply.to_value()
}

#[test]
fn the_panel_runs_another_action_on_its_runs_selection_in_its_own_tab_only() {
    let h = harness(
        vec![
            Reply::text("Big tides."),
            Reply::text("Marées de vives-eaux."),
        ],
        Rc::new(MemoryStore::new()),
    );
    let first = call(&h, action_request("explain", None));
    assert_eq!(first["data"]["run"], 1, "{first}");
    let ask = |tab: Option<i64>, run: u32, action: &str| {
        panel(
            &h,
            json!({"id": 2, "type": "run_action", "session": "tab:12", "run": run,
                   "action": action, "language": "French"}),
            tab,
        )
    };
    let other_tab = ask(Some(13), 1, "translate");
    assert_eq!(other_tab["error"]["kind"], "forbidden", "{other_tab}");
    let not_its_run = ask(Some(12), 7, "translate");
    assert_eq!(not_its_run["error"]["kind"], "not_found", "{not_its_run}");
    let unknown = ask(Some(12), 1, "rephrase");
    assert_eq!(unknown["error"]["kind"], "not_found", "{unknown}");
    assert_eq!(h.llm.calls(), 1, "refusals make no call");

    let reply = ask(Some(12), 1, "translate");
    assert_eq!(reply["ok"], true, "{reply}");
    assert_eq!(
        reply["data"]["run"], 2,
        "the panel follows the new run by its id"
    );
    assert_eq!(
        reply["data"]["actions"],
        json!([{"id": "summarize", "name": "Summarize"}, {"id": "translate", "name": "Translate"},
               {"id": "define", "name": "Define"}, {"id": "simplify", "name": "Simplify"}]),
        "the panel's buttons: the built-ins but Explain"
    );
    let requests = h.llm.requests.borrow();
    let last = &requests[1].messages.last().expect("messages").content;
    assert!(
        last.starts_with("Translate the text I selected on the page into French."),
        "{last}"
    );
    assert!(
        last.contains(SELECTED),
        "the selection kept in the worker: {last}"
    );
    drop(requests);
    // The earlier run is over: the panel may not start from it again.
    let again = ask(Some(12), 1, "define");
    assert_eq!(again["error"]["kind"], "not_found", "{again}");
}

fn custom(name: &str, template: &str) -> Value {
    json!({"name": name, "template": template})
}

/// The default list with `extra` (user actions) after the built-ins.
fn list_with(extra: Vec<Value>) -> Value {
    let mut actions: Vec<Value> = actions::BUILTIN
        .iter()
        .map(|(id, name)| json!({"id": id, "name": name}))
        .collect();
    actions.extend(extra);
    json!({"version": 1, "actions": actions})
}

fn check(h: &Harness, list: Value) -> Vec<(Option<u64>, String, String)> {
    let reply = call(
        h,
        json!({"id": 1, "type": "check_actions", "actions": list}),
    );
    assert_eq!(reply["ok"], true, "{reply}");
    reply["data"]["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            (
                e["index"].as_u64(),
                e["field"].as_str().expect("field").to_string(),
                e["message"].as_str().expect("message").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_user_action_is_checked_field_by_field() {
    let h = harness(vec![], Rc::new(MemoryStore::new()));
    assert!(check(
        &h,
        list_with(vec![custom(
            "Quiz me",
            "Ask me three questions about {{selection}}."
        )])
    )
    .is_empty());
    let cases = [
        (custom("Quiz", "About {{selection}} in {{langauge}}."), "template",
         "Unknown placeholder {{langauge}}: use {{selection}}, {{context}}, {{title}}, {{page_language}} or {{target_language}}."),
        (custom("Quiz", "Ask me about the page."), "template",
         "The template needs {{selection}}: where the selected text goes."),
        (custom("Quiz", &format!("{{{{selection}}}} {}", "x".repeat(4_000))), "template",
         "The template is too long: 4014 characters, at most 4000."),
        (custom("Quiz", "About {{ selection }}."), "template",
         "\"{{ selection }}\" is not a placeholder: write one as {{selection}} (lowercase, in double braces)."),
        (custom("  ", "{{selection}}"), "name", "Give the action a name."),
        (custom("summarize", "{{selection}}"), "name",
         "\"summarize\" is already the name of an action: choose another."),
    ];
    for (action, field, message) in cases {
        let errors = check(&h, list_with(vec![action.clone()]));
        assert_eq!(
            errors,
            vec![(Some(5), field.to_string(), message.to_string())],
            "{action}"
        );
    }
    // Two user actions named alike, case aside: the second is the one marked.
    let errors = check(
        &h,
        list_with(vec![
            custom("Quiz", "{{selection}}"),
            custom("QUIZ", "{{selection}}"),
        ]),
    );
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].0, Some(6));
    // A built-in cannot be deleted or renamed; at most 30 actions.
    let mut list = list_with(vec![]);
    list["actions"].as_array_mut().expect("list").remove(1);
    list["actions"][1]["name"] = json!("Translation");
    let errors = check(&h, list);
    assert_eq!(
        errors[0].2,
        "Summarize is built in: it can be hidden, not deleted (Reset brings it back)."
    );
    assert_eq!(
        errors[1],
        (
            Some(1),
            "name".to_string(),
            "A built-in action keeps its name (Translate).".to_string()
        )
    );
    let many = (0..26)
        .map(|i| custom(&format!("A{i}"), "{{selection}}"))
        .collect();
    let errors = check(&h, list_with(many));
    assert_eq!(
        errors,
        vec![(
            None,
            "list".to_string(),
            "At most 30 actions: delete one first.".to_string()
        )]
    );
}

#[test]
fn saved_actions_are_versioned_and_a_custom_one_runs_with_the_selection_fenced() {
    let h = harness(
        vec![Reply::text("Q1? Q2? Q3?")],
        Rc::new(MemoryStore::new()),
    );
    // Nothing saved: the built-ins.
    let got = call(&h, json!({"id": 1, "type": "get_actions"}));
    assert_eq!(
        got["data"]["actions"]["actions"]
            .as_array()
            .expect("list")
            .len(),
        5
    );
    // An invalid list is refused with its first problem, and nothing is saved.
    let refused = call(
        &h,
        json!({"id": 2, "type": "save_actions",
        "actions": list_with(vec![custom("Quiz me", "{{title}} only")])}),
    );
    assert_eq!(refused["error"]["message"],
        "Quiz me: The template needs {{selection}}: where the selected text goes. Nothing was saved.");
    let saved = call(
        &h,
        json!({"id": 3, "type": "save_actions", "actions": list_with(vec![
        custom("Quiz me", "Ask me three questions about {{selection}} (from {{title}}, in {{page_language}}).")])}),
    );
    assert_eq!(saved["ok"], true, "{saved}");
    assert_eq!(saved["data"]["actions"]["actions"][5]["id"], "custom-1");
    assert_eq!(saved["data"]["actions"]["version"], 1);
    let reply = call(&h, action_request("custom-1", None));
    assert_eq!(reply["ok"], true, "{reply}");
    let requests = h.llm.requests.borrow();
    let tag = fence_tag(&requests[0]);
    let last = &requests[0].messages.last().expect("messages").content;
    assert_eq!(
        last,
        &format!("Ask me three questions about <{tag}>\n{SELECTED}\n</{tag}> (from <{tag}>\nTides\n</{tag}>, in en).")
    );
    assert!(requests[0].tools.is_empty());
}

#[test]
fn a_version_0_list_migrates_and_a_newer_record_is_not_guessed_at() {
    use knowledgelens::actions::store::{ActionsRecord, RecordError};
    let migrated =
        ActionsRecord::parse(r#"[{"name": "Quiz me", "template": "About {{selection}}"}]"#)
            .expect("a bare list is version 0");
    assert_eq!(migrated.version, 1);
    assert_eq!(migrated.actions.len(), 6);
    assert_eq!(migrated.actions[5].id, "custom-1");
    assert!(migrated.actions[5].menu && migrated.actions[5].popup && migrated.actions[5].panel);
    assert!(migrated.check().is_empty());
    assert_eq!(
        ActionsRecord::parse(r#"{"version": 2, "actions": []}"#),
        Err(RecordError::Newer(2))
    );
    assert!(matches!(
        ActionsRecord::parse("{oops"),
        Err(RecordError::Unreadable(_))
    ));
}

#[test]
fn an_exported_file_is_read_for_confirmation_and_never_saved_by_reading_it() {
    let h = harness(vec![], Rc::new(MemoryStore::new()));
    let file = list_with(vec![
        json!({"id": "custom-4", "name": "Quiz me", "template": "About {{selection}}"}),
        custom("Later", "Later: {{selection}}"),
    ]);
    let reply = call(
        &h,
        json!({"id": 1, "type": "import_actions", "text": file.to_string()}),
    );
    assert_eq!(reply["ok"], true, "{reply}");
    let actions = &reply["data"]["actions"]["actions"];
    assert_eq!(actions[5]["id"], "custom-4");
    assert_eq!(
        actions[6]["id"], "custom-5",
        "a new action gets the next id"
    );
    assert_eq!(reply["data"]["errors"], json!([]));
    // Not saved: the list is still the built-ins.
    let got = call(&h, json!({"id": 2, "type": "get_actions"}));
    assert_eq!(
        got["data"]["actions"]["actions"]
            .as_array()
            .expect("list")
            .len(),
        5
    );
    // A file with a problem comes back with it, to show before anything is saved.
    let bad = list_with(vec![custom("Broken", "{{nope}}")]);
    let reply = call(
        &h,
        json!({"id": 3, "type": "import_actions", "text": bad.to_string()}),
    );
    assert_eq!(reply["data"]["errors"][0]["field"], "template", "{reply}");
    for (text, message) in [
        ("not json", "The saved actions are unreadable (expected ident at line 1 column 2): choose a file that Export actions made."),
        (r#"{"version": 7, "actions": []}"#, "The saved actions were written by a newer version of KnowledgeLens (schema 7): choose a file that Export actions made."),
    ] {
        let reply = call(&h, json!({"id": 4, "type": "import_actions", "text": text}));
        assert_eq!(reply["error"]["message"], message, "{reply}");
    }
    let huge = " ".repeat(300 * 1024);
    let reply = call(&h, json!({"id": 5, "type": "import_actions", "text": huge}));
    assert_eq!(reply["error"]["kind"], "bad_request");
}

/// Ids name the actions in the menu and in `run_action`: an imported file with two actions
/// under one id, or an id that is neither a built-in's nor `custom-<n>`, is refused beside
/// the action's name; a new action after `custom-<largest>` never wraps around to an id in use.
#[test]
fn action_ids_are_unique_and_well_formed() {
    let h = harness(vec![], Rc::new(MemoryStore::new()));
    let with_id =
        |id: &str, name: &str| json!({"id": id, "name": name, "template": "{{selection}}"});
    let errors = check(
        &h,
        list_with(vec![
            with_id("custom-1", "Quiz"),
            with_id("custom-1", "Poem"),
        ]),
    );
    assert_eq!(
        errors,
        vec![(
            Some(6),
            "name".to_string(),
            "Another action above has the same id (custom-1): delete one of them.".to_string()
        )]
    );
    let mut twice = list_with(vec![]);
    let summarize = twice["actions"][1].clone();
    twice["actions"]
        .as_array_mut()
        .expect("list")
        .push(summarize);
    assert_eq!(check(&h, twice)[0].0, Some(5));
    for id in [
        "my action!",
        "custom-0",
        "custom-01",
        "custom-1234567890",
        "custom-",
    ] {
        let errors = check(&h, list_with(vec![with_id(id, "Quiz")]));
        assert_eq!(errors.len(), 1, "{id}: {errors:?}");
        assert_eq!(errors[0].0, Some(5), "{id}");
        assert!(
            errors[0].2.contains("is not custom-<number>"),
            "{id}: {errors:?}"
        );
    }
    // The largest id allowed, then a new action: its id is refused, not a wrapped custom-0/1.
    let file = list_with(vec![
        with_id("custom-999999999", "Quiz"),
        json!({"name": "Poem", "template": "{{selection}}"}),
    ]);
    let reply = call(
        &h,
        json!({"id": 2, "type": "save_actions", "actions": file}),
    );
    assert_eq!(reply["ok"], false, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("custom-1000000000")),
        "{reply}"
    );
}
