//! The page tools: `read_page` (the passages from a character offset on) and `query_page`
//! (the passages that best match a query). Both give passages under their labels
//! (`[p12] Setup › Linux`), which the answer may cite; which passages a call gave follows
//! from its arguments and the page text alone ([`passages_of_call`]), so the citable
//! passages of a run are known without trusting anything in a result's text.

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use schemars::JsonSchema;

use super::{
    decode_args, RateLimit, ToolContext, ToolError, ToolErrorKind, ToolExample, TypedTool,
};
use crate::page::{self, PageIndex};
use kljson::FromJson;

/// Characters `read_page` returns by default.
pub const READ_PAGE_CHARS: usize = 4000;

/// Passages `query_page` returns by default, and at most.
pub const QUERY_PAGE_K: (u32, u32) = (5, 10);

/// `read_page`: the passages of the page from a character offset on.
pub struct ReadPage;

/// Arguments of `read_page`.
#[derive(Debug, FromJson, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadPageArgs {
    /// Character offset to start at (default 0); reading starts with the passage that holds it.
    #[serde(default)]
    pub offset: u32,
    /// About how many characters to return (default 4000, at most 8000; whole passages).
    #[serde(default)]
    #[schemars(range(min = 1, max = 8000))]
    pub max_chars: Option<u32>,
}

/// `query_page`: the passages of the page that best match a query.
pub struct QueryPage;

/// Arguments of `query_page`.
#[derive(Debug, FromJson, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryPageArgs {
    /// Words to look for: names, terms, a phrase from the question.
    #[schemars(length(min = 1, max = 300))]
    pub query: String,
    /// How many passages to return (default 5, at most 10).
    #[serde(default)]
    #[schemars(range(min = 1, max = 10))]
    pub k: Option<u32>,
}

fn page_text<'a>(ctx: &'a ToolContext<'a>) -> Result<&'a str, ToolError> {
    ctx.page
        .map(|p| p.text.as_str())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ToolError::new(
                ToolErrorKind::NotFound,
                "no page text is available for this question",
            )
        })
}

/// The passages `read_page` gives for `args`: from the one holding `offset` on, until about
/// `max_chars` characters (at least one passage).
fn read_window(index: &PageIndex, args: &ReadPageArgs) -> Result<Vec<usize>, ToolError> {
    let passages = index.passages();
    let offset = args.offset as usize;
    let total = passages.last().map_or(0, |p| p.start_char + p.chars);
    let first = passages
        .iter()
        .position(|p| p.start_char + p.chars > offset)
        .ok_or_else(|| {
            ToolError::new(
                ToolErrorKind::NotFound,
                format!("offset {offset} is past the end of the page ({total} characters)"),
            )
        })?;
    // The schema's range (1 to 8000) is checked before the call (`args::check_limits`).
    let want = args.max_chars.map_or(READ_PAGE_CHARS, |m| m as usize);
    let mut taken = 0;
    let mut out = Vec::new();
    for (i, p) in passages.iter().enumerate().skip(first) {
        if !out.is_empty() && taken + p.chars > want {
            break;
        }
        taken += p.chars;
        out.push(i);
    }
    Ok(out)
}

/// The passages `query_page` gives for `args`, best first.
fn query(index: &PageIndex, text: &str, args: &QueryPageArgs) -> Result<Vec<usize>, ToolError> {
    let (q, k) = checked_query(args)?;
    let hits: Vec<usize> = index.search(text, q, k).iter().map(|h| h.index).collect();
    if hits.is_empty() {
        return Err(ToolError::new(
            ToolErrorKind::NotFound,
            format!("no passage of the page has any word of \"{q}\"; try other words"),
        ));
    }
    Ok(hits)
}

/// `query_page`'s query (trimmed, not empty) and passage count, checked.
fn checked_query(args: &QueryPageArgs) -> Result<(&str, usize), ToolError> {
    let q = args.query.trim();
    if q.is_empty() {
        return Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            "\"query\" must not be empty",
        ));
    }
    let k = args.k.unwrap_or(QUERY_PAGE_K.0);
    if !(1..=QUERY_PAGE_K.1).contains(&k) {
        return Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!("\"k\" must be 1 to {} (got {k})", QUERY_PAGE_K.1),
        ));
    }
    Ok((q, k as usize))
}

/// The passages a successful `query_page` call gave across the own page (`text`) and the
/// pages `added` to the conversation, best first: (the page's position in
/// [`page::across::sources`], the passage's position in its page). Empty for other tools and
/// for arguments that do not decode.
pub fn passages_across(
    name: &str,
    arguments: &str,
    text: &str,
    added: &[page::across::AddedText],
) -> Vec<(usize, usize)> {
    if name != QueryPage::NAME {
        return Vec::new();
    }
    let sources = page::across::sources(text, own_limit(added), added);
    let mut given = Vec::new();
    if let Ok(found) =
        decode_args::<QueryPageArgs>(arguments).and_then(|args| query_across(&sources, &args))
    {
        for f in found {
            given.push((f.source, f.index));
        }
    }
    given
}

/// The own page's numbered passages beside `added` pages: those below the first one's block.
pub fn own_limit(added: &[page::across::AddedText]) -> usize {
    added.iter().map(|a| a.base).min().unwrap_or(usize::MAX)
}

