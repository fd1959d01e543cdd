//! Every wording of the connection doctor, frozen: the errors a run shows and the
//! diagnoses Test connection shows, for every provider, the usual local servers and remote
//! ones, every error kind, status and the facts the doctor is given
//! (`tests/fixtures/doctor.json`). A change of wording is a change of this file: re-record
//! it with `KL_BLESS=1 cargo test --all-features --test native doctor_texts::` and read the
//! diff.

use knowledgelens::llm::diagnosis::doctor::{self, DoctorContext};
use knowledgelens::llm::diagnosis::keys;
use knowledgelens::llm::provider::Availability;
use knowledgelens::llm::{LlmError, LlmErrorKind, Provider, ProviderConfig};
use serde_json::{json, Value};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/doctor.json");

fn config(provider: Provider, base_url: &str, model: &str, api_key: &str) -> ProviderConfig {
    ProviderConfig {
        provider,
        base_url: base_url.into(),
        model: model.into(),
        api_key: api_key.into(),
        context_window: 0,
    }
}

/// The settings the doctor words differently for.
fn configs() -> Vec<(&'static str, ProviderConfig)> {
    vec![
        (
            "ollama_local",
            config(Provider::Ollama, "http://localhost:11434", "llama3.2", ""),
        ),
        (
            "ollama_remote",
            config(Provider::Ollama, "http://10.0.0.5:11434", "llama3.2", ""),
        ),
        (
            "ollama_v1",
            config(
                Provider::OpenaiCompatible,
                "http://127.0.0.1:11434/v1",
                "llama3.2",
                "",
            ),
        ),
        (
            "lm_studio",
            config(
                Provider::OpenaiCompatible,
                "http://localhost:1234/v1",
                "qwen",
                "",
            ),
        ),
        (
            "llama_cpp",
            config(
                Provider::OpenaiCompatible,
                "http://127.0.0.1:8080/v1",
                "any",
                "",
            ),
        ),
        (
            "vllm",
            config(
                Provider::OpenaiCompatible,
                "http://localhost:8000/v1",
                "m",
                "",
            ),
        ),
        (
            "other_port",
            config(
                Provider::OpenaiCompatible,
                "http://localhost:9999/v1",
                "m",
                "",
            ),
        ),
        (
            "openai",
            config(
                Provider::OpenaiCompatible,
                "https://api.openai.com/v1",
                "gpt-4o-mini",
                "sk-test-0123456789abcdef",
            ),
        ),
        (
            "openai_no_key_model",
            config(
                Provider::OpenaiCompatible,
                "https://api.openai.com/v1",
                "",
                "",
            ),
        ),
        (
            "anthropic",
            config(
                Provider::Anthropic,
                "https://api.anthropic.com/v1",
                "claude-sonnet-4-5",
                "sk-ant-0123456789abcdef",
            ),
        ),
        (
            "anthropic_no_key",
            config(Provider::Anthropic, "https://api.anthropic.com/v1", "", ""),
        ),
        (
            "gemini",
            config(
                Provider::Gemini,
                "https://generativelanguage.googleapis.com/v1beta",
                "gemini-2.5-flash",
                "AIza0123456789abcdef",
            ),
        ),
        (
            "gemini_no_model",
            config(
                Provider::Gemini,
                "https://generativelanguage.googleapis.com/v1beta",
                "",
                "AIza0123456789abcdef",
            ),
        ),
        ("builtin", config(Provider::ChromeBuiltin, "", "", "")),
        (
            "no_base_url",
            config(Provider::OpenaiCompatible, "", "m", ""),
        ),
        (
            "key_in_clear",
            config(
                Provider::OpenaiCompatible,
                "http://example.org/v1",
                "m",
                "sk-0123456789abcdef",
            ),
        ),
    ]
}

fn error(kind: LlmErrorKind, status: Option<u16>, detail: Option<&str>) -> LlmError {
    let mut e = LlmError::new(kind, "the run's message");
    e.status = status;
    e.detail = detail.map(str::to_string);
    e
}

