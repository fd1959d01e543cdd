//! Which model providers KnowledgeLens speaks to, what each can do, and the settings that
//! reach one. Pure data: the wire formats live in [`super::formats`], the transport in
//! [`super::transport`]. Nothing here touches the browser.

use serde::Serialize;

use kljson::{FromJson, ToJson};

/// A provider's wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Default)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// OpenAI-compatible chat completions: OpenAI, OpenRouter, Groq, LM Studio, llama.cpp's
    /// server, vLLM, Ollama's `/v1`.
    #[default]
    OpenaiCompatible,
    /// Ollama's native `/api/chat`.
    Ollama,
    /// Anthropic's Messages API.
    Anthropic,
    /// Google's Gemini API.
    Gemini,
    /// Chrome's built-in model (the Prompt API): no key, nothing leaves the machine.
    ChromeBuiltin,
}

// Declaration order is the order the options page lists them (`Provider::ALL`).
kljson::named_enum!(Provider {
    OpenaiCompatible = "openai_compatible",
    Ollama = "ollama",
    Anthropic = "anthropic",
    Gemini = "gemini",
    ChromeBuiltin = "chrome_builtin",
});

impl Provider {
    /// The name shown to users.
    pub fn label(self) -> &'static str {
        match self {
            Self::OpenaiCompatible => "OpenAI-compatible",
            Self::Ollama => "Ollama",
            Self::Anthropic => "Anthropic",
            Self::Gemini => "Gemini",
            Self::ChromeBuiltin => "Chrome built-in",
        }
    }

    /// The base URL a new setup starts from (empty for the built-in model).
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::OpenaiCompatible => "http://localhost:11434/v1",
            Self::Ollama => "http://localhost:11434",
            Self::Anthropic => "https://api.anthropic.com/v1",
            Self::Gemini => "https://generativelanguage.googleapis.com/v1beta",
            Self::ChromeBuiltin => "",
        }
    }

    /// Whether the provider is reached over HTTP (all but the built-in model).
    pub fn uses_http(self) -> bool {
        self != Self::ChromeBuiltin
    }

    /// Whether requests fail without an API key.
    pub fn requires_key(self) -> bool {
        matches!(self, Self::Anthropic | Self::Gemini)
    }

    /// Whether the provider can list its models.
    pub fn lists_models(self) -> bool {
        self.uses_http()
    }

    /// What the provider can do with `model`.
    pub fn capabilities(self, model: &str) -> Capabilities {
        let context_window = default_context_window(self, model);
        let images = reads_images(self, model);
        match self {
            Self::OpenaiCompatible => Capabilities {
                native_tools: true,
                constrained_output: true,
                streaming: true,
                images,
                context_window,
            },
            Self::Ollama => Capabilities {
                native_tools: true,
                constrained_output: true,
                streaming: true,
                images,
                context_window,
            },
            Self::Anthropic => Capabilities {
                native_tools: true,
                constrained_output: false,
                streaming: true,
                images,
                context_window,
            },
            Self::Gemini => Capabilities {
                native_tools: true,
                constrained_output: true,
                streaming: true,
                images,
                context_window,
            },
            Self::ChromeBuiltin => Capabilities {
                native_tools: false,
                constrained_output: true,
                streaming: true,
                images,
                context_window,
            },
        }
    }
}

/// Model families known to take text only (their vision variants, named `-vision` or
/// `vl`, excepted): a screenshot is never sent to them.
const TEXT_ONLY_MODELS: [&str; 14] = [
    "gpt-3.5",
    "o1-mini",
    "o3-mini",
    "deepseek-r1",
    "deepseek-chat",
    "deepseek-coder",
    "smollm",
    "codellama",
    "tinyllama",
    "llama2",
    "llama3",
    "phi3",
    "phi-3",
    "qwen2.5-coder",
];

/// Whether `provider` may be sent images for `model`: every wire format carries them
/// (OpenAI-compatible `image_url` parts, Ollama's `images`, Anthropic's image blocks,
/// Gemini's `inline_data`, the Prompt API's image content), so only the models known to
/// take text only are refused here; for any other, a server's refusal tells.
pub fn reads_images(_provider: Provider, model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    let name = m.rsplit('/').next().unwrap_or(&m);
    let vision = name.contains("vision") || name.contains("vl");
    vision || !TEXT_ONLY_MODELS.iter().any(|t| name.starts_with(t))
}

/// What a provider (and model) supports. The engine adapts: without native tools, tools
/// are described in the prompt and calls are read from the text; without constrained
/// output, control blocks are parsed from prose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Capabilities {
    /// Tool definitions in the request and structured tool calls in the reply.
    pub native_tools: bool,
    /// JSON-schema constrained output (`response_format`, Ollama's `format`, ...).
    pub constrained_output: bool,
    /// Incremental replies.
    pub streaming: bool,
    /// Image inputs (false: the model is known to take text only).
    pub images: bool,
    /// Context window in tokens (prompt plus reply).
    pub context_window: u32,
}

