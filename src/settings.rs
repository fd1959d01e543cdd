//! User settings (provider, base URL, model, key, budget, web search): validated, versioned,
//! stored as one JSON string under `settings` in the settings store (`chrome.storage.local`,
//! trusted contexts only). The API keys (the model's and the search provider's) never enter
//! session state, events or exports.

use serde::Serialize;
use serde_json::Value;

use crate::llm::prices::table_prices;
pub use crate::llm::provider::Provider;
use crate::llm::provider::ProviderConfig;
use crate::ports::{StateStore, StoreError};
use crate::search::{SearchConfig, SearchProvider};
use crate::state::config::{PriceSource, ReadingLevel, RunConfig, RunPrices};
use crate::types::events::Finite;
use crate::types::VecMap;
use kljson::{FromJson, ToJson};

/// Storage key of the settings record.
pub const SETTINGS_KEY: &str = "settings";
/// Longest question timeout a setting may ask for (one day, in seconds).
pub const MAX_INPUT_TIMEOUT_SECS: u64 = 86_400;
/// Shortest and longest time a shown question may wait for the answer (s): there is no
/// unlimited wait (settings version 3), so a forgotten question never holds a run for good.
pub const INPUT_ANSWER_TIMEOUT_RANGE: (u64, u64) = (
    crate::state::config::MIN_INPUT_ANSWER_TIMEOUT_MS / 1000,
    MAX_INPUT_TIMEOUT_SECS,
);
/// How long a shown question waits for the answer by default (s; 30 minutes).
pub const DEFAULT_INPUT_ANSWER_TIMEOUT_SECS: u64 =
    crate::state::config::DEFAULT_INPUT_ANSWER_TIMEOUT_MS / 1000;
/// Schema version of the settings record.
pub const SETTINGS_VERSION: u32 = 3;
/// The default base URL: Ollama's OpenAI-compatible endpoint.
pub const DEFAULT_BASE_URL: &str = "http://localhost:11434/v1";
/// Smallest and largest context window a setting may give (tokens; 0 = model default).
pub const CONTEXT_WINDOW_RANGE: (u32, u32) = (1_024, 10_000_000);
/// Smallest and largest token budget per run a setting may give.
pub const TOKEN_BUDGET_RANGE: (u64, u64) = (1_000, 10_000_000);
/// Shortest and longest "Model call deadline" a setting may give (seconds).
pub const MODEL_DEADLINE_RANGE: (u64, u64) = (10, 3_600);
/// Highest price per million tokens a setting may give (US$).
pub const MAX_PRICE: f64 = 10_000.0;
// The price error message writes the limit as text (see `UserPrices::checked`).
const _: () = assert!(MAX_PRICE == 10_000.0, "update the price error message");

/// The user's prices for a provider's model, US$ per million tokens (`None`: not set).
/// Input and output are set together; they then win over the built-in price table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, FromJson, Default, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(default)]
pub struct UserPrices {
    /// Prompt tokens.
    pub input: Option<Finite>,
    /// Generated tokens.
    pub output: Option<Finite>,
    /// Prompt tokens served from the provider's cache.
    pub cached_input: Option<Finite>,
}

impl UserPrices {
    fn checked(self) -> Result<Self, InvalidSettings> {
        for (name, value) in [
            ("Input price", self.input),
            ("Output price", self.output),
            ("Cached input price", self.cached_input),
        ] {
            if let Some(v) = value
                .map(Finite::get)
                .filter(|v| !(0.0..=MAX_PRICE).contains(v))
            {
                // The number as JSON writes it: printing an f64 with `{}` would pull core's
                // float formatting (14 KB) into the wasm for this one message.
                let got = kljson::to_string(&Value::from(v));
                return Err(InvalidSettings(format!(
                    "{name} must be between 0 and 10000 US$ per million tokens, or empty (got {got})."
                )));
            }
        }
        let any = self.input.is_some() || self.output.is_some() || self.cached_input.is_some();
        if any && (self.input.is_none() || self.output.is_none()) {
            return Err(InvalidSettings(
                "Set both Input price and Output price (per million tokens), or leave all prices empty to use the built-in prices.".into(),
            ));
        }
        Ok(self)
    }
}

/// One provider's connection fields, remembered so that switching providers back and forth
/// in Options loses nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, Default, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(default)]
pub struct Profile {
    /// Base URL.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// API key.
    pub api_key: String,
    /// Context window in tokens (0: the model's default).
    pub context_window: u32,
    /// The user's prices for the model.
    pub prices: UserPrices,
}

