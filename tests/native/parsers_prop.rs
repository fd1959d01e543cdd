//! Property tests for the parsers of what storage and the pages hand the worker: `Settings`
//! records (any JSON: valid settings within every range, or a clear error; never a panic),
//! the v1 -> v3 migration (a record a v1 build could have saved always comes back valid),
//! and `Request`s (any JSON: the command its `type` names, or a `bad_request`).

use std::collections::BTreeMap;

use knowledgelens::protocol::{ApiErrorKind, Command, Request};
use knowledgelens::settings::{
    Settings, SettingsError, CONTEXT_WINDOW_RANGE, DEFAULT_INPUT_ANSWER_TIMEOUT_SECS,
    INPUT_ANSWER_TIMEOUT_RANGE, MAX_INPUT_TIMEOUT_SECS, SETTINGS_VERSION, TOKEN_BUDGET_RANGE,
};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// Any JSON value (a few levels deep), with strings that look like the values the parsers
/// expect among the random ones.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::from),
        prop::sample::select(vec![
            "popup",
            "tab:3",
            "openai_compatible",
            "http://127.0.0.1:8080/v1",
            "off",
            "wikipedia",
            "expert",
            "\u{FFFD}",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// `valid` most of the time, else any JSON.
fn mostly(valid: impl Strategy<Value = Value> + 'static) -> BoxedStrategy<Value> {
    prop_oneof![6 => valid, 1 => any_json()].boxed()
}

fn strings(options: &[&'static str]) -> impl Strategy<Value = Value> {
    prop::sample::select(options.to_vec()).prop_map(Value::from)
}

fn number(max: u64) -> impl Strategy<Value = Value> {
    prop_oneof![Just(0u64), 0..=max].prop_map(Value::from)
}

/// A settings record: each known field present or not, mostly with a plausible value, plus
/// unknown fields.
fn settings_record() -> impl Strategy<Value = Value> {
    let fields: Vec<(&'static str, BoxedStrategy<Value>)> = vec![
        ("version", mostly(prop_oneof![1u64..=3, 0u64..=9].prop_map(Value::from))),
        (
            "provider",
            mostly(strings(&["openai_compatible", "ollama", "anthropic", "gemini", "chrome_builtin", "mystery"])),
        ),
        (
            "base_url",
            mostly(strings(&["http://localhost:11434/v1", "https://api.example.com/v1/", " http://127.0.0.1:8080 ", "localhost:1", "http://", ""])),
        ),
        ("model", mostly("[ -~]{0,10}".prop_map(Value::from))),
        ("api_key", mostly(".{0,10}".prop_map(Value::from))),
        ("context_window", mostly(number(20_000_000))),
        ("stream", mostly(any::<bool>().prop_map(Value::from))),
        ("token_budget", mostly(number(20_000_000))),
        ("input_ack_timeout_secs", mostly(number(200_000))),
        ("input_answer_timeout_secs", mostly(number(200_000))),
        ("reading_level", mostly(strings(&["simple", "standard", " Expert ", "genius"]))),
        ("compact_at_percent", mostly(number(120))),
        ("search_provider", mostly(strings(&["off", "wikipedia", "searxng", "brave", "tavily", "bing"]))),
        ("search_base_url", mostly(strings(&["", "http://127.0.0.1:8888/", "searx.local", "http://me:pw@host"]))),
        ("search_api_key", mostly(strings(&["", " key ", "k\ney"]))),
        ("search_offered", mostly(any::<bool>().prop_map(Value::from))),
        (
            "prices",
            mostly(
                (any::<Option<u16>>(), any::<Option<u16>>(), any::<Option<u16>>()).prop_map(
                    |(input, output, cached_input)| json!({"input": input, "output": output, "cached_input": cached_input}),
                ),
            ),
        ),
        (
            "profiles",
            mostly(
                prop::collection::btree_map(
                    prop::sample::select(vec!["openai_compatible", "anthropic", "ollama", "nope"]),
                    any_json(),
                    0..3,
                )
                .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
            ),
        ),
    ];
    let present: Vec<_> = fields
        .into_iter()
        .map(|(name, value)| prop::option::weighted(0.7, value).prop_map(move |v| (name, v)))
        .collect();
    (
        present,
        prop::collection::btree_map("[a-z_]{1,8}", any_json(), 0..2),
    )
        .prop_map(|(present, extra)| {
            let mut record: Map<String, Value> = extra.into_iter().collect();
            for (name, value) in present {
                if let Some(value) = value {
                    record.insert(name.to_string(), value);
                }
            }
            Value::Object(record)
        })
}

/// What a v1 build could have saved: one flat OpenAI-compatible provider, every value one
/// its validation accepted (an answer timeout of 0 meant "no limit").
fn v1_record() -> impl Strategy<Value = Value> {
    (
        prop::option::of(Just(1u64)),
        "https?://[a-z]{1,8}(\\.[a-z]{2,3})?(:[0-9]{2,4})?(/v1)?/?",
        "[ -~]{0,16}",
        "[!-~]{0,16}",
        any::<bool>(),
        TOKEN_BUDGET_RANGE.0..=TOKEN_BUDGET_RANGE.1,
        1..=MAX_INPUT_TIMEOUT_SECS,
        prop_oneof![Just(0u64), 0..=MAX_INPUT_TIMEOUT_SECS],
    )
        .prop_map(
            |(version, base_url, model, api_key, stream, budget, ack, answer)| {
                let mut record = json!({
                    "provider": "openai_compatible",
                    "base_url": base_url,
                    "model": model,
                    "api_key": api_key,
                    "stream": stream,
                    "token_budget": budget,
                    "input_ack_timeout_secs": ack,
                    "input_answer_timeout_secs": answer,
                });
                if let Some(v) = version {
                    record["version"] = json!(v);
                }
                record
            },
        )
}

/// Checks that `settings` is within every range and validates again.
fn assert_in_range(settings: &Settings) -> Result<(), TestCaseError> {
    prop_assert_eq!(settings.version, SETTINGS_VERSION);
    let (lo, hi) = TOKEN_BUDGET_RANGE;
    prop_assert!((lo..=hi).contains(&settings.token_budget));
    let (lo, hi) = INPUT_ANSWER_TIMEOUT_RANGE;
    prop_assert!((lo..=hi).contains(&settings.input_answer_timeout_secs));
    prop_assert!((1..=MAX_INPUT_TIMEOUT_SECS).contains(&settings.input_ack_timeout_secs));
    let (lo, hi) = CONTEXT_WINDOW_RANGE;
    prop_assert!(settings.context_window == 0 || (lo..=hi).contains(&settings.context_window));
    prop_assert!((50..=95).contains(&settings.compact_at_percent));
    prop_assert!(["simple", "standard", "expert"].contains(&settings.reading_level.as_str()));
    prop_assert!(!settings.api_key.chars().any(char::is_control));
    prop_assert!(settings.clone().validated().is_ok());
    // What is saved loads back the same.
    let saved = serde_json::to_string(settings).expect("serializes");
    prop_assert_eq!(&Settings::decode(&saved).expect("reloads"), settings);
    let run = settings.run_config(None);
    prop_assert!(run.input_answer_timeout_ms >= 60_000);
    Ok(())
}

fn assert_clear(err: &SettingsError) -> Result<(), TestCaseError> {
    let text = err.to_string();
    prop_assert!(text.starts_with("the saved settings "), "{}", text);
    prop_assert!(text.len() > 30, "{}", text);
    Ok(())
}

/// A request: a known `type` (or another), and each field present or not.
fn request_record() -> impl Strategy<Value = Value> {
    let mut types: Vec<String> = Command::NAMES.iter().map(|s| s.to_string()).collect();
    types.push("mystery".into());
    let fields: Vec<(&'static str, BoxedStrategy<Value>)> = vec![
        ("id", any_json().boxed()),
        (
            "session",
            mostly(strings(&[
                "popup",
                "tab:3",
                "tab:",
                "tab:-1",
                "tab:99999999999999999999",
                "Popup",
            ])),
        ),
        ("question", mostly(".{0,20}".prop_map(Value::from))),
        ("tab_id", mostly(any::<i64>().prop_map(Value::from))),
        ("max_steps", mostly(any::<u32>().prop_map(Value::from))),
        ("settings", mostly(settings_record())),
        ("request_id", mostly("[0-9-]{0,6}".prop_map(Value::from))),
        (
            "answer",
            mostly(strings(&["turn_on", "not_now", "1861", ""])),
        ),
        (
            "conversation",
            mostly(strings(&[
                "conv:tab:3:1",
                "conv:popup:0",
                "conv:x:1",
                "conv:tab:3:",
            ])),
        ),
        (
            "selection",
            mostly((".{0,20}", any::<u16>(), any::<bool>()).prop_map(
                |(text, len, cut)| json!({"text": text, "full_length": len, "truncated": cut}),
            )),
        ),
        ("text", mostly(".{0,20}".prop_map(Value::from))),
    ];
    let present: Vec<_> = fields
        .into_iter()
        .map(|(name, value)| prop::option::weighted(0.6, value).prop_map(move |v| (name, v)))
        .collect();
    (
        prop::option::weighted(
            0.95,
            mostly(prop::sample::select(types).prop_map(Value::from)),
        ),
        present,
    )
        .prop_map(|(kind, present)| {
            let mut record = BTreeMap::new();
            if let Some(kind) = kind {
                record.insert("type".to_string(), kind);
            }
            for (name, value) in present {
                if let Some(value) = value {
                    record.insert(name.to_string(), value);
                }
            }
            Value::Object(record.into_iter().collect())
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn settings_decode_any_record_into_valid_settings_or_a_clear_error(record in settings_record()) {
        match Settings::decode(&record.to_string()) {
            Ok(settings) => assert_in_range(&settings)?,
            Err(err) => assert_clear(&err)?,
        }
    }

    #[test]
    fn settings_decode_any_json_or_text_without_panicking(value in any_json(), text in ".{0,40}") {
        for input in [value.to_string(), text] {
            match Settings::decode(&input) {
                Ok(settings) => assert_in_range(&settings)?,
                Err(err) => assert_clear(&err)?,
            }
        }
    }

    #[test]
    fn every_record_a_v1_build_saved_migrates_to_valid_v3_settings(record in v1_record()) {
        let settings = Settings::decode(&record.to_string());
        prop_assert!(settings.is_ok(), "{record}: {settings:?}");
        let settings = settings.expect("checked");
        assert_in_range(&settings)?;
        let answer = record["input_answer_timeout_secs"].as_u64().expect("set");
        let (lo, hi) = INPUT_ANSWER_TIMEOUT_RANGE;
        let expected = if answer == 0 { DEFAULT_INPUT_ANSWER_TIMEOUT_SECS } else { answer.clamp(lo, hi) };
        prop_assert_eq!(settings.input_answer_timeout_secs, expected);
        prop_assert_eq!(settings.token_budget, record["token_budget"].as_u64().expect("set"));
        let profile = &settings.profiles[&settings.provider];
        prop_assert_eq!(&profile.model, &settings.model);
        prop_assert_eq!(&profile.base_url, &settings.base_url);
    }

    #[test]
    fn a_v1_record_with_any_values_migrates_or_says_why(record in settings_record()) {
        let mut record = record;
        if let Some(obj) = record.as_object_mut() {
            obj.insert("version".into(), json!(1));
        }
        match Settings::decode(&record.to_string()) {
            Ok(settings) => assert_in_range(&settings)?,
            Err(err) => assert_clear(&err)?,
        }
    }

    #[test]
    fn requests_parse_into_the_named_command_or_a_bad_request(record in request_record()) {
        match Request::parse(&record.to_string()) {
            Ok(request) => {
                prop_assert_eq!(Some(request.command.name()), record["type"].as_str());
                // The id comes back as sent (floats only to serde_json's parsing precision;
                // the pages send whole numbers).
                let id = record.get("id").unwrap_or(&Value::Null);
                if !id.is_f64() && !id.to_string().contains('.') {
                    prop_assert_eq!(&request.id, id);
                }
            }
            Err(err) => {
                prop_assert!(
                    matches!(err.kind, ApiErrorKind::BadRequest),
                    "{:?}: {}", err.kind, err.message
                );
                prop_assert!(err.message.len() > 10, "{}", err.message);
            }
        }
    }

    #[test]
    fn requests_of_any_json_or_text_never_panic(value in any_json(), text in ".{0,40}") {
        for input in [value.to_string(), text] {
            if let Err(err) = Request::parse(&input) {
                prop_assert!(matches!(err.kind, ApiErrorKind::BadRequest));
                prop_assert!(!err.message.is_empty());
            }
        }
    }
}
