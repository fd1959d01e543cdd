//! The connection doctor: the one place that words model-call failures for users. Each
//! failure becomes an actionable one-line message (what a run shows), and
//! [`diagnose`] expands it into a [`Diagnosis`] with the exact remedy (what "Test
//! connection" shows): Ollama's origin check where the extension's own rule cannot get past
//! it (a server on another computer, a rule Chrome refused), a server that is not running, a missing host
//! permission, a rejected key, a wrong base URL or model name (with the nearest names the
//! server offers), and Chrome's built-in model being unavailable. Pure: the facts it needs
//! (host permission, model list, extension origin) are passed in.

use crate::llm::provider::Availability;
use kljson::ToJson;
use serde::Serialize;

use crate::llm::local::loopback_origin;
use crate::llm::provider::{Provider, ProviderConfig};
use crate::llm::{LlmError, LlmErrorKind};

mod messages;

use messages::is_ollama;
pub use messages::{
    builtin_context_too_long, builtin_unavailable, config_error, context_message, http_error,
    network_error, reported_window, timeout_error,
};
pub(crate) use messages::{capitalized, where_};

/// What `err` is about, when the run or the connection test fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Problem {
    /// Ollama refused the extension's origin (HTTP 403, `OLLAMA_ORIGINS`).
    OllamaOrigin,
    /// Nothing answered: the server is not running or the port is wrong.
    Unreachable,
    /// The extension may not reach that origin yet (a host permission is missing).
    HostPermission,
    /// The key is missing or was rejected.
    Auth,
    /// Wrong base URL or model name.
    NotFound,
    /// The provider is rate limiting.
    RateLimited,
    /// The server failed.
    Server,
    /// The server rejected the request.
    BadRequest,
    /// The request does not fit the model's context window.
    ContextTooLong,
    /// No answer in time.
    Timeout,
    /// The settings are incomplete.
    Config,
    /// Chrome's built-in model cannot run here.
    BuiltinUnavailable,
}

/// A failure explained: the problem, one line to show, and the steps that fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Diagnosis {
    /// What kind of problem it is.
    pub problem: Problem,
    /// One line: what failed and where.
    pub summary: String,
    /// What to do, in order; commands are exact.
    pub steps: Vec<String>,
    /// An origin to request host permission for (the UI shows a button), if that fixes it.
    pub permission_origin: Option<String>,
    /// Model names the server offers that are nearest to the one set.
    pub suggestions: Vec<String>,
    /// What the server itself said, if anything.
    pub detail: Option<String>,
}

/// Facts the doctor cannot know by itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DoctorContext {
    /// `chrome-extension://<id>`, for the exact `OLLAMA_ORIGINS` value.
    pub extension_origin: String,
    /// Whether the extension holds a host permission for the base URL's origin (`None`:
    /// unknown).
    pub host_permission: Option<bool>,
    /// The models the server listed, if it could list them.
    pub models: Option<Vec<String>>,
    /// Whether the browser holds the rule that removes the extension's `Origin` from its
    /// requests to the base URL's origin (`None`: none applies or unknown).
    pub origin_rule: Option<bool>,
}

/// What is left to do after Ollama refused the extension's origin (HTTP 403). On this
/// computer KnowledgeLens sends its requests without the extension's `Origin`, as Ollama's
/// command-line clients do (a browser rule, `rule`: whether Chrome holds it); what remains
/// is a rule Chrome refused, something else checking the origin, or a server elsewhere.
fn ollama_origin_summary(config: &ProviderConfig, rule: Option<bool>, ext: &str) -> String {
    let base = config.base();
    match (loopback_origin(config), rule) {
        (None, _) => format!(
            "Ollama at {base} refused the extension (HTTP 403). KnowledgeLens removes the extension's origin only from its requests to this computer, and this server is on another one, so Ollama there must be told to allow {ext}."
        ),
        (Some(_), Some(false)) => format!(
            "Ollama at {base} refused the extension (HTTP 403). KnowledgeLens tried to send its requests there without the extension's origin, as Ollama's own command-line clients do, but Chrome did not accept the rule, so Ollama must be told to allow {ext}."
        ),
        (Some(origin), _) => format!(
            "Ollama at {base} refused the extension (HTTP 403) although KnowledgeLens already sends its requests to {origin} without the extension's origin, as Ollama's own command-line clients do. Something else checks the origin (a proxy in front of Ollama, or a server that is not Ollama): tell it to allow {ext}."
        ),
    }
}

