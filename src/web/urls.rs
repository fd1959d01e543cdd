//! The browser's own URL parser (`new URL(text)`, the WHATWG URL standard as `fetch` reads
//! it), installed as the crate's one parser ([`crate::url::set_parser`]) when the backend
//! starts.

use crate::url::Url;

/// `text` as the browser's `URL` reads it, or `None` when it throws.
pub fn parse(text: &str) -> Option<Url> {
    let url = web_sys::Url::new(text).ok()?;
    let protocol = url.protocol();
    Some(Url {
        href: url.href(),
        scheme: protocol.strip_suffix(':').unwrap_or(&protocol).to_string(),
        host: url.hostname(),
        port: url.port().parse().ok(),
        credentials: !url.username().is_empty() || !url.password().is_empty(),
        path: url.pathname(),
    })
}