/// The setting "Search provider": off (the default: searching sends the question to a third
/// party), or the provider that answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum WebSearch {
    /// No web search.
    #[default]
    Off,
    /// Wikipedia (no key).
    Wikipedia,
    /// The user's own SearXNG instance.
    Searxng,
    /// The Brave Search API.
    Brave,
    /// Tavily.
    Tavily,
}

// Declaration order is the order the options page lists them (`WebSearch::ALL`).
kljson::named_enum!(WebSearch {
    Off = "off",
    Wikipedia = "wikipedia",
    Searxng = "searxng",
    Brave = "brave",
    Tavily = "tavily",
});

impl WebSearch {
    /// The provider, or `None` when search is off.
    pub fn provider(self) -> Option<SearchProvider> {
        match self {
            Self::Off => None,
            Self::Wikipedia => Some(SearchProvider::Wikipedia),
            Self::Searxng => Some(SearchProvider::Searxng),
            Self::Brave => Some(SearchProvider::Brave),
            Self::Tavily => Some(SearchProvider::Tavily),
        }
    }
}

/// The settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromJson, ToJson)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(default)]
pub struct Settings {
    /// Schema version.
    pub version: u32,
    /// The provider in use.
    pub provider: Provider,
    /// Its base URL (with the version path where the provider has one).
    pub base_url: String,
    /// Its model name.
    pub model: String,
    /// Its API key (may be empty).
    pub api_key: String,
    /// Its context window in tokens (0: the model's default).
    pub context_window: u32,
    /// Its prices, if the user set them.
    pub prices: UserPrices,
    /// The connection fields last saved for each provider (the one in use included).
    pub profiles: VecMap<Provider, Profile>,
    /// Stream replies.
    pub stream: bool,
    /// Token budget per run.
    pub token_budget: u64,
    /// How long a question from the agent may wait to be shown (s; default 300).
    pub input_ack_timeout_secs: u64,
    /// How long a shown question may wait for the answer (s; 60 to 86,400, default 1,800).
    pub input_answer_timeout_secs: u64,
    /// How answers are pitched: `simple`, `standard` or `expert` (checked by
    /// [`Settings::validated`], so an unknown value is a validation error naming the field).
    pub reading_level: String,
    /// "Compact at": the share of the context window (percent, 50 to 95) from which the
    /// older conversation is compacted.
    pub compact_at_percent: u32,
    /// "Search provider" (default off).
    pub search_provider: WebSearch,
    /// "Search base URL": empty means the provider's default.
    pub search_base_url: String,
    /// "Search API key" (Brave, Tavily).
    pub search_api_key: String,
    /// Whether the user answered the popup's offer to search the web ("Turn on" or "Not
    /// now"): it is made once, and never again after an answer.
    pub search_offered: bool,
    /// "Model call deadline": the longest one model call may take in all, however steadily
    /// the server keeps sending (s, 10 to 3,600; default 300). A record without it (any
    /// version) reads as the default.
    pub model_deadline_secs: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            version: SETTINGS_VERSION,
            provider: Provider::OpenaiCompatible,
            base_url: DEFAULT_BASE_URL.into(),
            model: String::new(),
            api_key: String::new(),
            context_window: 0,
            prices: UserPrices::default(),
            profiles: VecMap::new(),
            stream: true,
            token_budget: RunConfig::default().token_budget,
            input_ack_timeout_secs: RunConfig::default().input_ack_timeout_ms / 1000,
            input_answer_timeout_secs: DEFAULT_INPUT_ANSWER_TIMEOUT_SECS,
            reading_level: ReadingLevel::default().name().to_string(),
            compact_at_percent: crate::state::config::DEFAULT_COMPACT_AT_PCT,
            search_provider: WebSearch::Off,
            search_base_url: String::new(),
            search_api_key: String::new(),
            search_offered: false,
            model_deadline_secs: crate::llm::transport::DEFAULT_TOTAL_MS / 1000,
        }
    }
}

/// A setting that cannot be used, with what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidSettings(pub String);

