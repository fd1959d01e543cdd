//! Model servers on this computer: the usual ports to look for them at ([`USUAL_SERVERS`]),
//! and the loopback origin a provider setting reaches ([`loopback_origin`]), for which the
//! browser layer removes the extension's `Origin` header (see docs/security.md, "Local
//! model servers"). Pure: no browser access.

use kljson::{FromJson, ToJson};
use serde::Serialize;

use crate::llm::provider::{Provider, ProviderConfig};

/// A model server the setup card and Options look for on this computer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToJson, FromJson)]
pub struct LocalServer {
    /// Its name as users know it ("Ollama", "LM Studio").
    pub name: String,
    /// The provider that speaks its API.
    pub provider: Provider,
    /// The port it listens on at 127.0.0.1.
    pub port: u16,
}

impl LocalServer {
    /// The Base URL to save for it: the server root for Ollama's native API, `/v1` for an
    /// OpenAI-compatible one.
    pub fn base_url(&self) -> String {
        match self.provider {
            Provider::OpenaiCompatible => format!("http://127.0.0.1:{}/v1", self.port),
            _ => format!("http://127.0.0.1:{}", self.port),
        }
    }
}

/// The usual local servers, by their default ports: Ollama (native API, `GET /api/tags`:
/// <https://docs.ollama.com/api/tags>), LM Studio, llama.cpp's `llama-server` and vLLM
/// (OpenAI-compatible, `GET /v1/models`). The test build adds its scripted servers
/// (`pkg-scripts/lib/test-hooks.js`, read by `web::api`).
pub const USUAL_SERVERS: [(&str, Provider, u16); 4] = [
    ("Ollama", Provider::Ollama, 11434),
    ("LM Studio", Provider::OpenaiCompatible, 1234),
    ("llama.cpp", Provider::OpenaiCompatible, 8080),
    ("vLLM", Provider::OpenaiCompatible, 8000),
];

/// [`USUAL_SERVERS`] as values.
pub fn usual_servers() -> Vec<LocalServer> {
    USUAL_SERVERS
        .iter()
        .map(|&(name, provider, port)| LocalServer {
            name: name.into(),
            provider,
            port,
        })
        .collect()
}

/// The origin `config` reaches when it is a server on this computer (`http://` to a
/// loopback host, as the browser reads the address), else `None`.
pub fn loopback_origin(config: &ProviderConfig) -> Option<String> {
    if !config.provider.uses_http() {
        return None;
    }
    crate::url::parse(config.base_url.trim())
        .filter(|url| url.scheme == "http" && url.is_loopback() && !url.host.is_empty())
        .map(|url| url.origin())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(provider: Provider, base_url: &str) -> ProviderConfig {
        ProviderConfig {
            provider,
            base_url: base_url.into(),
            ..Default::default()
        }
    }

    #[test]
    fn only_plain_http_to_this_computer_is_a_loopback_origin() {
        let origin = |p, u| loopback_origin(&config(p, u));
        assert_eq!(
            origin(Provider::Ollama, "http://127.0.0.1:11434").as_deref(),
            Some("http://127.0.0.1:11434")
        );
        assert_eq!(
            origin(Provider::OpenaiCompatible, "http://localhost:1234/v1").as_deref(),
            Some("http://localhost:1234")
        );
        assert_eq!(origin(Provider::Ollama, "http://192.168.1.5:11434"), None);
        assert_eq!(origin(Provider::Ollama, "https://localhost:11434"), None);
        assert_eq!(
            origin(
                Provider::OpenaiCompatible,
                "http://evil.example\\@127.0.0.1/v1"
            ),
            None
        );
        assert_eq!(origin(Provider::ChromeBuiltin, "http://127.0.0.1:1"), None);
    }

    #[test]
    fn base_urls_follow_the_provider() {
        let servers = usual_servers();
        assert_eq!(servers[0].base_url(), "http://127.0.0.1:11434");
        assert_eq!(servers[1].base_url(), "http://127.0.0.1:1234/v1");
    }
}
