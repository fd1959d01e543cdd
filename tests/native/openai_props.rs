//! Property tests of the OpenAI-compatible parsers on arbitrary input: the reply, error and
//! model-list parsers and the stream accumulator never panic, whatever text or JSON a server
//! sends (large tool-call indexes included), and what they return stays within what was
//! sent. Wire format: <https://platform.openai.com/docs/api-reference/chat>.

use knowledgelens::llm::formats::openai::{
    parse_error, parse_models, parse_response, StreamAccumulator, MAX_STREAMED_TOOL_CALLS,
};
use knowledgelens::llm::{LlmErrorKind, ProviderConfig};
use proptest::prelude::*;
use serde_json::{json, Value};

/// Any JSON value, a few levels deep, with the keys the parsers look for mixed in.
fn any_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("choices".to_string()),
        Just("delta".to_string()),
        Just("message".to_string()),
        Just("content".to_string()),
        Just("tool_calls".to_string()),
        Just("index".to_string()),
        Just("function".to_string()),
        Just("name".to_string()),
        Just("arguments".to_string()),
        Just("usage".to_string()),
        Just("prompt_tokens".to_string()),
        Just("error".to_string()),
        Just("data".to_string()),
        Just("id".to_string()),
        "[a-z_]{1,8}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(key.clone(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A streamed chunk whose tool calls carry any index (most of them huge).
fn tool_chunk() -> impl Strategy<Value = Value> {
    (
        proptest::collection::vec(
            (
                prop_oneof![0u64..80, any::<u64>()],
                proptest::option::of("[a-z_]{0,6}"),
                ".{0,8}",
            ),
            0..4,
        ),
        proptest::option::of(".{0,8}"),
    )
        .prop_map(|(calls, content)| {
            let calls: Vec<Value> = calls
                .into_iter()
                .map(|(index, name, args)| json!({"index": index, "function": {"name": name, "arguments": args}}))
                .collect();
            json!({"choices": [{"index": 0, "delta": {"tool_calls": calls, "content": content}}]})
        })
}

fn config() -> ProviderConfig {
    ProviderConfig::openai("http://127.0.0.1:9/v1", "tiny", "")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any text as a reply body: parsed or refused, never a panic.
    #[test]
    fn the_reply_parser_takes_any_text(body in ".{0,200}") {
        let _ = parse_response(&body);
    }

    /// Any JSON as a reply body: the tool calls it yields all have names.
    #[test]
    fn the_reply_parser_takes_any_json(value in any_json()) {
        if let Ok(reply) = parse_response(&value.to_string()) {
            prop_assert!(reply.tool_calls.iter().all(|c| !c.name.is_empty()));
        }
    }

    /// Any status and body: an error of the status's kind (or a context overflow) with a
    /// message to show.
    #[test]
    fn the_error_parser_takes_any_status_and_body(
        status in 100u16..600,
        body in prop_oneof![".{0,120}", any_json().prop_map(|v| v.to_string())],
    ) {
        let err = parse_error(&config(), status, &body);
        prop_assert!(!err.message.is_empty());
        prop_assert!(
            err.kind == LlmErrorKind::from_status(status) || err.kind == LlmErrorKind::ContextTooLong,
            "{:?} for {}", err.kind, status
        );
    }

    /// Any JSON as a model list: only ids that were in the body come out.
    #[test]
    fn the_model_list_parser_takes_any_json(value in any_json(), ids in proptest::collection::vec("[a-z0-9.-]{1,10}", 0..4)) {
        let text = value.to_string();
        if let Ok(models) = parse_models(&text) {
            prop_assert!(models.iter().all(|m| text.contains(&Value::from(m.as_str()).to_string())));
        }
        let listed = json!({"object": "list", "data": ids.iter().map(|id| json!({"id": id})).collect::<Vec<_>>()});
        prop_assert_eq!(parse_models(&listed.to_string()).expect("a list"), ids);
    }

    /// Any sequence of chunks, any JSON or text: at most the cap of tool calls, an index past
    /// the cap is an error, never a panic or an allocation sized by the stream.
    #[test]
    fn the_stream_accumulator_takes_any_chunks(
        chunks in proptest::collection::vec(
            prop_oneof![
                tool_chunk(),
                any_json(),
                ".{0,20}".prop_map(Value::from),
            ],
            0..8,
        ),
    ) {
        let mut acc = StreamAccumulator::new();
        for chunk in &chunks {
            let payload = match chunk {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let too_big = chunk["choices"][0]["delta"]["tool_calls"]
                .as_array()
                .is_some_and(|calls| calls.iter().any(|c| c["index"].as_u64().is_some_and(|i| i >= MAX_STREAMED_TOOL_CALLS)));
            match acc.apply(&payload) {
                // A chunk may also carry an `error` (reported before its tool calls are read).
                Err(err) => prop_assert!(
                    err.message.contains("at most 64") || err.message.contains("reported an error"),
                    "{}", err.message
                ),
                Ok(_) => prop_assert!(!too_big, "an index past the cap was taken"),
            }
        }
        let reply = acc.finish();
        prop_assert!(reply.tool_calls.len() <= MAX_STREAMED_TOOL_CALLS as usize);
        prop_assert!(reply.tool_calls.iter().all(|c| !c.name.is_empty()));
    }
}
