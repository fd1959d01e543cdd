//! The bounds and budget of one run. A snapshot is stored with the run, so a resumed run
//! keeps the settings it started with.

use serde::Serialize;

use crate::tools::Risk;
use crate::types::Usage;
use kljson::{FromJson, ToJson};

/// The "Compact at" default (percent of the context window).
pub const DEFAULT_COMPACT_AT_PCT: u32 = 80;
/// The "Compact at" range (percent of the context window).
pub const COMPACT_AT_RANGE: (u32, u32) = (50, 95);

/// How long a shown question waits for the answer by default (ms; 30 minutes).
pub const DEFAULT_INPUT_ANSWER_TIMEOUT_MS: u64 = 1_800_000;
/// How long a question waits to be shown by default (ms; 5 minutes).
pub const DEFAULT_INPUT_ACK_TIMEOUT_MS: u64 = 300_000;
/// The longest either question wait may be (ms; one day).
pub const MAX_INPUT_WAIT_MS: u64 = 86_400_000;
/// The shortest wait for an answer (ms; one minute).
pub const MIN_INPUT_ANSWER_TIMEOUT_MS: u64 = 60_000;

/// Bounds, budget and pacing of a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, FromJson, ToJson)]
#[serde(default)]
pub struct RunConfig {
    /// Most Reason -> Act -> Observe steps (default 5).
    pub max_steps: u32,
    /// Retries of one call or action after its first attempt (default 3: 4 attempts).
    pub max_retries: u32,
    /// Token budget of the run (default 32,000).
    pub token_budget: u64,
    /// Fraction of the budget at which `budget_warning` fires (default 0.8).
    pub warning_ratio: f64,
    /// Cap on generated tokens per call.
    pub max_output_tokens: u32,
    /// First retry delay (ms); doubles each retry.
    pub backoff_base_ms: u64,
    /// Longest retry delay (ms).
    pub backoff_max_ms: u64,
    /// Whether replies are streamed.
    pub stream: bool,
    /// Whether Observe asks for constrained JSON output.
    pub constrained_output: bool,
    /// Page text the prompt holds directly (characters): the whole page when it fits, else
    /// the passages that best match the question; more via `query_page` and `read_page`.
    pub page_excerpt_chars: usize,
    /// Highest tool risk level the run permits.
    pub permitted_risk: Risk,
    /// How long a question to the user (`request_input`) may wait for the UI to show it
    /// (ms; default 300,000; 0, from a record of an older build, is the default: never
    /// unlimited). Read it through [`RunConfig::ack_wait_ms`].
    pub input_ack_timeout_ms: u64,
    /// How long a shown question may wait for the answer (ms; default 1,800,000; 0, from a
    /// record of an older build, is the default: never unlimited). Read it through
    /// [`RunConfig::answer_wait_ms`].
    pub input_answer_timeout_ms: u64,
    /// The model's context window in tokens (0: unknown), for the share a prompt uses.
    pub context_window: u32,
    /// What the model's tokens cost, when known (the user's prices or the price table).
    pub prices: Option<RunPrices>,
    /// How the answer is pitched (the setting "Reading level").
    pub reading_level: ReadingLevel,
    /// The share of the context window (percent, 50 to 95) from which the older history is
    /// compacted (the setting "Compact at").
    pub compact_at_pct: u32,
    /// Whether web search is on (the search tools are offered).
    pub web_search: bool,
    /// Whether the model may be sent images (false: it is known to take text only).
    pub images: bool,
}

/// How an answer is pitched: plain words, the default, or precise terminology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ReadingLevel {
    /// Plain words, no jargon, short sentences.
    Simple,
    /// The default.
    #[default]
    Standard,
    /// Precise terminology; background knowledge assumed.
    Expert,
}

// Declaration order is the order the options page lists them (`ReadingLevel::ALL`).
kljson::named_enum!(ReadingLevel {
    Simple = "simple",
    Standard = "standard",
    Expert = "expert",
});

impl ReadingLevel {}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            max_steps: 5,
            max_retries: 3,
            token_budget: 32_000,
            warning_ratio: 0.8,
            max_output_tokens: 1024,
            backoff_base_ms: 500,
            backoff_max_ms: 8_000,
            stream: true,
            constrained_output: true,
            page_excerpt_chars: 6_000,
            permitted_risk: Risk::Medium,
            input_ack_timeout_ms: DEFAULT_INPUT_ACK_TIMEOUT_MS,
            input_answer_timeout_ms: DEFAULT_INPUT_ANSWER_TIMEOUT_MS,
            context_window: 0,
            prices: None,
            reading_level: ReadingLevel::Standard,
            compact_at_pct: DEFAULT_COMPACT_AT_PCT,
            web_search: false,
            images: true,
        }
    }
}

