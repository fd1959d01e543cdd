//! The page's part of the loop's prompts: the page block (the page's start, or all of it),
//! the passages further on chosen for the question, and the note that the page was cut.
//! Pure: no browser access.

use super::{strings, Builtin};
use crate::agent::context::Fit;
use crate::agent::fence::Fence;
use crate::state::sources::QuestionPassages;
use crate::state::SessionState;
use crate::template::{Context, TemplateError};
use crate::types::page::{clean_title, clean_url};

/// The page's title and URL (capped), then its text, as one fenced block.
pub(super) fn page_data(fence: Fence<'_>, title: &str, url: &str, text: Option<&str>) -> String {
    let mut data = format!("Title: {}\nURL: {}", clean_title(title), clean_url(url));
    if let Some(text) = text {
        data.push_str("\n\n");
        data.push_str(text);
    }
    fence.wrap(&data)
}

/// The page block, the first user message: the fenced passages (the whole page when it
/// fits the run's page characters, else its start: the excerpt's lead), or why there are
/// none. The same for every question on the page.
pub(crate) fn page_block(
    state: &SessionState,
    templates: &Builtin,
    fit: &Fit,
) -> Result<String, TemplateError> {
    let template = &templates.user;
    let fence = Fence::new(&state.nonce);
    match &state.page {
        Some(page) if !page.text.is_empty() => {
            let index = crate::page::index_of(&page.text);
            let lead = excerpt(state, fit).map(|e| e.lead).unwrap_or_default();
            let text = crate::page::render(&index, &page.text, &lead);
            let mut data = page_data(fence, &page.title, &page.url, Some(&text));
            added_pages(state, fit, &mut data);
            let context = strings(&[("page_data", &data)]);
            template.render(&context, &["page"])
        }
        // A page that could not be read still has the pages the user added beside it.
        Some(page) => {
            let mut data = page_data(fence, &page.title, &page.url, None);
            added_pages(state, fit, &mut data);
            template.render(&strings(&[("page_data", &data)]), &["page_unreadable"])
        }
        None => template.render(&Context::new(), &["no_page"]),
    }
}

/// The run's excerpt of its page within the characters `fit` leaves (`None` without page
/// text).
pub(super) fn excerpt(state: &SessionState, fit: &Fit) -> Option<crate::page::Excerpt> {
    state.page.as_ref().filter(|p| !p.text.is_empty())?;
    Some(state.own_excerpt(excerpt_chars(state, fit)))
}

/// The pages added to the conversation (questions across pages), after the page's own
/// block: each one's share of the first excerpt, fenced under its title and URL, its
/// passages numbered in its block. Nothing without added pages.
fn added_pages(state: &SessionState, fit: &Fit, data: &mut String) {
    let fence = Fence::new(&state.nonce);
    let excerpts = state.added_excerpts(excerpt_chars(state, fit));
    let mut first = true;
    for (added, excerpt) in state.added_texts.iter().zip(excerpts) {
        if added.page.text.is_empty() {
            continue;
        }
        if first {
            data.push_str("\n\nPages the user added as sources of this conversation (cite their labels the same way):");
            first = false;
        }
        let index = crate::page::index_of(&added.page.text);
        let mut text = String::new();
        crate::page::render_from(
            &mut text,
            &index,
            &added.page.text,
            &excerpt.all(),
            added.base,
            "",
        );
        data.push('\n');
        data.push_str(&page_data(
            fence,
            &added.page.title,
            &added.page.url,
            Some(&text),
        ));
    }
}

/// Whether `excerpt` is the whole of the state's page.
pub(super) fn shows_whole(state: &SessionState, excerpt: &crate::page::Excerpt) -> bool {
    // Beside added pages the tools that search them are always offered.
    let added = state.added_texts.iter().any(|a| !a.page.text.is_empty());
    !added
        && state.page.as_ref().is_some_and(|page| {
            excerpt.lead.len() == crate::page::index_of(&page.text).passages().len()
        })
}

/// What the current question's request gives of the page beside its lead (within the
/// characters `fit` leaves): the passages chosen for it that no earlier turn gave, and the
/// note on what the model has seen. Earlier turns' passages are repeated in their place
/// unless `fit` cuts the turns.
pub(super) fn question_passages(state: &SessionState, fit: &Fit) -> QuestionPassages {
    state.question_passages(excerpt_chars(state, fit), !fit.cut_turns)
}

/// The characters of page text the request `fit` shapes may hold: the run's setting, or
/// less.
fn excerpt_chars(state: &SessionState, fit: &Fit) -> usize {
    fit.excerpt_chars
        .unwrap_or(state.config.page_excerpt_chars)
        .min(state.config.page_excerpt_chars)
}

/// The page's `passages` (past the page block's lead), fenced, as a user message of their
/// own before the question they were chosen for (so the page block before them stays the
/// same from one question to the next); `None` for none.
pub(super) fn page_extra(
    state: &SessionState,
    templates: &Builtin,
    passages: &[usize],
) -> Result<Option<String>, TemplateError> {
    let Some(page) = state.page.as_ref().filter(|_| !passages.is_empty()) else {
        return Ok(None);
    };
    let index = crate::page::index_of(&page.text);
    let text = crate::page::render(&index, &page.text, passages);
    let data = Fence::new(&state.nonce).wrap(&text);
    templates
        .user
        .render(&strings(&[("page_data", &data)]), &["page_extra"])
        .map(Some)
}

/// For a question about a page that was cut, what the model has seen of it (`seen`
/// passages) and how to find the rest, just before the question (small models acted on it
/// there, not at the end of the page block); `None` without a count.
pub(super) fn page_cut(
    state: &SessionState,
    templates: &Builtin,
    seen: Option<usize>,
) -> Result<Option<String>, TemplateError> {
    let (Some(page), Some(shown)) = (&state.page, seen) else {
        return Ok(None);
    };
    let total = crate::page::index_of(&page.text).passages().len();
    let values = strings(&[("shown", &shown.to_string()), ("total", &total.to_string())]);
    templates.user.render(&values, &["page_cut"]).map(Some)
}
