//! The one-line messages a failed model call shows in a run: settings that cannot make a
//! request, nothing reachable, no answer in time, an HTTP error status, a context window
//! too small, Chrome's built-in model unavailable. [`super::diagnose`] expands them for
//! Test connection.

use crate::llm::diagnosis::keys;
use crate::llm::local::loopback_origin;
use crate::llm::provider::{Availability, Provider, ProviderConfig};
use crate::llm::{LlmError, LlmErrorKind};

/// Ollama's default port.
const OLLAMA_PORT: &str = ":11434";

/// Who failed, in words: Chrome's built-in model, or the provider's server at its address.
pub(crate) fn where_(config: &ProviderConfig) -> String {
    match config.provider {
        Provider::ChromeBuiltin => "Chrome's built-in model".into(),
        p => format!("the {} server at {}", p.label(), config.base()),
    }
}

pub(super) fn is_ollama(config: &ProviderConfig) -> bool {
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
    if let Some(refused) = keys::insecure_key_error(config) {
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
        .map(|d| keys::scrub(&d, &config.api_key))
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