/// The context window to assume for `model` when the user has not set one: a table of
/// well-known model families, else a conservative default per provider.
pub fn default_context_window(provider: Provider, model: &str) -> u32 {
    let m = model.to_ascii_lowercase();
    let known: &[(&str, u32)] = &[
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-4o", 128_000),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4", 200_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-3.5", 16_385),
        ("claude", 200_000),
        ("gemini-nano", 6_144),
        ("gemini", 1_048_576),
        ("llama3.1", 131_072),
        ("llama3.2", 131_072),
        ("llama3.3", 131_072),
        ("qwen2.5", 32_768),
        ("qwen3", 40_960),
        ("mistral", 32_768),
        ("gemma3", 131_072),
        ("phi4", 16_384),
        ("smollm2", 8_192),
    ];
    if let Some((_, window)) = known.iter().find(|(prefix, _)| m.contains(prefix)) {
        return match provider {
            // Ollama allocates memory for the whole window it is given: never ask it for a
            // long-context model's full window by default.
            Provider::Ollama => (*window).min(OLLAMA_DEFAULT_WINDOW),
            _ => *window,
        };
    }
    match provider {
        Provider::OpenaiCompatible => 8_192,
        Provider::Ollama => OLLAMA_DEFAULT_WINDOW,
        Provider::Anthropic => 200_000,
        Provider::Gemini => 1_048_576,
        Provider::ChromeBuiltin => 6_144,
    }
}

/// The window asked of Ollama (`options.num_ctx`) when the user sets none: large enough for
/// a page excerpt and a few steps, small enough for a laptop.
pub const OLLAMA_DEFAULT_WINDOW: u32 = 8_192;

/// Everything needed to reach one provider.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProviderConfig {
    /// The wire format.
    pub provider: Provider,
    /// Base URL (with the version path where the provider has one).
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// API key (empty: none is sent).
    pub api_key: String,
    /// Context window in tokens (0: the model's default).
    pub context_window: u32,
}

impl ProviderConfig {
    /// A config for an OpenAI-compatible server.
    pub fn openai(base_url: &str, model: &str, api_key: &str) -> Self {
        Self {
            provider: Provider::OpenaiCompatible,
            base_url: base_url.into(),
            model: model.into(),
            api_key: api_key.into(),
            context_window: 0,
        }
    }

    /// The base URL without a trailing slash.
    pub fn base(&self) -> &str {
        self.base_url.trim_end_matches('/')
    }

    /// The context window in effect (the setting, else the model's default).
    pub fn context_window(&self) -> u32 {
        if self.context_window > 0 {
            self.context_window
        } else {
            default_context_window(self.provider, &self.model)
        }
    }

    /// What this provider and model can do.
    pub fn capabilities(&self) -> Capabilities {
        Capabilities {
            context_window: self.context_window(),
            ..self.provider.capabilities(&self.model)
        }
    }

    /// `scheme://host[:port]` of the base URL, if it has one.
    pub fn origin(&self) -> Option<String> {
        origin_of(&self.base_url)
    }
}

/// `scheme://host[:port]` of an http(s) URL, as the browser reads it ([`crate::url`]).
pub fn origin_of(url: &str) -> Option<String> {
    crate::url::parse(url.trim())
        .filter(|url| url.is_web() && !url.host.is_empty())
        .map(|url| url.origin())
}

/// What Chrome's built-in model's `LanguageModel.availability()` reports, or that there is no Prompt API at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    /// No `LanguageModel` in this browser.
    NoApi,
    /// The device cannot run the model.
    Unavailable,
    /// The model can be downloaded.
    Downloadable,
    /// The model is downloading.
    Downloading,
    /// The model is ready.
    Available,
}

impl Availability {
    /// The API's value (`unavailable` for anything this build does not know).
    pub fn from_api(value: &str) -> Self {
        match value {
            "available" => Self::Available,
            "downloadable" => Self::Downloadable,
            "downloading" => Self::Downloading,
            "no_api" => Self::NoApi,
            _ => Self::Unavailable,
        }
    }

    /// The API's name for it (`no_api` when there is no API).
    pub fn name(self) -> &'static str {
        match self {
            Self::NoApi => "no_api",
            Self::Unavailable => "unavailable",
            Self::Downloadable => "downloadable",
            Self::Downloading => "downloading",
            Self::Available => "available",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_names_are_stable() {
        let names: Vec<String> = Provider::ALL
            .iter()
            .map(|p| {
                serde_json::to_value(p)
                    .expect("ser")
                    .as_str()
                    .expect("str")
                    .to_string()
            })
            .collect();
        assert_eq!(
            names,
            [
                "openai_compatible",
                "ollama",
                "anthropic",
                "gemini",
                "chrome_builtin"
            ]
        );
    }

    #[test]
    fn context_windows_come_from_the_model_the_setting_wins() {
        assert_eq!(
            default_context_window(Provider::OpenaiCompatible, "gpt-4o-mini"),
            128_000
        );
        assert_eq!(
            default_context_window(Provider::Anthropic, "claude-3-5-haiku"),
            200_000
        );
        assert_eq!(
            default_context_window(Provider::Ollama, "llama3.2:3b"),
            OLLAMA_DEFAULT_WINDOW
        );
        assert_eq!(
            default_context_window(Provider::OpenaiCompatible, "my-model"),
            8_192
        );
        let mut config = ProviderConfig::openai("http://x/v1", "gpt-4o", "");
        assert_eq!(config.context_window(), 128_000);
        config.context_window = 4_096;
        assert_eq!(config.capabilities().context_window, 4_096);
    }

    #[test]
    fn origins() {
        assert_eq!(
            origin_of("http://localhost:11434/v1").as_deref(),
            Some("http://localhost:11434")
        );
        assert_eq!(
            origin_of("https://api.openai.com").as_deref(),
            Some("https://api.openai.com")
        );
        assert_eq!(origin_of("ftp://x"), None);
        assert_eq!(origin_of("http://"), None);
        assert_eq!(
            origin_of("http://evil.example\\@127.0.0.1/v1").as_deref(),
            Some("http://evil.example")
        );
    }
}
