//! The screenshot tool as pure transitions: `extract_screenshot_text` is offered only for
//! a tab whose page has little or no text ([`LITTLE_TEXT_CHARS`]); a call to it asks the
//! driver for a screenshot ([`Action::Capture`]); the screenshot goes to the model in one
//! call that transcribes its text ([`Purpose::Transcribe`]), and the text is the tool's
//! result. The call stays the run's [`Next::Act`] until its result is recorded, so a worker
//! stopped in between takes the screenshot again (it has no side effect); the image lives
//! only in that live request, never in the state. A model that cannot take images (known
//! from the run's config or said by its server) gives an error result, and the user a
//! notice saying so ([`NO_IMAGES_NOTICE`]); a tab that is not in front gives "the page is
//! not visible".

pub mod prompt;

use super::*;
use crate::agent::step::screenshot::prompt as prompts_screenshot;
use crate::llm::transport::refuses_images;
use crate::ports::CaptureError;
use crate::tools::screenshot::{ExtractScreenshotTextArgs, LITTLE_TEXT_CHARS};
use crate::tools::EXTRACT_SCREENSHOT_TEXT;
use crate::types::Image;

/// What the user is told when the model cannot read the screenshot.
pub const NO_IMAGES_NOTICE: &str = "KnowledgeLens could not read this page from a screenshot: this model cannot read images. Choose a vision-capable model in Options to read pages without text.";

/// Longest transcription kept as the tool's result (characters).
pub const MAX_TRANSCRIPT_CHARS: usize = 8_000;

/// The tab the run is about (`tab:<id>` sessions), if any.
fn tab_of(state: &SessionState) -> Option<i64> {
    state.session.strip_prefix("tab:")?.parse().ok()
}

/// Whether the screenshot tool is offered: a run about a tab whose page has fewer than
/// [`LITTLE_TEXT_CHARS`] characters of text (or none, or an unreadable page), that is not
/// explaining a selection (which is text), and whose model has not been found unable to
/// read images.
pub(super) fn offered(state: &SessionState) -> bool {
    let little_text = state
        .page
        .as_ref()
        .is_none_or(|p| p.text.trim().chars().nth(LITTLE_TEXT_CHARS - 1).is_none());
    tab_of(state).is_some()
        && little_text
        && state.selection.is_none()
        && !state.notices.iter().any(|n| n == NO_IMAGES_NOTICE)
}

/// Whether `name` is the screenshot tool (the engine runs it).
pub(super) fn is_screenshot_tool(name: &str) -> bool {
    name == EXTRACT_SCREENSHOT_TEXT
}

/// A checked call of the screenshot tool: the screenshot is taken, unless the arguments
/// are bad, there is no tab, or the model is known to take text only.
pub(super) fn begin(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    call: ToolCall,
    out: &mut Out,
) -> Action {
    if let Err(err) = decode_args::<ExtractScreenshotTextArgs>(&call.arguments) {
        tool_done(state, ctx, &call, Err(err), out);
        return Action::Continue;
    }
    let Some(tab) = tab_of(state) else {
        let err = ToolError::new(
            ToolErrorKind::NotFound,
            "this question is not about a tab, so there is no page to take a screenshot of",
        );
        tool_done(state, ctx, &call, Err(err), out);
        return Action::Continue;
    };
    if !state.config.images {
        no_images(state, ctx, &call, out);
        return Action::Continue;
    }
    // The page read at the start, or the address of one that could not be read.
    let page = match &state.page {
        Some(page) => Some(page.url.clone()),
        None => Some(state.page_address.clone()).filter(|a| !a.is_empty()),
    };
    Action::Capture { call, tab, page }
}

