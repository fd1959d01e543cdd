//! The user's side of `request_input`: acknowledgements ("the question is on screen") and
//! answers, delivered by the UI handler to the run that asked. Each message carries the time
//! it arrived, so a message that arrived before a deadline counts even when the run sees it
//! later, and one that arrived at or after it never does: an acknowledgement racing the
//! timeout resolves to exactly one outcome.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::rc::Rc;
use std::task::Poll;

use futures::future;

use crate::agent::signal::{wake_all, Wakers};

pub use crate::tools::REQUEST_INPUT;

/// A message from the UI about a pending question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputMessage {
    /// The UI showed the question.
    Ack {
        /// Which question.
        request_id: String,
        /// When the acknowledgement arrived (ms).
        at_ms: u64,
    },
    /// The user answered.
    Answer {
        /// Which question.
        request_id: String,
        /// The answer.
        text: String,
        /// When the answer arrived (ms).
        at_ms: u64,
    },
}

/// A run's mailbox for [`InputMessage`]s, shared between the UI handler and the engine.
#[derive(Debug, Clone, Default)]
pub struct Inbox(Rc<RefCell<InboxInner>>);

#[derive(Debug, Default)]
struct InboxInner {
    messages: VecDeque<InputMessage>,
    wakers: Wakers,
}

impl Inbox {
    /// An empty inbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// Delivers a message and wakes the run.
    pub fn push(&self, message: InputMessage) {
        let wakers = {
            let mut inner = self.0.borrow_mut();
            inner.messages.push_back(message);
            inner.wakers.take()
        };
        wake_all(wakers);
    }

    /// Takes every message delivered so far, oldest first.
    pub fn take(&self) -> Vec<InputMessage> {
        self.0.borrow_mut().messages.drain(..).collect()
    }

    /// Resolves once a message is waiting.
    pub fn wait(&self) -> impl Future<Output = ()> + '_ {
        future::poll_fn(move |cx| {
            let mut inner = self.0.borrow_mut();
            if inner.messages.is_empty() {
                inner.wakers.register(cx);
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
    }
}

/// The transitions of a run waiting on the user (pure: time comes as arguments).
pub mod transitions {
    use super::InputMessage;
    use crate::agent::step::{self, Out, StepCtx};
    use crate::state::trajectory::{ErrorInfo, Item};
    use crate::state::{Next, PendingInput, RunStatus, SessionState};
    use crate::tools::{ToolError, ToolErrorKind};
    use crate::types::RunErrorKind;

    /// What a message did to the pending question.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Heard {
        /// Nothing (another question's id, a second acknowledgement, too late).
        Nothing,
        /// The question was acknowledged: its answer deadline starts (save it).
        Acknowledged,
        /// The answer became the tool result: the run goes on.
        Answered,
    }

    /// Applies one message to the pending question.
    pub fn hear(
        state: &mut SessionState,
        ctx: &StepCtx<'_>,
        message: InputMessage,
        out: &mut Out,
    ) -> Heard {
        let Some(mut pending) = state.input.pending.clone() else {
            return Heard::Nothing;
        };
        match message {
            InputMessage::Ack { request_id, at_ms }
                if request_id == pending.request_id
                    && pending.acknowledged_at.is_none()
                    && pending.ack_deadline.is_none_or(|d| at_ms < d) =>
            {
                pending.acknowledged_at = Some(at_ms);
                pending.answer_deadline = Some(at_ms.saturating_add(state.config.answer_wait_ms()));
                state.input.pending = Some(pending);
                Heard::Acknowledged
            }
            InputMessage::Answer {
                request_id,
                text,
                at_ms,
            } if request_id == pending.request_id
                && pending.deadline().is_none_or(|d| at_ms < d) =>
            {
                state.input.pending = None;
                let answer = format!("The user answered: {}", text.trim());
                step::tool_done(state, ctx, &pending.call, Ok(answer), out);
                Heard::Answered
            }
            _ => Heard::Nothing,
        }
    }

    /// Stop was pressed while the question waited: its tool call gets a refusal result.
    pub fn stopped(state: &mut SessionState, ctx: &StepCtx<'_>, out: &mut Out) {
        let Some(pending) = state.input.pending.take() else {
            return;
        };
        let err = ToolError::new(
            ToolErrorKind::Permission,
            "the user stopped the run instead of answering",
        );
        step::tool_done(state, ctx, &pending.call, Err(err), out);
    }

    /// The deadline that applies to the pending question now. A question saved by an older
    /// build may have none ("no limit"): it gets the run's finite wait, counted from when it
    /// was asked or shown, so no question waits forever.
    pub fn deadline(state: &mut SessionState) -> Option<u64> {
        let config = state.config;
        let pending = state.input.pending.as_mut()?;
        if pending.ack_deadline.is_none() {
            pending.ack_deadline = Some(pending.asked_at.saturating_add(config.ack_wait_ms()));
        }
        if let (Some(shown), None) = (pending.acknowledged_at, pending.answer_deadline) {
            pending.answer_deadline = Some(shown.saturating_add(config.answer_wait_ms()));
        }
        pending.deadline()
    }

    /// The deadline `deadline` passed: the run ends as timed out with what it had.
    pub fn timed_out(state: &mut SessionState, ctx: &StepCtx<'_>, deadline: u64, out: &mut Out) {
        let Some(pending) = state.input.pending.take() else {
            return;
        };
        let error = ErrorInfo::new(
            RunErrorKind::InputTimeout,
            timeout_message(&pending, deadline),
        );
        state.record(
            ctx.now,
            Item::ToolResult {
                call_id: pending.call.id.clone(),
                name: pending.call.name.clone(),
                ok: false,
                content: error.message.clone(),
            },
        );
        let best = step::best_answer(state);
        step::finish(
            state,
            ctx,
            RunStatus::TimedOut,
            best,
            true,
            Some(error),
            out,
        );
    }

    fn timeout_message(pending: &PendingInput, deadline: u64) -> String {
        match pending.acknowledged_at {
            Some(shown) => format!(
                "No answer to the question \"{}\" came within {} s of it being shown, so the run ended with what it had. Ask again to continue.",
                pending.question,
                deadline.saturating_sub(shown).div_ceil(1000)
            ),
            None => format!(
                "KnowledgeLens asked \"{}\" but nothing showed the question within {} s (open the popup to see questions), so the run ended with what it had. Ask again to continue.",
                pending.question,
                deadline.saturating_sub(pending.asked_at).div_ceil(1000)
            ),
        }
    }

    /// A waiting run whose question is gone (a record from another build): reason again.
    pub fn lost(state: &mut SessionState) {
        state.next = Some(Next::Reason);
        state.attempts = 0;
    }
}