impl RunConfig {
    /// Most steps a user may ask for.
    pub const MAX_STEPS_LIMIT: u32 = 20;

    /// How long a question may wait to be shown (ms): finite, at most a day; 0 (once "no
    /// limit") is the default.
    pub fn ack_wait_ms(&self) -> u64 {
        match self.input_ack_timeout_ms {
            0 => DEFAULT_INPUT_ACK_TIMEOUT_MS,
            ms => ms.min(MAX_INPUT_WAIT_MS),
        }
    }

    /// How long a shown question may wait for the answer (ms): a minute to a day; 0 (once
    /// "no limit") is the default.
    pub fn answer_wait_ms(&self) -> u64 {
        match self.input_answer_timeout_ms {
            0 => DEFAULT_INPUT_ANSWER_TIMEOUT_MS,
            ms => ms.clamp(MIN_INPUT_ANSWER_TIMEOUT_MS, MAX_INPUT_WAIT_MS),
        }
    }

    /// Clamps values into sane ranges (a bad setting never panics or loops forever).
    pub fn sanitized(mut self) -> Self {
        self.max_steps = self.max_steps.clamp(1, Self::MAX_STEPS_LIMIT);
        self.max_retries = self.max_retries.min(10);
        self.token_budget = self.token_budget.max(1);
        if !(self.warning_ratio > 0.0 && self.warning_ratio <= 1.0) {
            self.warning_ratio = 0.8;
        }
        self.max_output_tokens = self.max_output_tokens.clamp(16, 32_768);
        self.backoff_max_ms = self.backoff_max_ms.max(self.backoff_base_ms);
        let (lo, hi) = COMPACT_AT_RANGE;
        self.compact_at_pct = self.compact_at_pct.clamp(lo, hi);
        self.input_ack_timeout_ms = self.ack_wait_ms();
        self.input_answer_timeout_ms = self.answer_wait_ms();
        self
    }
}

/// Where a run's prices come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PriceSource {
    /// The dated table in this module.
    Table,
    /// The user's prices in Options.
    Settings,
}

kljson::named_enum!(PriceSource {
    Table = "table",
    Settings = "settings",
});

/// The prices a run was started with (stored with the run's settings snapshot).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, FromJson, ToJson)]
pub struct RunPrices {
    /// Prompt tokens (US$ per million).
    pub input: f64,
    /// Generated tokens (US$ per million).
    pub output: f64,
    /// Cached prompt tokens (US$ per million), if known.
    #[serde(default)]
    pub cached_input: Option<f64>,
    /// Where they come from.
    pub source: PriceSource,
}

impl RunPrices {
    /// What `usage` costs (US$): prompt tokens read from the provider's cache at the cached
    /// input rate (the input rate when none is known), the other prompt tokens at the input
    /// rate, generated tokens at the output rate.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_input.min(usage.input);
        let fresh = usage.input - cached;
        let cached_rate = self.cached_input.unwrap_or(self.input);
        (fresh as f64 * self.input
            + cached as f64 * cached_rate
            + usage.output as f64 * self.output)
            / 1_000_000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_tokens_times_rate() {
        let prices = RunPrices {
            input: 2.5,
            output: 10.0,
            cached_input: None,
            source: PriceSource::Table,
        };
        let usage = Usage::new(1_000, 500);
        assert!((prices.cost(&usage) - 0.0075).abs() < 1e-12);
    }

    #[test]
    fn cached_prompt_tokens_cost_the_cached_rate_else_the_input_rate() {
        let mut prices = RunPrices {
            input: 2.5,
            output: 10.0,
            cached_input: Some(1.25),
            source: PriceSource::Table,
        };
        // 400 fresh x 2.5 + 600 cached x 1.25 + 500 x 10 (per million).
        let usage = Usage::new(1_000, 500).with_cached(600);
        assert!((prices.cost(&usage) - 0.00675).abs() < 1e-12);
        prices.cached_input = None;
        assert!((prices.cost(&usage) - 0.0075).abs() < 1e-12);
        // A stored count above the prompt (never from `with_cached`) is capped at it.
        let odd = Usage {
            cached_input: 5_000,
            ..Usage::new(1_000, 0)
        };
        prices.cached_input = Some(0.0);
        assert!(prices.cost(&odd).abs() < 1e-12);
    }

    #[test]
    fn usage_written_before_cached_tokens_were_counted_still_reads() {
        let old: Usage = serde_json::from_str(r#"{"input":10,"output":2}"#).unwrap();
        assert_eq!(old, Usage::new(10, 2));
        let json = serde_json::to_string(&Usage::new(10, 2).with_cached(4)).unwrap();
        assert_eq!(json, r#"{"input":10,"output":2,"cached_input":4}"#);
    }
}