/// The model cannot read images: an error result (not reflected on: no other call can
/// help) and the notice, once.
fn no_images(state: &mut SessionState, ctx: &StepCtx<'_>, call: &ToolCall, out: &mut Out) {
    if !state.notices.iter().any(|n| n == NO_IMAGES_NOTICE) {
        state.notices.push(NO_IMAGES_NOTICE.to_string());
        out.emit(EventKind::Notice {
            message: NO_IMAGES_NOTICE.to_string(),
        });
    }
    let err = ToolError::new(
        ToolErrorKind::Permission,
        "this model cannot read images, so the page's text could not be read from a screenshot",
    );
    tool_done_as(state, ctx, call, Err(err), None, out);
}

/// The screenshot came back: the transcription call to make, or (`None`) the call's error
/// result is recorded (the page is not visible, the capture failed, the call cannot be
/// made).
pub fn captured(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    call: &ToolCall,
    result: Result<Image, CaptureError>,
    out: &mut Out,
) -> Option<ModelCall> {
    let image = match result {
        Ok(image) => image,
        Err(err) => {
            let why = match err {
                CaptureError::NotVisible => "the page is not visible (its tab is not the one shown in its window), so no screenshot was taken".to_string(),
                CaptureError::OtherPage => "the tab now shows another page than the one this question is about, so no screenshot was taken".to_string(),
                CaptureError::Failed(message) => format!("the screenshot failed: {message}"),
            };
            let err = ToolError::new(ToolErrorKind::NotFound, why);
            tool_done(state, ctx, call, Err(err), out);
            return None;
        }
    };
    let request = match prompts_screenshot::transcribe(state, image) {
        Ok(request) => request,
        Err(err) => {
            halt(state, ctx, Halt::Failed(template_error(&err)), out);
            return None;
        }
    };
    let estimate = executor::estimate(&request);
    let problem = if state.attempts > state.config.max_retries {
        Some("reading the screenshot was cut off too often")
    } else if !executor::budget_allows(state, estimate) {
        Some("the token budget does not allow reading a screenshot")
    } else if context::limit(state).is_some_and(|l| context::window_use(state, &request) > l) {
        Some("the screenshot does not fit in the model's context window")
    } else {
        None
    };
    if let Some(problem) = problem {
        let err = ToolError::new(ToolErrorKind::RateLimited, problem);
        tool_done(state, ctx, call, Err(err), out);
        return None;
    }
    Some(ModelCall {
        request,
        purpose: Purpose::Transcribe,
        estimate,
        stream_answer: false,
    })
}

/// The call being run (the screenshot tool's, while it transcribes).
fn current_call(state: &SessionState) -> Option<ToolCall> {
    match &state.next {
        Some(Next::Act { call, .. }) if is_screenshot_tool(&call.name) => Some(call.clone()),
        _ => None,
    }
}

/// The transcription answered: its text (capped) is the tool's result.
pub(super) fn transcribed(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    reply: &ChatResponse,
    out: &mut Out,
) {
    let Some(call) = current_call(state) else {
        return;
    };
    let text = reply.content.trim();
    let result = if text.is_empty() {
        "The screenshot of the visible part of the page shows no readable text.".to_string()
    } else {
        let (text, cut) = crate::types::text::clip(text, MAX_TRANSCRIPT_CHARS);
        let more = if cut { "…" } else { "" };
        format!("Text read from a screenshot of the visible part of the page:\n\n{text}{more}")
    };
    tool_done(state, ctx, &call, Ok(result), out);
}

/// The transcription failed after its retries: the model refusing the image gives the
/// notice; anything else is the call's error result. `false`: not transcribing.
pub(super) fn model_failed(
    state: &mut SessionState,
    ctx: &StepCtx<'_>,
    err: &LlmError,
    out: &mut Out,
) -> bool {
    let Some(call) = current_call(state) else {
        return false;
    };
    if refuses_images(err) {
        no_images(state, ctx, &call, out);
    } else {
        let err = ToolError::new(
            ToolErrorKind::NotFound,
            format!("the model could not read the screenshot: {}", err.message),
        );
        tool_done(state, ctx, &call, Err(err), out);
    }
    true
}