/// The OS-specific ways to set `OLLAMA_ORIGINS` to `origin`.
fn ollama_origin_steps(origin: &str) -> Vec<String> {
    vec![
        format!("Linux (Ollama as a systemd service): run `sudo systemctl edit ollama.service`, add the two lines `[Service]` and `Environment=\"OLLAMA_ORIGINS={origin}\"`, then run `sudo systemctl daemon-reload && sudo systemctl restart ollama`."),
        format!("Linux or macOS (started by hand): stop it and start it again with `OLLAMA_ORIGINS={origin} ollama serve`."),
        format!("macOS (the Ollama app): run `launchctl setenv OLLAMA_ORIGINS \"{origin}\"`, then quit Ollama from the menu bar and open it again."),
        format!("Windows: run `setx OLLAMA_ORIGINS \"{origin}\"` in a terminal (or add it under Settings → System → About → Advanced system settings → Environment Variables), then quit Ollama from the taskbar and start it again."),
        "Then click Test connection again.".into(),
    ]
}

fn port_of(base_url: &str) -> Option<String> {
    let url = crate::url::parse(base_url.trim()).filter(|url| url.is_web())?;
    url.port_or_default().map(|port| port.to_string())
}

/// How to start the usual local servers, for a base URL nothing answered at.
fn start_server_steps(config: &ProviderConfig) -> Vec<String> {
    let port = port_of(&config.base_url).unwrap_or_default();
    let mut steps = vec![format!(
        "Check that the server is running and listening on port {port} (the Base URL is {}).",
        config.base()
    )];
    match port.as_str() {
        "11434" => {
            steps.push("Ollama: start it with `ollama serve` (or open the Ollama app).".into())
        }
        "1234" => steps.push(
            "LM Studio: open the Developer tab and start the server (it listens on port 1234)."
                .into(),
        ),
        "8080" => {
            steps.push("llama.cpp: start it with `llama-server -m MODEL.gguf --port 8080`.".into())
        }
        "8000" => {
            steps.push("vLLM: start it with `vllm serve MODEL` (it listens on port 8000).".into())
        }
        _ => {}
    }
    steps.push("Then click Test connection again.".into());
    steps
}

/// The model names nearest to `wanted`: names containing it (or contained in it) first,
/// then by edit distance; at most three.
pub fn nearest_models(wanted: &str, models: &[String]) -> Vec<String> {
    let w = wanted.trim().to_ascii_lowercase();
    let base = w.split(':').next().unwrap_or(&w).to_string();
    let mut scored: Vec<(bool, usize, &String)> = models
        .iter()
        .filter(|m| !m.is_empty())
        .map(|m| {
            let l = m.to_ascii_lowercase();
            let l_base = l.split(':').next().unwrap_or(&l);
            let related = !base.is_empty() && (l.contains(&base) || base.contains(l_base));
            (!related, strsim::levenshtein(&w, &l), m)
        })
        .collect();
    crate::types::order::sort(&mut scored);
    let limit = w.chars().count().max(4) / 2;
    scored
        .into_iter()
        .filter(|(unrelated, distance, _)| !unrelated || *distance <= limit)
        .take(3)
        .map(|(_, _, m)| m.clone())
        .collect()
}

/// How the detail of a stream cut off before its terminator starts.
pub(crate) const CUT_OFF: &str = "stream ended without";