/// The failures the doctor expands (besides the ones made from the config itself).
fn errors(config: &ProviderConfig) -> Vec<(String, LlmError)> {
    let mut out = vec![
        (
            "network".to_string(),
            doctor::network_error(config, "Failed to fetch"),
        ),
        (
            "network_cut_off".to_string(),
            error(
                LlmErrorKind::Network,
                None,
                Some("stream ended without its terminator"),
            ),
        ),
        ("timeout".to_string(), doctor::timeout_error(config, 30_000)),
        (
            "deadline".to_string(),
            error(LlmErrorKind::Deadline, None, None),
        ),
        ("redirect".to_string(), keys::redirect_error(config)),
        (
            "config_200".to_string(),
            error(
                LlmErrorKind::Config,
                Some(200),
                Some("<html>sign in</html>"),
            ),
        ),
        (
            "config".to_string(),
            error(LlmErrorKind::Config, None, None),
        ),
    ];
    for (status, kind) in [
        (400, LlmErrorKind::BadRequest),
        (401, LlmErrorKind::Auth),
        (403, LlmErrorKind::Auth),
        (404, LlmErrorKind::NotFound),
        (429, LlmErrorKind::RateLimited),
        (500, LlmErrorKind::Server),
        (400, LlmErrorKind::ContextTooLong),
    ] {
        for detail in [None, Some("model \"x\" not found, try pulling it first; maximum context length is 8,192 tokens")] {
            let name = format!("http_{status}_{}{}", kind.name(), if detail.is_some() { "_said" } else { "" });
            out.push((name, doctor::http_error(config, "/chat/completions", status, kind, detail.map(str::to_string))));
        }
    }
    for availability in [
        Availability::NoApi,
        Availability::Unavailable,
        Availability::Downloadable,
        Availability::Downloading,
    ] {
        out.push((
            format!("builtin_{availability:?}"),
            doctor::builtin_unavailable(availability),
        ));
    }
    out.push((
        "builtin_too_long".to_string(),
        doctor::builtin_context_too_long("QuotaExceededError".into(), Some(4_096)),
    ));
    if let Some(insecure) = keys::insecure_key_error(config) {
        out.push(("insecure_key".to_string(), insecure));
    }
    out
}

/// The facts the doctor is given, in the combinations that change its words.
fn contexts() -> Vec<(&'static str, DoctorContext)> {
    let models = |m: &[&str]| Some(m.iter().map(|s| s.to_string()).collect());
    vec![
        ("plain", DoctorContext::default()),
        (
            "no_permission",
            DoctorContext {
                host_permission: Some(false),
                ..Default::default()
            },
        ),
        (
            "origin_known",
            DoctorContext {
                extension_origin: "chrome-extension://abcdefghijklmnop".into(),
                origin_rule: Some(true),
                ..Default::default()
            },
        ),
        (
            "rule_refused",
            DoctorContext {
                extension_origin: "chrome-extension://abcdefghijklmnop".into(),
                origin_rule: Some(false),
                ..Default::default()
            },
        ),
        (
            "models_near",
            DoctorContext {
                models: models(&[
                    "llama3.2:latest",
                    "qwen2.5:7b",
                    "claude-sonnet-4",
                    "gemini-2.5-pro",
                ]),
                ..Default::default()
            },
        ),
        (
            "models_far",
            DoctorContext {
                models: models(&["zzz-unrelated", "yyy"]),
                ..Default::default()
            },
        ),
        (
            "models_none",
            DoctorContext {
                models: models(&[]),
                ..Default::default()
            },
        ),
    ]
}

fn rendered() -> String {
    let mut all = Vec::new();
    for (name, config) in configs() {
        let mut cases = serde_json::Map::new();
        cases.insert(
            "config_error_chat".into(),
            json!(doctor::config_error(&config, true).map(|e| e.message)),
        );
        cases.insert(
            "config_error_list".into(),
            json!(doctor::config_error(&config, false).map(|e| e.message)),
        );
        cases.insert(
            "context_message".into(),
            json!([
                doctor::context_message(&config, Some(8_192)),
                doctor::context_message(&config, None)
            ]),
        );
        for (error_name, err) in errors(&config) {
            // The diagnosis with no facts, and with each set of facts where it differs.
            let mut diagnoses = serde_json::Map::new();
            let mut plain = Value::Null;
            for (context_name, ctx) in contexts() {
                let d = serde_json::to_value(doctor::diagnose(&config, &err, &ctx))
                    .expect("a diagnosis serializes");
                if plain.is_null() {
                    plain = d.clone();
                } else if d == plain {
                    continue;
                }
                diagnoses.insert(context_name.into(), d);
            }
            cases.insert(
                error_name,
                json!({"message": err.message, "diagnosis": diagnoses}),
            );
        }
        all.push(json!({"config": name, "cases": cases}));
    }
    let mut text = serde_json::to_string_pretty(&Value::Array(all)).expect("JSON");
    text.push('\n');
    text
}

#[test]
fn the_doctor_says_what_the_fixture_says() {
    let now = rendered();
    if std::env::var_os("KL_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(FIXTURE, &now).expect("write tests/fixtures/doctor.json");
        return;
    }
    let frozen = std::fs::read_to_string(FIXTURE).unwrap_or_default();
    if frozen != now {
        let first = frozen
            .lines()
            .zip(now.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "the doctor's words changed (first at line {}): {:?} -> {:?}. If intended, re-record with KL_BLESS=1 cargo test --all-features --test native doctor_texts:: and read the diff.",
            first + 1,
            frozen.lines().nth(first),
            now.lines().nth(first)
        );
    }
}