/// Why a stored settings record was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// Not JSON, or not the settings' shape.
    #[error("the saved settings are unreadable ({0})")]
    Corrupted(String),
    /// Written by a newer version of KnowledgeLens.
    #[error(
        "the saved settings come from a newer version of KnowledgeLens (settings version {0})"
    )]
    NewerVersion(u32),
    /// Readable, but a value is out of its range (edited by hand, or damaged).
    #[error("the saved settings are not valid ({0})")]
    Invalid(String),
}

/// Version 1 had one flat set of OpenAI-compatible fields and no context window or
/// profiles: those fields become the first profile.
fn migrate_v1_to_v2(mut v: Value) -> Value {
    if let Some(obj) = v.as_object_mut() {
        let provider = obj
            .get("provider")
            .cloned()
            .unwrap_or(Value::from("openai_compatible"));
        let profile = kljson::json!({
            "base_url": obj.get("base_url").cloned().unwrap_or(Value::from(DEFAULT_BASE_URL)),
            "model": obj.get("model").cloned().unwrap_or(Value::from("")),
            "api_key": obj.get("api_key").cloned().unwrap_or(Value::from("")),
            "context_window": 0,
        });
        let key = provider.as_str().unwrap_or("openai_compatible").to_string();
        obj.insert("context_window".into(), Value::from(0));
        obj.insert("profiles".into(), kljson::json!({ key: profile }));
        obj.insert("version".into(), Value::from(2));
    }
    v
}

/// Version 2 allowed 0 for "wait for the answer as long as it takes": version 3 has no
/// unlimited wait, so 0 (or no value) becomes the default and any other number is brought
/// into the range. A value that is not a number is left for decoding to refuse.
fn migrate_v2_to_v3(mut v: Value) -> Value {
    if let Some(obj) = v.as_object_mut() {
        const FIELD: &str = "input_answer_timeout_secs";
        let (lo, hi) = INPUT_ANSWER_TIMEOUT_RANGE;
        let secs = match obj.get(FIELD) {
            None | Some(Value::Null) => Some(DEFAULT_INPUT_ANSWER_TIMEOUT_SECS),
            Some(value) => value.as_u64().map(|secs| match secs {
                0 => DEFAULT_INPUT_ANSWER_TIMEOUT_SECS,
                secs => secs.clamp(lo, hi),
            }),
        };
        if let Some(secs) = secs {
            obj.insert(FIELD.into(), Value::from(secs));
        }
        obj.insert("version".into(), Value::from(3));
    }
    v
}

impl Settings {
    /// Decodes a stored record, migrating older versions step by step, and checks it as
    /// saving does ([`Settings::validated`]): what comes back is within every range.
    pub fn decode(text: &str) -> Result<Self, SettingsError> {
        let mut value: Value =
            kljson::parse_value(text).map_err(|e| SettingsError::Corrupted(e.to_string()))?;
        if !value.is_object() {
            return Err(SettingsError::Corrupted("not an object".into()));
        }
        let version = value.get("version").and_then(Value::as_u64).unwrap_or(1);
        if version > u64::from(SETTINGS_VERSION) {
            return Err(SettingsError::NewerVersion(
                u32::try_from(version).unwrap_or(u32::MAX),
            ));
        }
        if version <= 1 {
            value = migrate_v1_to_v2(value);
        }
        if version <= 2 {
            value = migrate_v2_to_v3(value);
        }
        let settings =
            Self::from_json(value).map_err(|e| SettingsError::Corrupted(e.to_string()))?;
        settings
            .validated()
            .map_err(|InvalidSettings(why)| SettingsError::Invalid(why))
    }