/// [`query`] across `sources`.
fn query_across(
    sources: &[page::across::Source<'_>],
    args: &QueryPageArgs,
) -> Result<Vec<page::across::Found>, ToolError> {
    let (q, k) = checked_query(args)?;
    let found = page::across::search(sources, q, k);
    if found.is_empty() {
        return Err(ToolError::new(
            ToolErrorKind::NotFound,
            format!("no passage of the pages has any word of \"{q}\"; try other words"),
        ));
    }
    Ok(found)
}

/// The passages (indices) a successful call of a page tool gave, from its arguments and the
/// page text; empty for other tools and for arguments that do not decode.
pub fn passages_of_call(name: &str, arguments: &str, text: &str) -> Vec<usize> {
    let index = || page::index_of(text);
    let found = match name {
        ReadPage::NAME => {
            decode_args::<ReadPageArgs>(arguments).and_then(|args| read_window(&index(), &args))
        }
        QueryPage::NAME => {
            decode_args::<QueryPageArgs>(arguments).and_then(|args| query(&index(), text, &args))
        }
        _ => return Vec::new(),
    };
    found.unwrap_or_default()
}

impl TypedTool for ReadPage {
    const NAME: &'static str = "read_page";
    type Args = ReadPageArgs;
    type Output = String;
    fn description(&self) -> String {
        super::descriptions::of(Self::NAME)
    }
    fn parameters(&self) -> serde_json::Value {
        super::schemas::builtin(Self::NAME)
    }

    fn examples(&self) -> Vec<ToolExample> {
        vec![ToolExample {
            input: kljson::json!({"offset": 6000}),
            description: "read on from character 6000".into(),
        }]
    }

    fn rate_limit(&self) -> RateLimit {
        RateLimit {
            per_run: Some(20),
            per_minute: None,
        }
    }

    fn needs_page(&self) -> bool {
        true
    }

    fn call<'a>(
        &'a self,
        args: ReadPageArgs,
        ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        async move {
            let text = page_text(ctx)?;
            let index = page::index_of(text);
            let chosen = read_window(&index, &args)?;
            let passages = index.passages();
            let total = passages.last().map_or(0, |p| p.start_char + p.chars);
            let (first, last) = (&passages[chosen[0]], &passages[chosen[chosen.len() - 1]]);
            let end = last.start_char + last.chars;
            let mut out = format!(
                "Characters {}–{end} of {total} (passages {}–{} of {}):\n\n",
                first.start_char,
                page::passage_id(chosen[0]),
                page::passage_id(chosen[chosen.len() - 1]),
                passages.len()
            );
            out.push_str(&page::render(&index, text, &chosen));
            if end < total {
                out.push_str(&format!("\n\n(read_page with offset {end} reads on.)"));
            }
            Ok(out)
        }
        .boxed_local()
    }
}

impl TypedTool for QueryPage {
    const NAME: &'static str = "query_page";
    type Args = QueryPageArgs;
    type Output = String;
    fn description(&self) -> String {
        super::descriptions::of(Self::NAME)
    }
    fn parameters(&self) -> serde_json::Value {
        super::schemas::builtin(Self::NAME)
    }

    fn examples(&self) -> Vec<ToolExample> {
        vec![ToolExample {
            input: kljson::json!({"query": "opening hours weekend", "k": 5}),
            description: "find where the page gives the weekend opening hours".into(),
        }]
    }

    fn rate_limit(&self) -> RateLimit {
        RateLimit {
            per_run: Some(10),
            per_minute: None,
        }
    }

    fn needs_page(&self) -> bool {
        true
    }

    fn call<'a>(
        &'a self,
        args: QueryPageArgs,
        ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        async move {
            let text = page_text(ctx)?;
            if !ctx.added.is_empty() {
                return query_result_across(ctx, text, &args);
            }
            let index = page::index_of(text);
            let hits = query(&index, text, &args)?;
            Ok(format!(
                "{} passage{} for \"{}\", best first (the page has {}):\n\n{}",
                hits.len(),
                if hits.len() == 1 { "" } else { "s" },
                args.query.trim(),
                index.passages().len(),
                page::render(&index, text, &hits)
            ))
        }
        .boxed_local()
    }
}

/// `query_page`'s result across the page and the pages added to the conversation: the
/// passages best first, each label naming its page.
fn query_result_across(
    ctx: &ToolContext<'_>,
    text: &str,
    args: &QueryPageArgs,
) -> Result<String, ToolError> {
    let sources = page::across::sources(text, own_limit(ctx.added), ctx.added);
    let found = query_across(&sources, args)?;
    let title = |s: usize| -> &str {
        match s {
            0 => ctx.page.map_or("", |p| p.title.as_str()),
            _ => ctx.added[s - 1].page.title.as_str(),
        }
    };
    let mut out = format!(
        "{} passage{} for \"{}\" from {} pages, best first:\n\n",
        found.len(),
        if found.len() == 1 { "" } else { "s" },
        args.query.trim(),
        sources.iter().filter(|s| !s.text.is_empty()).count(),
    );
    let mut body = String::new();
    for f in &found {
        let source = &sources[f.source];
        let index = page::index_of(source.text);
        let name = crate::types::page::clean_title(title(f.source));
        let name = if name.is_empty() {
            "Untitled page".to_string()
        } else {
            name
        };
        page::render_from(
            &mut body,
            &index,
            source.text,
            &[f.index],
            source.base,
            &name,
        );
    }
    out.push_str(&body);
    Ok(out)
}
