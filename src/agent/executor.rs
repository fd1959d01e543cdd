//! What every model call and tool call of any run shares, kept once: the retry policy
//! (which failures retry, how long to wait), the budget check and usage accounting of a
//! model call, the rate-limit counts of a tool, and running a checked tool with retries.
//! Pure apart from running the tool itself; the engine's driver and its steps use it.

use crate::state::config::RunConfig;
use crate::state::trajectory::Item;
use crate::state::SessionState;
use crate::tools::{CallCounts, Policy, ToolBox, ToolError};
use crate::types::chat::{estimate_request_tokens, estimate_tokens};
use crate::types::{ChatRequest, ChatResponse, LlmError, ToolCall, Usage};

/// Retries and backoff of one run, from its config.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    config: RunConfig,
}

impl RetryPolicy {
    /// The policy of a run with `config`.
    pub fn of(config: &RunConfig) -> Self {
        Self { config: *config }
    }

    /// Whether a model call that failed with `err` on attempt `attempt` (1-based) is tried
    /// again.
    pub fn retries_model(&self, err: &LlmError, attempt: u32) -> bool {
        err.kind.is_retryable() && attempt <= self.config.max_retries
    }

    /// Whether a tool call that failed with `err` on attempt `attempt` is tried again
    /// (never for a tool with side effects: it may have acted).
    pub fn retries_tool(&self, err: &ToolError, attempt: u32, side_effects: bool) -> bool {
        !side_effects && err.is_retryable() && attempt <= self.config.max_retries
    }

    /// The delay before retrying a failed model call: the server's `Retry-After` when it
    /// gave one, else exponential backoff from `backoff_base_ms` (capped at
    /// `backoff_max_ms`) with jitter in [50%, 100%], from a hash of time, attempt and `salt`
    /// (deterministic under a test clock).
    pub fn backoff_ms(&self, now_ms: u64, attempt: u32, err: &LlmError, salt: u32) -> u64 {
        if let Some(ms) = err.retry_after_ms {
            return ms.min(60_000);
        }
        self.tool_backoff_ms(now_ms, attempt, salt)
    }

    /// The delay before retrying a failed tool call (or a model call without `Retry-After`):
    /// exponential backoff with jitter, as [`RetryPolicy::backoff_ms`].
    pub fn tool_backoff_ms(&self, now_ms: u64, attempt: u32, salt: u32) -> u64 {
        let exp = self
            .config
            .backoff_base_ms
            .saturating_mul(1 << attempt.saturating_sub(1).min(16));
        let capped = exp.min(self.config.backoff_max_ms);
        let seed = splitmix64(now_ms ^ (u64::from(attempt) << 32) ^ u64::from(salt));
        capped / 2 + seed % (capped / 2 + 1)
    }
}

/// One step of the splitmix64 generator: a well-mixed 64-bit value from `x`.
pub fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The prompt tokens a request is estimated at (checked against the budget before the call).
pub fn estimate(request: &ChatRequest) -> u64 {
    estimate_request_tokens(request)
}

/// Whether the run's budget allows a call estimated at `estimate` prompt tokens.
pub fn budget_allows(state: &SessionState, estimate: u64) -> bool {
    state.tokens_used() + estimate <= state.config.token_budget
}

/// The tokens a reply used: the provider's figures, else estimates (the prompt from the
/// request, the output from the text and every tool call's arguments).
pub fn usage_of(reply: &ChatResponse, prompt_estimate: u64) -> Usage {
    reply.usage.unwrap_or_else(|| {
        Usage::new(
            prompt_estimate,
            estimate_tokens(&reply.content)
                + reply
                    .tool_calls
                    .iter()
                    .map(|c| estimate_tokens(&c.arguments) + 4)
                    .sum::<u64>(),
        )
    })
}

/// Calls of tool `name` in the run's trajectory: all of them, and those of the last 60 s
/// (a call exactly 60 s old is outside the window).
pub fn call_counts(state: &SessionState, name: &str, now_ms: u64) -> CallCounts {
    let mut counts = CallCounts::default();
    for entry in &state.trajectory {
        if matches!(&entry.item, Item::ToolResult { name: n, .. } if n == name) {
            counts.in_run += 1;
            if entry.at_ms + 60_000 > now_ms {
                counts.in_last_minute += 1;
            }
        }
    }
    counts
}

/// The policy check of a call: known tool, offered in this run or phase, risk, rate limits.
pub fn check(
    tools: &ToolBox,
    state: &SessionState,
    call: &ToolCall,
    now_ms: u64,
) -> Result<(), ToolError> {
    let subset = state.phases.run.as_ref().and_then(|p| p.tools.as_deref());
    let policy = Policy {
        permitted_risk: state.config.permitted_risk,
        subset,
    };
    tools.check(&call.name, &policy, call_counts(state, &call.name, now_ms))
}