/// Expands a failure into the problem and its remedy.
pub fn diagnose(config: &ProviderConfig, err: &LlmError, ctx: &DoctorContext) -> Diagnosis {
    let origin = config.origin();
    let mut d = Diagnosis {
        problem: Problem::BadRequest,
        summary: err.message.clone(),
        steps: Vec::new(),
        permission_origin: None,
        suggestions: Vec::new(),
        detail: err.detail.clone(),
    };
    match err.kind {
        LlmErrorKind::Config
            if crate::llm::diagnosis::keys::insecure_key_error(config).is_some() =>
        {
            d.problem = Problem::Config;
            d.steps = crate::llm::diagnosis::keys::insecure_key_steps(config);
        }
        LlmErrorKind::Config if *err == crate::llm::diagnosis::keys::redirect_error(config) => {
            d.problem = Problem::Config;
            d.steps = vec![
                "Open the Base URL in a browser tab to see where it leads, and set that address as the Base URL.".into(),
                "Then click Test connection again.".into(),
            ];
        }
        LlmErrorKind::Config if err.status == Some(200) => {
            d.problem = Problem::Config;
            d.steps = vec![
                format!("Set the Base URL to the model server's API (for example {}), then click Test connection.", config.provider.default_base_url()),
                "If a proxy or a network sign-in page is in the way, sign in in a tab first.".into(),
            ];
        }
        LlmErrorKind::Config => {
            d.problem = Problem::Config;
            d.steps
                .push("Fill in the missing field above, then click Test connection.".into());
        }
        LlmErrorKind::Deadline => {
            d.problem = Problem::Timeout;
            d.steps = vec!["The server kept the call open past the model call deadline. A slow local model may need a longer \"Model call deadline\" below; otherwise check the server's log.".into()];
        }
        LlmErrorKind::Network
            if err
                .detail
                .as_deref()
                .is_some_and(|t| t.starts_with(CUT_OFF)) =>
        {
            d.problem = Problem::Server;
            d.steps = vec!["The server broke off its reply: try again, and check the server's log if it keeps happening.".into()];
        }
        LlmErrorKind::Unavailable => {
            d.problem = Problem::BuiltinUnavailable;
            d.steps = builtin_steps(Availability::from_api(
                err.detail.as_deref().unwrap_or("unavailable"),
            ));
        }
        LlmErrorKind::Network if ctx.host_permission == Some(false) => {
            let o = origin.clone().unwrap_or_else(|| config.base().to_string());
            d.problem = Problem::HostPermission;
            d.detail = None;
            d.summary = format!(
                "KnowledgeLens may not connect to {o} yet: the browser blocks the request until you allow that site."
            );
            d.steps = vec![
                format!("Click \"Allow access\" and accept Chrome's prompt to let KnowledgeLens reach {o}."),
                "Then click Test connection again.".into(),
            ];
            d.permission_origin = Some(format!("{o}/*"));
        }
        LlmErrorKind::Network => {
            d.problem = Problem::Unreachable;
            // The platform's words ("Failed to fetch") add nothing to the summary.
            d.detail = None;
            d.summary = format!(
                "Nothing answered at {}: the server is not running, or the Base URL's host or port is wrong.",
                origin.as_deref().unwrap_or(config.base())
            );
            d.steps = start_server_steps(config);
        }
        LlmErrorKind::Timeout => {
            d.problem = Problem::Timeout;
            d.steps = vec![
                "The server accepted the connection but did not answer in time. A local model may still be loading: wait a moment and try again.".into(),
                "If it keeps happening, choose a smaller model or check the server's log.".into(),
            ];
        }
        LlmErrorKind::Auth
            if err.status == Some(403) && err.detail.is_none() && is_ollama(config) =>
        {
            let ext = if ctx.extension_origin.is_empty() {
                "chrome-extension://*".to_string()
            } else {
                ctx.extension_origin.clone()
            };
            d.problem = Problem::OllamaOrigin;
            d.summary = ollama_origin_summary(config, ctx.origin_rule, &ext);
            d.steps = ollama_origin_steps(&ext);
            if loopback_origin(config).is_none() {
                d.steps
                    .insert(0, "On the computer that runs Ollama:".into());
            }
        }
        LlmErrorKind::Auth => {
            d.problem = Problem::Auth;
            d.steps = vec![
                match config.provider {
                    Provider::Anthropic => "Create or copy a key at https://console.anthropic.com/settings/keys and paste it under API key.".into(),
                    Provider::Gemini => "Create or copy a key at https://aistudio.google.com/apikey and paste it under API key.".into(),
                    _ if config.base_url.contains("api.openai.com") => "Create or copy a key at https://platform.openai.com/api-keys and paste it under API key.".into(),
                    _ => "Paste the server's API key under API key (local servers usually need none: leave it empty).".into(),
                },
                "Save, then click Test connection again.".into(),
            ];
        }
        LlmErrorKind::NotFound => {
            d.problem = Problem::NotFound;
            match &ctx.models {
                Some(models) if !models.iter().any(|m| m == &config.model) => {
                    d.suggestions = nearest_models(&config.model, models);
                    d.summary = format!(
                        "The server at {} has no model named \"{}\".",
                        config.base(),
                        config.model
                    );
                    d.steps.push(if d.suggestions.is_empty() {
                        format!(
                            "Choose one of the {} models the server offers in the Model list.",
                            models.len()
                        )
                    } else {
                        format!(
                            "Did you mean {}? Choose it in the Model list.",
                            quoted_list(&d.suggestions)
                        )
                    });
                    if is_ollama(config) && models.is_empty() {
                        d.steps.push(format!(
                            "Ollama has no models yet: run `ollama pull {}`.",
                            if config.model.is_empty() {
                                "llama3.2"
                            } else {
                                config.model.as_str()
                            }
                        ));
                    } else if is_ollama(config) {
                        d.steps
                            .push(format!("Or download it: `ollama pull {}`.", config.model));
                    }
                }
                _ => {
                    d.steps.push(match config.provider {
                        Provider::Ollama => "Set the Base URL to the server's root, e.g. http://localhost:11434 (without /v1 or /api).".into(),
                        Provider::OpenaiCompatible => "Set the Base URL to the server's OpenAI-compatible root including the version path, e.g. http://localhost:11434/v1 or https://api.openai.com/v1.".into(),
                        p => format!("Set the Base URL to {} (the default) unless you use a proxy.", p.default_base_url()),
                    });
                    d.steps
                        .push(format!("Check the model name \"{}\".", config.model));
                }
            }
        }
        LlmErrorKind::RateLimited => {
            d.problem = Problem::RateLimited;
            d.steps = vec![
                "Wait a minute and try again; check your plan's limits with the provider.".into(),
            ];
        }
        LlmErrorKind::Server => {
            d.problem = Problem::Server;
            d.steps =
                vec!["The server had an internal error: check its log, or try again later.".into()];
        }
        LlmErrorKind::ContextTooLong => {
            d.problem = Problem::ContextTooLong;
            d.steps = vec![
                "Start a new conversation: the earlier turns no longer fit the model's context window.".into(),
                match config.provider {
                    Provider::ChromeBuiltin => "Or choose a provider whose model has a larger context window.".into(),
                    Provider::Anthropic | Provider::Gemini => "Or choose a model with a larger context window.".into(),
                    _ => "Or raise the Context window in Options (and the server's own context size: Ollama's num_ctx follows it; llama.cpp needs --ctx-size).".into(),
                },
            ];
        }
        LlmErrorKind::BadRequest => {
            d.problem = Problem::BadRequest;
            d.steps = vec!["The server did not accept the request: check the model name and that the provider chosen matches the server.".into()];
        }
    }
    d
}

