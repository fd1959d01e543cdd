//! Migrations of stored session records, one function per schema step, applied in order to
//! the record's JSON until it is current. A record from a newer version is never guessed at
//! (see [`super::load`]).
//!
//! | version | layout |
//! | --- | --- |
//! | 1 | one record per session: the whole state, trajectory and page text inline; trajectory items and `next` internally tagged (`{"type": "thought", ...}`, `{"phase": "act", ...}`) |
//! | 2 | a head record plus the page text and each trajectory entry under their own keys; items and `next` externally tagged (`{"thought": {...}}`, `{"act": {...}}`) |
//! | 3 | as 2; a tool with side effects that began is `{"act": {"call": ..., "started": true}}` (version 2 inferred it from `attempts > 0`); `rev`, `seq`, queued tool calls, bounded phases and their contexts |

use serde_json::{Map, Value};

use super::{SessionState, StateError, SCHEMA_VERSION};

/// The migration from version `n` to `n + 1` is `STEPS[n - 1]`. Each works on the full state
/// as JSON (trajectory and page text inline).
const STEPS: [fn(Value) -> Result<Value, String>; 1] = [v1_to_v2];

/// Brings a full-state record of `version` to the current schema and decodes it.
pub fn to_current(mut value: Value, version: u32) -> Result<SessionState, StateError> {
    if version == 0 || version > SCHEMA_VERSION {
        return Err(StateError::Corrupted(format!(
            "no migration from schema {version}"
        )));
    }
    for step in &STEPS[(version - 1) as usize..] {
        value = step(value).map_err(StateError::Corrupted)?;
    }
    // The decoder of current records, on the migrated value.
    let mut state = <SessionState as kljson::FromJson>::from_json(value)
        .map_err(|e| StateError::Corrupted(format!("after migration: {e}")))?;
    v2_to_v3(&mut state);
    Ok(state)
}

/// Version 2 -> 3, on the decoded head (the layout did not change): version 2 marked a
/// begun side effect by `attempts > 0` during `Act`; version 3 says so in `started`, and
/// `attempts` counts the attempts of a model call or, during `Act`, of a tool retried.
pub fn v2_to_v3(state: &mut SessionState) {
    state.version = SCHEMA_VERSION;
    if let Some(super::Next::Act { started, .. }) = &mut state.next {
        if state.attempts > 0 {
            *started = true;
            state.attempts = 0;
        }
    }
}

/// Version 1 -> 2: externally tagged trajectory items and `next`.
fn v1_to_v2(mut value: Value) -> Result<Value, String> {
    let obj = value
        .as_object_mut()
        .ok_or("a session record must be an object")?;
    obj.insert("version".into(), Value::from(2));
    if let Some(next) = obj.get_mut("next") {
        if let Value::Object(fields) = next {
            let mut fields = std::mem::take(fields);
            let phase = fields
                .remove("phase")
                .and_then(|p| p.as_str().map(str::to_string))
                .ok_or("`next` has no phase")?;
            *next = if fields.is_empty() {
                Value::String(phase)
            } else {
                tagged(phase, fields)
            };
        }
    }
    if let Some(Value::Array(entries)) = obj.get_mut("trajectory") {
        for entry in entries {
            let fields = entry
                .as_object_mut()
                .ok_or("a trajectory entry must be an object")?;
            let kind = fields
                .remove("type")
                .and_then(|t| t.as_str().map(str::to_string))
                .ok_or("a trajectory entry has no type")?;
            let mut item = Map::new();
            for key in fields.keys().cloned().collect::<Vec<_>>() {
                if key != "step" && key != "at_ms" {
                    if let Some(v) = fields.remove(&key) {
                        item.insert(key, v);
                    }
                }
            }
            fields.insert("item".into(), tagged(kind, item));
        }
    }
    Ok(value)
}

fn tagged(tag: String, fields: Map<String, Value>) -> Value {
    let mut outer = Map::new();
    outer.insert(tag, Value::Object(fields));
    Value::Object(outer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::trajectory::Item;
    use crate::state::{Next, RunStatus};

    /// A record as version 1 wrote it (taken from a real run of that build).
    const V1: &str = r#"{"version":1,"session":"tab:3","run_id":1,"status":"running",
      "next":{"phase":"act","call":{"id":"call_1","name":"read_page","arguments":"{\"offset\":0}"}},
      "attempts":0,"question":"Why tides?","page":{"title":"Tides","url":"http://127.0.0.1/t","text":"The moon pulls."},
      "notices":[],"config":{"max_steps":5,"max_retries":3,"token_budget":32000,"warning_ratio":0.8,"max_output_tokens":1024,
      "backoff_base_ms":500,"backoff_max_ms":8000,"stream":true,"constrained_output":true,"page_excerpt_chars":6000},
      "step":1,"usage":{"input":120,"output":9},"model_calls":1,"budget_warned":false,"answer":"","partial":false,"error":null,
      "trajectory":[{"step":1,"at_ms":5,"type":"thought","text":"Let me read."},
                    {"step":1,"at_ms":5,"type":"tool_call","call":{"id":"call_1","name":"read_page","arguments":"{\"offset\":0}"}}],
      "turns":[],"started_at":1,"updated_at":5,"ended_at":null}"#;

    #[test]
    fn v1_records_migrate_to_a_valid_current_state() {
        let value: Value = serde_json::from_str(V1).expect("fixture");
        let state = to_current(value, 1).expect("migrates");
        assert_eq!(state.version, SCHEMA_VERSION);
        assert_eq!(state.status, RunStatus::Running);
        assert!(
            matches!(&state.next, Some(Next::Act { call, started: false }) if call.name == "read_page")
        );
        assert_eq!(state.trajectory.len(), 2);
        assert_eq!(state.trajectory[0].item, Item::thought("Let me read."));
        assert!(
            matches!(&state.trajectory[1].item, Item::ToolCall { call } if call.id == "call_1")
        );
        assert_eq!(
            state.page.as_ref().map(|p| p.text.as_str()),
            Some("The moon pulls.")
        );
    }

    #[test]
    fn a_v2_side_effect_that_began_is_marked_started_in_v3() {
        let value: Value = serde_json::from_str(V1).expect("fixture");
        let mut state = to_current(value, 1).expect("migrates");
        // As version 2 saved an action with side effects that had begun.
        state.version = 2;
        state.attempts = 1;
        v2_to_v3(&mut state);
        assert_eq!(state.version, SCHEMA_VERSION);
        assert_eq!(state.attempts, 0);
        assert!(matches!(&state.next, Some(Next::Act { started: true, .. })));
        // A model phase keeps its attempts.
        state.version = 2;
        state.next = Some(Next::Observe);
        state.attempts = 2;
        v2_to_v3(&mut state);
        assert_eq!((state.attempts, state.next), (2, Some(Next::Observe)));
    }

    #[test]
    fn unit_phases_and_unknown_versions() {
        let mut value: Value = serde_json::from_str(V1).expect("fixture");
        value["next"] = kljson::json!({"phase": "observe"});
        assert_eq!(
            to_current(value.clone(), 1).expect("migrates").next,
            Some(Next::Observe)
        );
        assert!(matches!(
            to_current(value.clone(), 0),
            Err(StateError::Corrupted(_))
        ));
        value["trajectory"][0] = kljson::json!({"step": 1, "at_ms": 1});
        assert!(
            matches!(to_current(value, 1), Err(StateError::Corrupted(m)) if m.contains("no type"))
        );
    }
}
