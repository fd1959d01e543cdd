//! Chat-model wire types shared by every provider, the error kinds of a model call and the
//! single place that decides which of them are worth retrying. Pure: no browser access.

pub mod anthropic;
pub mod bounds;
pub mod builtin;
pub mod doctor;
pub mod gemini;
pub mod keys;
pub mod ollama;
pub mod openai;
pub mod prices;
pub mod provider;
pub mod sse;
mod turns;
pub mod wire;

pub use provider::{Capabilities, Provider, ProviderConfig};

pub use crate::types::chat::*;
pub use crate::types::error::{LlmError, LlmErrorKind};

/// The wire format for `config`'s provider, or `None` for Chrome's built-in model (which
/// the browser layer provides without HTTP).
pub fn wire_for(config: ProviderConfig) -> Option<Box<dyn wire::WireFormat>> {
    match config.provider {
        Provider::OpenaiCompatible => Some(Box::new(openai::OpenAiWire::new(config))),
        Provider::Ollama => Some(Box::new(ollama::OllamaWire::new(config))),
        Provider::Anthropic => Some(Box::new(anthropic::AnthropicWire::new(config))),
        Provider::Gemini => Some(Box::new(gemini::GeminiWire::new(config))),
        Provider::ChromeBuiltin => None,
    }
}