fn quoted_list(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    match quoted.len() {
        0 => String::new(),
        1 => quoted[0].clone(),
        n => format!("{} or {}", quoted[..n - 1].join(", "), quoted[n - 1]),
    }
}

/// Requirements of Chrome's built-in model, by what the API reported.
fn builtin_steps(availability: Availability) -> Vec<String> {
    match availability {
        Availability::NoApi => vec![
            "Use Google Chrome 138 or newer on Windows 10/11, macOS 13+, Linux, or a Chromebook Plus (Chromium builds without Google's model service do not have it).".into(),
            "Or choose another provider: Ollama runs models on this computer too.".into(),
        ],
        Availability::Downloadable => vec![
            "Click Test connection: Chrome then downloads the model (a few GB, once) and reports progress.".into(),
        ],
        Availability::Downloading => vec![
            "Wait for the download to finish (chrome://on-device-internals shows it), then click Test connection again.".into(),
        ],
        _ => vec![
            "Chrome's built-in model needs at least 22 GB of free space on the disk that holds your Chrome profile.".into(),
            "It needs a GPU with more than 4 GB of video memory, or 16 GB of RAM and 4 or more CPU cores.".into(),
            "The first download needs an unmetered network connection.".into(),
            "chrome://on-device-internals shows what Chrome found on this device.".into(),
        ],
    }
}

#[cfg(test)]
mod tests;
