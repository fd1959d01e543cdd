//! User settings (provider, base URL, model, key, budget): validated, versioned, stored as
//! one JSON string under `settings` in the settings store (`chrome.storage.local`, trusted
//! contexts only). The API key never enters session state, events or exports.

use serde::{Deserialize, Serialize};

use crate::agent::config::RunConfig;
use crate::ports::{StateStore, StoreError};

/// Storage key of the settings record.
pub const SETTINGS_KEY: &str = "settings";
/// Longest question timeout a setting may ask for (one day, in seconds).
pub const MAX_INPUT_TIMEOUT_SECS: u64 = 86_400;
/// Schema version of the settings record.
pub const SETTINGS_VERSION: u32 = 1;
/// The default base URL: Ollama's OpenAI-compatible endpoint.
pub const DEFAULT_BASE_URL: &str = "http://localhost:11434/v1";

/// Which wire format to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// OpenAI-compatible chat completions.
    #[default]
    OpenaiCompatible,
}

/// The settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Schema version.
    pub version: u32,
    /// Wire format.
    pub provider: Provider,
    /// Base URL including the version path.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// API key (may be empty).
    pub api_key: String,
    /// Stream replies.
    pub stream: bool,
    /// Token budget per run.
    pub token_budget: u64,
    /// How long a question from the agent may wait to be shown (s; default 300).
    pub input_ack_timeout_secs: u64,
    /// How long a shown question may wait for the answer (s; default 0 = no limit).
    pub input_answer_timeout_secs: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            version: SETTINGS_VERSION,
            provider: Provider::OpenaiCompatible,
            base_url: DEFAULT_BASE_URL.into(),
            model: String::new(),
            api_key: String::new(),
            stream: true,
            token_budget: RunConfig::default().token_budget,
            input_ack_timeout_secs: RunConfig::default().input_ack_timeout_ms / 1000,
            input_answer_timeout_secs: RunConfig::default().input_answer_timeout_ms / 1000,
        }
    }
}

/// A setting that cannot be used, with what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidSettings(pub String);

impl Settings {
    /// Checks and normalizes (trims, drops a trailing slash).
    pub fn validated(mut self) -> Result<Self, InvalidSettings> {
        self.version = SETTINGS_VERSION;
        self.base_url = self.base_url.trim().trim_end_matches('/').to_string();
        self.model = self.model.trim().to_string();
        self.api_key = self.api_key.trim().to_string();
        let rest = self
            .base_url
            .strip_prefix("http://")
            .or_else(|| self.base_url.strip_prefix("https://"))
            .ok_or_else(|| InvalidSettings(format!("Base URL \"{}\" must start with http:// or https:// (for example {DEFAULT_BASE_URL}).", self.base_url)))?;
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if host.is_empty()
            || host.starts_with(':')
            || self.base_url.chars().any(char::is_whitespace)
        {
            return Err(InvalidSettings(format!(
                "Base URL \"{}\" has no valid host (for example {DEFAULT_BASE_URL}).",
                self.base_url
            )));
        }
        if self.api_key.chars().any(|c| c.is_control()) {
            return Err(InvalidSettings(
                "The API key contains control characters.".into(),
            ));
        }
        if !(1_000..=10_000_000).contains(&self.token_budget) {
            return Err(InvalidSettings(format!(
                "Token budget must be between 1,000 and 10,000,000 (got {}).",
                self.token_budget
            )));
        }
        if !(1..=MAX_INPUT_TIMEOUT_SECS).contains(&self.input_ack_timeout_secs) {
            return Err(InvalidSettings(format!(
                "The time a question may wait to be shown must be between 1 and {MAX_INPUT_TIMEOUT_SECS} seconds (got {}).",
                self.input_ack_timeout_secs
            )));
        }
        if self.input_answer_timeout_secs > MAX_INPUT_TIMEOUT_SECS {
            return Err(InvalidSettings(format!(
                "The time a question may wait for your answer must be at most {MAX_INPUT_TIMEOUT_SECS} seconds, or 0 for no limit (got {}).",
                self.input_answer_timeout_secs
            )));
        }
        Ok(self)
    }

    /// The run bounds these settings give a new run.
    pub fn run_config(&self, max_steps: Option<u32>) -> RunConfig {
        let defaults = RunConfig::default();
        RunConfig {
            max_steps: max_steps.unwrap_or(defaults.max_steps),
            token_budget: self.token_budget,
            stream: self.stream,
            input_ack_timeout_ms: self.input_ack_timeout_secs.saturating_mul(1000),
            input_answer_timeout_ms: self.input_answer_timeout_secs.saturating_mul(1000),
            ..defaults
        }
    }

    /// Loads the settings; defaults when none are saved or the record is unreadable.
    pub async fn load(store: &dyn StateStore) -> Result<Self, StoreError> {
        let text = store.get(SETTINGS_KEY).await?;
        Ok(text
            .and_then(|t| serde_json::from_str::<Settings>(&t).ok())
            .unwrap_or_default())
    }

    /// Saves the settings.
    pub async fn save(&self, store: &dyn StateStore) -> Result<(), StoreError> {
        store
            .set(vec![(
                SETTINGS_KEY.into(),
                serde_json::to_string(self).unwrap_or_default(),
            )])
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_normalizes_and_explains() {
        let ok = Settings {
            base_url: " http://127.0.0.1:8080/v1/ ".into(),
            ..Default::default()
        }
        .validated()
        .expect("valid");
        assert_eq!(ok.base_url, "http://127.0.0.1:8080/v1");
        let err = Settings {
            base_url: "localhost:11434".into(),
            ..Default::default()
        }
        .validated()
        .unwrap_err();
        assert!(err.0.contains("must start with http"), "{err}");
        let err = Settings {
            base_url: "http:///v1".into(),
            ..Default::default()
        }
        .validated()
        .unwrap_err();
        assert!(err.0.contains("no valid host"), "{err}");
        let err = Settings {
            token_budget: 5,
            ..Default::default()
        }
        .validated()
        .unwrap_err();
        assert!(err.0.contains("Token budget"), "{err}");
    }
}
