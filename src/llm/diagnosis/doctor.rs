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

/// Ollama's default port.
const OLLAMA_PORT: &str = ":11434";

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

pub(crate) fn where_(config: &ProviderConfig) -> String {
    match config.provider {
        Provider::ChromeBuiltin => "Chrome's built-in model".into(),
        p => format!("the {} server at {}", p.label(), config.base()),
    }
}

fn is_ollama(config: &ProviderConfig) -> bool {
    config.provider == Provider::Ollama || config.base_url.contains(OLLAMA_PORT)
}

/// An error for settings that cannot make a request, or `None` when they can.
/// `need_model`: a chat call needs a model name; listing models does not.
pub fn config_error(config: &ProviderConfig, need_model: bool) -> Option<LlmError> {
    let err = |m: String| Some(LlmError::new(LlmErrorKind::Config, m));
    if config.provider.uses_http() && config.base_url.trim().is_empty() {
        return err(format!(
            "No {} server is configured: set the Base URL in Options (for example {}).",
            config.provider.label(),
            config.provider.default_base_url()
        ));
    }
    if config.provider.requires_key() && config.api_key.trim().is_empty() {
        return err(format!(
            "{} needs an API key: enter it under API key in Options.",
            config.provider.label()
        ));
    }
    if let Some(refused) = crate::llm::diagnosis::keys::insecure_key_error(config) {
        return Some(refused);
    }
    if need_model && config.provider.uses_http() && config.model.trim().is_empty() {
        let example = match config.provider {
            Provider::Ollama | Provider::OpenaiCompatible if is_ollama(config) => {
                " (for Ollama, e.g. llama3.2)"
            }
            Provider::Anthropic => " (e.g. claude-sonnet-4-5)",
            Provider::Gemini => " (e.g. gemini-2.5-flash)",
            _ => "",
        };
        return err(format!(
            "No model is set: enter the Model name in Options{example}."
        ));
    }
    None
}

/// No HTTP response arrived (refused, DNS, CORS, the body broke off).
pub fn network_error(config: &ProviderConfig, platform: &str) -> LlmError {
    let mut e = LlmError::new(
        LlmErrorKind::Network,
        format!(
            "Could not reach {} ({platform}). Is it running, and is the Base URL in Options right?",
            where_(config)
        ),
    );
    e.detail = (!platform.is_empty()).then(|| platform.to_string());
    e
}

/// No response head within `ms`.
pub fn timeout_error(config: &ProviderConfig, ms: u64) -> LlmError {
    LlmError::new(
        LlmErrorKind::Timeout,
        format!(
            "{} did not answer within {} s.",
            capitalized(&where_(config)),
            ms / 1000
        ),
    )
}

/// `s` with its first letter in upper case (ASCII only: Unicode case tables cost wasm size).
pub(crate) fn capitalized(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => std::iter::once(first.to_ascii_uppercase())
            .chain(chars)
            .collect(),
        None => String::new(),
    }
}

