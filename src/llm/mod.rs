//! Chat-model wire types shared by every provider, the error kinds of a model call and the
//! single place that decides which of them are worth retrying. Pure: no browser access.

pub mod diagnosis;
pub mod formats;
pub mod local;
pub mod prices;
pub mod prompted_tools;
pub mod provider;
pub mod transport;

pub use provider::{Capabilities, Provider, ProviderConfig};

pub use crate::types::chat::*;
pub use crate::types::error::{LlmError, LlmErrorKind};

/// The wire format for `config`'s provider, or `None` for Chrome's built-in model (which
/// the browser layer provides without HTTP).
pub fn wire_for(config: ProviderConfig) -> Option<Box<dyn transport::WireFormat>> {
    match config.provider {
        Provider::OpenaiCompatible => Some(Box::new(formats::openai::OpenAiWire::new(config))),
        Provider::Ollama => Some(Box::new(formats::ollama::OllamaWire::new(config))),
        Provider::Anthropic => Some(Box::new(formats::anthropic::AnthropicWire::new(config))),
        Provider::Gemini => Some(Box::new(formats::gemini::GeminiWire::new(config))),
        Provider::ChromeBuiltin => None,
    }
}
