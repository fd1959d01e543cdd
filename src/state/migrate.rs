//! Migrations of stored session records, one function per schema step, applied in order to
//! the record's JSON until it is current. A record from a newer version is never guessed at
//! (see [`super::load`]).
//!
//! | version | layout |
//! | --- | --- |
//! | 1 | one record per session: the whole state, trajectory and page text inline; trajectory items and `next` internally tagged (`{"type": "thought", ...}`, `{"phase": "act", ...}`) |
//! | 2 | a head record plus the page text and each trajectory entry under their own keys; items and `next` externally tagged (`{"thought": {...}}`, `{"act": {...}}`) |
//! | 3 | as 2; a tool with side effects that began is `{"act": {"call": ..., "started": true}}` (version 2 inferred it from `attempts > 0`); `rev`, `seq`, queued tool calls, bounded phases and their contexts |
//! | 4 | as 3; the capabilities' fields in sub-records: `input` (`pending`, `kept_answers`; were `pending_input`, `kept_answers`), `compact` (`compaction`, `last_prompt_tokens`, `prompt_scale_pct`, `overflow_limit`), `phases` (`run`, `contexts`, `resets`; were `phase`, `contexts`, `context_resets`) |
//! | 5 | as 4; a conversation's added pages (`added`: id, title, URL, site, tab, the base and count of its passage numbers, whether removed), left out while empty |

use serde_json::{Map, Value};

use super::{SessionState, StateError, SCHEMA_VERSION};

/// The migration from version `n` to `n + 1` is `STEPS[n - 1]`. Each works on the state as
/// JSON: a version 1 record (trajectory and page text inline), or from version 2 on the
/// head record's `state` (the steps from 2 on touch neither).
const STEPS: [fn(Value) -> Result<Value, String>; 4] = [v1_to_v2, v2_to_v3, v3_to_v4, v4_to_v5];

/// Brings the state JSON of `version` to the current schema (its `version` included).
pub fn upgrade(mut value: Value, version: u32) -> Result<Value, String> {
    if version == 0 || version > SCHEMA_VERSION {
        return Err(format!("no migration from schema {version}"));
    }
    for step in &STEPS[(version - 1) as usize..] {
        value = step(value)?;
    }
    Ok(value)
}

/// Brings a full-state record of `version` to the current schema and decodes it.
pub fn to_current(value: Value, version: u32) -> Result<SessionState, StateError> {
    let value = upgrade(value, version).map_err(StateError::Corrupted)?;
    // The decoder of current records, on the migrated value.
    <SessionState as kljson::FromJson>::from_json(value)
        .map_err(|e| StateError::Corrupted(format!("after migration: {e}")))
}

/// The state object of `value`, with its `version` set to `version`.
fn object(value: &mut Value, version: u32) -> Result<&mut Map<String, Value>, String> {
    let obj = value
        .as_object_mut()
        .ok_or("a session record must be an object")?;
    obj.insert("version".into(), Value::from(version));
    Ok(obj)
}

/// Version 2 -> 3 (the layout did not change): version 2 marked a begun side effect by
/// `attempts > 0` during `Act`; version 3 says so in `started`, and `attempts` counts the
/// attempts of a model call or, during `Act`, of a tool retried.
fn v2_to_v3(mut value: Value) -> Result<Value, String> {
    let obj = object(&mut value, 3)?;
    let attempts = obj.get("attempts").and_then(Value::as_u64).unwrap_or(0);
    if attempts > 0 {
        if let Some(Value::Object(act)) = obj.get_mut("next").and_then(|n| n.get_mut("act")) {
            act.insert("started".into(), Value::Bool(true));
            obj.insert("attempts".into(), Value::from(0));
        }
    }
    Ok(value)
}

/// Version 3 -> 4: the capabilities' flat fields move into their sub-records (`input`,
/// `compact`, `phases`), under the sub-records' names; a sub-record none of whose fields
/// was saved is left out, as version 4 writes it.
fn v3_to_v4(mut value: Value) -> Result<Value, String> {
    let obj = object(&mut value, 4)?;
    let moves: [(&str, &[(&str, &str)]); 3] = [
        (
            "input",
            &[
                ("pending_input", "pending"),
                ("kept_answers", "kept_answers"),
            ],
        ),
        (
            "compact",
            &[
                ("compaction", "compaction"),
                ("last_prompt_tokens", "last_prompt_tokens"),
                ("prompt_scale_pct", "prompt_scale_pct"),
                ("overflow_limit", "overflow_limit"),
            ],
        ),
        (
            "phases",
            &[
                ("phase", "run"),
                ("contexts", "contexts"),
                ("context_resets", "resets"),
            ],
        ),
    ];
    for (record, fields) in moves {
        let mut moved = Map::new();
        for (old, new) in fields {
            match obj.remove(*old) {
                None | Some(Value::Null) => {}
                Some(v) => {
                    moved.insert((*new).to_string(), v);
                }
            }
        }
        if !moved.is_empty() {
            obj.insert(record.to_string(), Value::Object(moved));
        }
    }
    Ok(value)
}

/// Version 4 -> 5: questions across pages add a field, absent in a conversation that
/// added no page, so only the version changes.
fn v4_to_v5(mut value: Value) -> Result<Value, String> {
    object(&mut value, 5)?;
    Ok(value)
}

/// Version 1 -> 2: externally tagged trajectory items and `next`.
fn v1_to_v2(mut value: Value) -> Result<Value, String> {
    let obj = object(&mut value, 2)?;
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
        let mut value: Value = serde_json::from_str(V1).expect("fixture");
        value = v1_to_v2(value).expect("v2");
        // As version 2 saved an action with side effects that had begun.
        value["attempts"] = Value::from(1);
        let state = to_current(value.clone(), 2).expect("migrates");
        assert_eq!(state.version, SCHEMA_VERSION);
        assert_eq!(state.attempts, 0);
        assert!(matches!(&state.next, Some(Next::Act { started: true, .. })));
        // A model phase keeps its attempts.
        value["next"] = Value::from("observe");
        value["attempts"] = Value::from(2);
        let state = to_current(value, 2).expect("migrates");
        assert_eq!((state.attempts, state.next), (2, Some(Next::Observe)));
    }

    #[test]
    fn v3_fields_move_into_the_capabilities_sub_records() {
        let mut value: Value = serde_json::from_str(V1).expect("fixture");
        value = v1_to_v2(value).expect("v2");
        value = v2_to_v3(value).expect("v3");
        value["kept_answers"] = kljson::json!(["metric units"]);
        value["last_prompt_tokens"] = Value::from(900);
        value["overflow_limit"] = Value::from(0);
        value["context_resets"] = kljson::json!({"": 2});
        let state = to_current(value, 3).expect("migrates");
        assert_eq!(state.version, SCHEMA_VERSION);
        assert_eq!(state.input.kept_answers, ["metric units"]);
        assert_eq!(state.input.pending, None);
        assert_eq!(state.compact.last_prompt_tokens, 900);
        assert_eq!(state.compact.compaction, None);
        assert_eq!(state.phases.resets.get(""), Some(&2));
        assert!(state.phases.run.is_none());
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
