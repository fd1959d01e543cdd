//! The crate's own types through kljson (crates/kljson, whose tests hold the codec to
//! serde_json): `ToJson` writes them as serde's derived `Serialize` does, and `VecMap`
//! decodes and writes as serde's `BTreeMap` does.

use std::collections::BTreeMap;

use knowledgelens::types::VecMap;

/// A `VecMap` decodes from, and writes, the JSON a `BTreeMap` of the same entries does;
/// a bad value names its key.
#[test]
fn a_vec_map_reads_and_writes_as_a_btree_map() {
    let text = r#"{"b": 2, "a": 1, "c": -3}"#;
    let map: VecMap<String, i64> = kljson::decode(text).expect("decodes");
    let tree: BTreeMap<String, i64> = serde_json::from_str(text).expect("serde");
    assert_eq!(
        kljson::to_string(&map),
        serde_json::to_string(&tree).expect("writes")
    );
    assert_eq!(map.get("c"), Some(&-3));
    let err = kljson::decode::<VecMap<String, i64>>(r#"{"a": 1, "b": "x"}"#).unwrap_err();
    assert!(err.to_string().starts_with("b: invalid type"), "{err}");
    assert!(kljson::decode::<VecMap<String, i64>>("[1]").is_err());
}

/// `ToJson` writes the crate's own values as serde's derived `Serialize` does: a run's
/// state, every trajectory entry and every event of a run with a page, a tool call, a
/// failed call and an answer, and the default settings.
#[test]
fn the_crate_types_are_written_as_serde_writes_them() {
    use kljson::to_string;
    use knowledgelens::agent::config::RunConfig;
    use knowledgelens::agent::{Engine, StopSignal};
    use knowledgelens::settings::Settings;
    use knowledgelens::state::SessionState;
    use knowledgelens::testing::{ManualClock, MemoryStore, RecordingSink, Reply, ScriptedLlm};
    use knowledgelens::tools::ToolBox;
    use knowledgelens::types::PageInfo;

    let llm = ScriptedLlm::new(vec![
        Reply::tool(
            "read_page",
            r#"{"offset": 0, "reasoning": "start at the top"}"#,
        ),
        Reply::tool("read_page", r#"{"offset": "x"}"#),
        Reply::text("Tides follow the moon \"mostly\".\n\tSee [1]."),
    ])
    .lenient();
    let (clock, store, sink, tools) = (
        ManualClock::new(7),
        MemoryStore::new(),
        RecordingSink::default(),
        ToolBox::builtin(),
    );
    let engine = Engine::new(&llm, &clock, &sink, &store, &tools, StopSignal::new());
    let mut state = SessionState::new("tab:4", 0);
    let page = PageInfo {
        title: "Tides – a primer".into(),
        url: "https://example.org/tides?x=1&y=\u{1}".into(),
        text: "The moon pulls the sea.\n\nTwice a day.".into(),
        lang: "en".into(),
        ..Default::default()
    };
    state.begin_run("Why are there tides?", Some(page), RunConfig::default(), 0);
    futures::executor::block_on(engine.drive(&mut state));

    assert_eq!(
        to_string(&state),
        serde_json::to_string(&state).expect("state")
    );
    assert!(state.trajectory.len() >= 4, "{}", state.trajectory.len());
    for entry in &state.trajectory {
        assert_eq!(
            to_string(entry),
            serde_json::to_string(entry).expect("entry")
        );
    }
    let events = sink.events.borrow();
    assert!(events.len() >= 4, "{}", events.len());
    for event in events.iter() {
        assert_eq!(
            to_string(event),
            serde_json::to_string(event).expect("event")
        );
    }
    let settings = Settings::default();
    assert_eq!(
        to_string(&settings),
        serde_json::to_string(&settings).expect("settings")
    );
}