/// An HTTP error status as an actionable error. `kind` is the vendor's reading of the
/// status (most follow [`LlmErrorKind::from_status`]); `detail` is what the server said.
pub fn http_error(
    config: &ProviderConfig,
    endpoint: &str,
    status: u16,
    kind: LlmErrorKind,
    detail: Option<String>,
) -> LlmError {
    // The key is scrubbed before the cut, so no piece of it survives at the end.
    let detail = detail
        .map(|d| crate::llm::diagnosis::keys::scrub(&d, &config.api_key))
        .map(|d| d.trim().chars().take(300).collect::<String>())
        .filter(|d| !d.is_empty());
    let said = detail
        .as_deref()
        .map(|d| format!(" The server said: {d}"))
        .unwrap_or_default();
    let message = match kind {
        LlmErrorKind::Auth if status == 403 && detail.is_none() && is_ollama(config) => {
            if loopback_origin(config).is_some() {
                format!(
                    "Ollama at {} refused the extension (HTTP 403) although KnowledgeLens sends its requests there without the extension's origin: allow the origin with OLLAMA_ORIGINS and restart Ollama (Options → Test connection shows how).",
                    config.base()
                )
            } else {
                format!(
                    "Ollama at {} refused the extension (HTTP 403): KnowledgeLens removes its origin only from requests to this computer, so allow it with OLLAMA_ORIGINS on that machine and restart Ollama (Options → Test connection shows how).",
                    config.base()
                )
            }
        }
        LlmErrorKind::Auth if status == 403 && detail.is_none() => format!(
            "{} refused the request (HTTP 403). If it is Ollama, allow the extension's origin (set OLLAMA_ORIGINS=chrome-extension://* and restart Ollama); otherwise check the API key in Options.",
            capitalized(&where_(config))
        ),
        LlmErrorKind::Auth if config.api_key.trim().is_empty() => format!(
            "{} needs an API key (HTTP {status}): enter it under API key in Options.{said}",
            capitalized(&where_(config))
        ),
        LlmErrorKind::Auth => format!(
            "The API key was rejected (HTTP {status}): check the API key in Options.{said}"
        ),
        LlmErrorKind::NotFound => format!(
            "The server answered 404 for {endpoint}: check the Base URL in Options{} and the model name \"{}\".{said}",
            match config.provider {
                Provider::Ollama => " (the server root, e.g. http://localhost:11434)",
                Provider::OpenaiCompatible => " (it must include the version path, e.g. /v1)",
                _ => "",
            },
            config.model
        ),
        LlmErrorKind::RateLimited => {
            format!("The provider is rate limiting requests (HTTP {status}).{said}")
        }
        LlmErrorKind::Server => format!("The model server failed (HTTP {status}).{said}"),
        LlmErrorKind::Timeout => format!("The model server timed out (HTTP {status}).{said}"),
        LlmErrorKind::ContextTooLong => {
            context_message(config, detail.as_deref().and_then(reported_window))
        }
        _ => format!("The model server rejected the request (HTTP {status}).{said}"),
    };
    LlmError {
        kind,
        message,
        status: Some(status),
        retry_after_ms: None,
        detail,
    }
}

/// The wording of a request the model's context window cannot hold: the window the
/// provider reported (`window`), else the one in effect for `config`, and what to do.
pub fn context_message(config: &ProviderConfig, window: Option<u64>) -> String {
    let window = window
        .or_else(|| Some(u64::from(config.context_window())))
        .filter(|&w| w > 0);
    let size = window
        .map(|w| format!(" ({} tokens)", crate::types::tokens::grouped(w)))
        .unwrap_or_default();
    let remedy = match config.provider {
        Provider::ChromeBuiltin => "Start a new conversation.",
        Provider::Anthropic | Provider::Gemini => {
            "Start a new conversation or choose a model with a larger context window in Options."
        }
        _ => "Start a new conversation or raise the Context window in Options.",
    };
    format!("The conversation no longer fits the model's context window{size}. {remedy}")
}

/// The context window a provider named in its "too long" message, if it did: OpenAI's
/// "maximum context length is M tokens", llama.cpp's "context size (M tokens)",
/// Anthropic's "N tokens > M maximum", Gemini's "tokens allowed (M)".
pub fn reported_window(detail: &str) -> Option<u64> {
    let lower = detail.to_ascii_lowercase();
    [
        "maximum context length is ",
        "context size (",
        " tokens > ",
        "tokens allowed (",
    ]
    .iter()
    .find_map(|marker| {
        let rest = &lower[lower.find(marker)? + marker.len()..];
        let digits: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    })
}

/// A request Chrome's built-in model refused as too long for its context window: `window`
/// is the session's window in tokens when the Prompt API reported it.
pub fn builtin_context_too_long(detail: String, window: Option<u64>) -> LlmError {
    let config = ProviderConfig {
        provider: Provider::ChromeBuiltin,
        ..Default::default()
    };
    let mut e = LlmError::new(
        LlmErrorKind::ContextTooLong,
        context_message(&config, window),
    );
    e.detail = Some(detail);
    e
}

/// Why Chrome's built-in model cannot answer, from what the Prompt API reported:
/// no `LanguageModel` here, or an `availability()` value.
pub fn builtin_unavailable(availability: Availability) -> LlmError {
    let message = match availability {
        Availability::NoApi => "This browser does not offer its built-in model to extensions (Chrome's Prompt API, Chrome 138 or newer on Windows, macOS, Linux or a Chromebook Plus). Choose another provider in Options.",
        Availability::Downloadable => "Chrome's built-in model is not downloaded yet: open Options and click Test connection to start the download.",
        Availability::Downloading => "Chrome's built-in model is still downloading: try again when it is done (chrome://on-device-internals shows the progress).",
        _ => "Chrome reports that its built-in model is unavailable on this device (see Options → Test connection for its requirements). Choose another provider in Options.",
    };
    let mut e = LlmError::new(LlmErrorKind::Unavailable, message);
    e.detail = Some(availability.name().to_string());
    e
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
