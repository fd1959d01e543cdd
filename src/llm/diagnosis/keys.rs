//! Keeping API keys where they belong, for model calls: the refusal to send a key over plain
//! `http://` to a host that is not this computer, the error for a redirect on a request that
//! carries a key, and the scrub of the configured key out of everything a model server says
//! before it reaches a message, the trajectory or the export (the text functions themselves
//! are in [`crate::types::secrets`]). Pure: no browser access.

use crate::llm::provider::ProviderConfig;
use crate::llm::{ChatResponse, LlmError, LlmErrorKind};
#[cfg(doc)]
use crate::ports::LlmClient;
pub use crate::types::secrets::{insecure_key_message, key_in_clear, scrub, DeltaScrub, KEY_MARK};

/// The refusal for a key that would travel in clear text (`None` when it would not):
/// why, and the two ways out.
pub fn insecure_key_error(config: &ProviderConfig) -> Option<LlmError> {
    if !config.provider.uses_http() || !key_in_clear(&config.base_url, &config.api_key) {
        return None;
    }
    Some(LlmError::new(
        LlmErrorKind::Config,
        insecure_key_message(&config.base_url, "API key"),
    ))
}

/// What to do about a key refused by [`insecure_key_error`] (the connection test's steps).
pub fn insecure_key_steps(config: &ProviderConfig) -> Vec<String> {
    // The address as the browser reads it, with `https` for `http`.
    let https = crate::url::parse(config.base())
        .filter(|url| url.scheme == "http")
        .map_or_else(
            || config.base().to_string(),
            |url| format!("https{}", &url.href[4..]),
        );
    vec![
        format!("If the server offers HTTPS, change the Base URL to {https}."),
        "If the server needs no key, clear the API key field.".into(),
        "Then click Test connection again.".into(),
    ]
}

/// The error for a request that carries a key and was answered with a redirect: the key
/// is not sent on to wherever the redirect points. A settings problem (never retried: the
/// server will redirect again).
pub fn redirect_error(config: &ProviderConfig) -> LlmError {
    LlmError::new(
        LlmErrorKind::Config,
        format!(
            "The server at {} answered with a redirect to another address. KnowledgeLens does not follow redirects on requests that carry an API key, so the key was not sent there. Set the Base URL in Options to the final address (often https:// instead of http://, or a different path).",
            config.base()
        ),
    )
}

/// `err` with `key` scrubbed from its message and the server's words.
pub fn scrub_error(mut err: LlmError, key: &str) -> LlmError {
    err.message = scrub(&err.message, key);
    err.detail = err.detail.map(|d| scrub(&d, key));
    err
}

/// `reply` with `key` scrubbed from its text and tool calls.
pub fn scrub_response(mut reply: ChatResponse, key: &str) -> ChatResponse {
    reply.content = scrub(&reply.content, key);
    for call in &mut reply.tool_calls {
        call.name = scrub(&call.name, key);
        call.arguments = scrub(&call.arguments, key);
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Provider;

    #[test]
    fn the_refusal_says_why_and_what_to_do() {
        let config = ProviderConfig::openai("http://192.168.1.5:8000/v1", "m", "sk-secret");
        let err = insecure_key_error(&config).expect("refused");
        assert_eq!(err.kind, LlmErrorKind::Config);
        for needle in [
            "http://192.168.1.5:8000",
            "plain http://",
            "https://",
            "remove",
        ] {
            assert!(err.message.contains(needle), "{needle}: {}", err.message);
        }
        assert!(!err.message.contains("sk-secret"));
        let steps = insecure_key_steps(&config).join(" ");
        assert!(steps.contains("https://192.168.1.5:8000/v1"), "{steps}");
        let builtin = ProviderConfig {
            provider: Provider::ChromeBuiltin,
            api_key: "k".into(),
            base_url: "http://example.com".into(),
            ..Default::default()
        };
        assert!(insecure_key_error(&builtin).is_none());
    }
}