    /// Checks and normalizes (trims, drops a trailing slash), and remembers the provider's
    /// fields in its profile.
    pub fn validated(mut self) -> Result<Self, InvalidSettings> {
        self.version = SETTINGS_VERSION;
        self.base_url = self.base_url.trim().trim_end_matches('/').to_string();
        self.model = self.model.trim().to_string();
        self.api_key = self.api_key.trim().to_string();
        if self.provider.uses_http() {
            let example = self.provider.default_base_url();
            web_address(
                &self.base_url,
                ["Base URL", "API key"],
                [
                    &format!("for example {example}"),
                    &format!("for example {example}"),
                ],
            )?;
        } else {
            self.base_url.clear();
            self.api_key.clear();
        }
        if self.api_key.chars().any(|c| c.is_control()) {
            return Err(InvalidSettings(
                "The API key contains control characters.".into(),
            ));
        }
        let (lo, hi) = CONTEXT_WINDOW_RANGE;
        if self.context_window != 0 && !(lo..=hi).contains(&self.context_window) {
            return Err(InvalidSettings(format!(
                "Context window must be between {lo} and {hi} tokens, or empty for the model's default (got {}).",
                self.context_window
            )));
        }
        let (lo, hi) = crate::state::config::COMPACT_AT_RANGE;
        if !(lo..=hi).contains(&self.compact_at_percent) {
            return Err(InvalidSettings(format!(
                "Compact at must be between {lo} and {hi} percent of the context window (got {}).",
                self.compact_at_percent
            )));
        }
        let (lo, hi) = TOKEN_BUDGET_RANGE;
        if !(lo..=hi).contains(&self.token_budget) {
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
        let (lo, hi) = INPUT_ANSWER_TIMEOUT_RANGE;
        if !(lo..=hi).contains(&self.input_answer_timeout_secs) {
            return Err(InvalidSettings(format!(
                "The time a question may wait for your answer must be between {lo} and {hi} seconds (got {}).",
                self.input_answer_timeout_secs
            )));
        }
        let (lo, hi) = MODEL_DEADLINE_RANGE;
        if !(lo..=hi).contains(&self.model_deadline_secs) {
            return Err(InvalidSettings(format!(
                "Model call deadline must be between 10 and 3,600 seconds (got {}).",
                self.model_deadline_secs
            )));
        }
        self.reading_level = self.reading_level.trim().to_ascii_lowercase();
        if ReadingLevel::from_name(&self.reading_level).is_none() {
            return Err(InvalidSettings(format!(
                "Reading level must be simple, standard or expert (got \"{}\").",
                self.reading_level
            )));
        }
        self.prices = self.prices.checked()?;
        self.check_search()?;
        for profile in self.profiles.values_mut() {
            profile.base_url = profile.base_url.trim().trim_end_matches('/').to_string();
            profile.model = profile.model.trim().to_string();
            profile.api_key = profile.api_key.trim().to_string();
            if profile.api_key.chars().any(|c| c.is_control()) {
                profile.api_key.clear();
            }
            profile.prices = profile.prices.checked().unwrap_or_default();
        }
        self.profiles.insert(
            self.provider,
            Profile {
                base_url: self.base_url.clone(),
                model: self.model.clone(),
                api_key: self.api_key.clone(),
                context_window: self.context_window,
                prices: self.prices,
            },
        );
        Ok(self)
    }

    /// Normalizes the web search fields (trimmed; a trailing slash dropped) and checks them:
    /// a Search base URL, when given, must be a plain http(s) address even while search is
    /// off; a provider that is on must have what it needs (SearXNG an address, Brave and
    /// Tavily a key).
    pub fn check_search(&mut self) -> Result<(), InvalidSettings> {
        self.search_base_url = self
            .search_base_url
            .trim()
            .trim_end_matches('/')
            .to_string();
        self.search_api_key = self.search_api_key.trim().to_string();
        let base = &self.search_base_url;
        if !base.is_empty() {
            web_address(
                base,
                ["Search base URL", "Search API key"],
                [
                    "or leave it empty for the provider's default",
                    "for example http://localhost:8888 for SearXNG",
                ],
            )?;
        }
        if self.search_api_key.chars().any(|c| c.is_control()) {
            return Err(InvalidSettings(
                "The Search API key contains control characters.".into(),
            ));
        }
        match self.search_config().and_then(|c| c.problem()) {
            Some(problem) => Err(InvalidSettings(problem.message)),
            None => Ok(()),
        }
    }

    /// Where and how to search, or `None` when search is off.
    pub fn search_config(&self) -> Option<SearchConfig> {
        Some(SearchConfig {
            provider: self.search_provider.provider()?,
            base_url: self.search_base_url.clone(),
            api_key: self.search_api_key.clone(),
        })
    }

    /// How to reach the provider in use.
    pub fn provider_config(&self) -> ProviderConfig {
        ProviderConfig {
            provider: self.provider,
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            api_key: self.api_key.clone(),
            context_window: self.context_window,
        }
    }

    /// The bounds these settings give a new run. The reply cap and the page excerpt are
    /// sized to the model's context window.
    pub fn run_config(&self, max_steps: Option<u32>) -> RunConfig {
        let defaults = RunConfig::default();
        let window = u64::from(self.provider_config().context_window());
        let max_output_tokens = defaults
            .max_output_tokens
            .min(u32::try_from(window / 4).unwrap_or(u32::MAX));
        // What is left for the page after the reply, the instructions, the question and a
        // few steps of history; about 3 characters a token, to stay on the safe side.
        let page_tokens = window.saturating_sub(u64::from(max_output_tokens) + 2_000);
        let page_excerpt_chars = usize::try_from(page_tokens.saturating_mul(3))
            .unwrap_or(usize::MAX)
            .clamp(1_000, defaults.page_excerpt_chars);
        RunConfig {
            max_steps: max_steps.unwrap_or(defaults.max_steps),
            token_budget: self.token_budget,
            stream: self.stream,
            max_output_tokens,
            page_excerpt_chars,
            input_ack_timeout_ms: self.input_ack_timeout_secs.saturating_mul(1000),
            input_answer_timeout_ms: self.input_answer_timeout_secs.saturating_mul(1000),
            context_window: u32::try_from(window).unwrap_or(u32::MAX),
            prices: self.run_prices(),
            reading_level: ReadingLevel::from_name(&self.reading_level).unwrap_or_default(),
            compact_at_pct: self.compact_at_percent,
            web_search: self.search_config().is_some(),
            images: self.provider_config().capabilities().images,
            ..defaults
        }
        .sanitized()
    }

    /// The prices a run uses: the user's for the provider in use, else the price table's
    /// for its model, else none.
    pub fn run_prices(&self) -> Option<RunPrices> {
        let user = self.prices;
        if let (Some(input), Some(output)) = (user.input, user.output) {
            return Some(RunPrices {
                input: input.get(),
                output: output.get(),
                cached_input: user.cached_input.map(Finite::get),
                source: PriceSource::Settings,
            });
        }
        table_prices(self.provider, &self.model).map(|p| RunPrices {
            input: p.input,
            output: p.output,
            cached_input: p.cached_input,
            source: PriceSource::Table,
        })
    }

    /// Whether the popup offers web search after a question: search is off and the offer
    /// was never answered.
    pub fn offers_search(&self) -> bool {
        self.search_provider == WebSearch::Off && !self.search_offered
    }

    /// Loads the settings; defaults when none are saved or the record cannot be used
    /// (see [`Settings::load_checked`] for why).
    pub async fn load(store: &dyn StateStore) -> Result<Self, StoreError> {
        Ok(Self::load_checked(store).await?.0)
    }

    /// Loads the settings, and says whether any are saved and why a saved record was not
    /// used (it then stays in storage untouched until the user saves).
    pub async fn load_checked(
        store: &dyn StateStore,
    ) -> Result<(Self, bool, Option<SettingsError>), StoreError> {
        Ok(match store.get(SETTINGS_KEY).await? {
            None => (Self::default(), false, None),
            Some(text) => match Self::decode(&text) {
                Ok(s) => (s, true, None),
                Err(e) => (Self::default(), true, Some(e)),
            },
        })
    }

    /// Saves the settings.
    pub async fn save(&self, store: &dyn StateStore) -> Result<(), StoreError> {
        store
            .set(vec![(SETTINGS_KEY.into(), kljson::to_string(self))])
            .await
    }
}

#[cfg(test)]
mod tests;

/// Checks an address typed in Options as the browser will read it ([`crate::url`]): an
/// `http://` or `https://` URL with a host, no credentials and no white space. `names`: the
/// field and the field its key belongs in; `hints`: what to add to the scheme and to the
/// host message.
fn web_address(text: &str, names: [&str; 2], hints: [&str; 2]) -> Result<(), InvalidSettings> {
    let [field, key_field] = names;
    let [scheme_hint, host_hint] = hints;
    let url = crate::url::parse(text);
    let typed_web = ["http:", "https:"].iter().any(|scheme| {
        text.get(..scheme.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
    });
    if url.as_ref().map_or(!typed_web, |url| !url.is_web()) {
        return Err(InvalidSettings(format!(
            "{field} \"{text}\" must start with http:// or https:// ({scheme_hint})."
        )));
    }
    match url {
        Some(url) if !url.host.is_empty() && !text.chars().any(char::is_whitespace) => {
            if url.credentials {
                return Err(InvalidSettings(format!(
                    "Put credentials in the {key_field} field, not in the {field}."
                )));
            }
            Ok(())
        }
        _ => Err(InvalidSettings(format!(
            "{field} \"{text}\" has no valid host ({host_hint})."
        ))),
    }
}
