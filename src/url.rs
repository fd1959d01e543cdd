//! URLs as the WHATWG URL standard reads them: the one parser that answers every scheme,
//! host and loopback question the crate asks (where a key may go, which origin a provider
//! or a page is on). In the extension it is the browser's own `URL`, which the web layer
//! installs at start ([`set_parser`]), so the host decided on here is the host `fetch`
//! connects to. Natively it is the `url` crate, which implements the same standard; the
//! table in `tests/fixtures/urls.json` holds both (and the options page) to the same answers.
//!
//! No other code splits URLs by hand: a backslash, an `@`, a percent-escape or a trailing dot
//! reads differently to a hand-written splitter than to the browser, and that difference is
//! where a key goes to the wrong host.

/// A URL as the standard parses it (only the parts the crate asks about).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// The whole URL, serialized (lowercased scheme and host, default port dropped, ...).
    pub href: String,
    /// The scheme without its colon: `http`, `https`, `chrome-extension`, `file`, ...
    pub scheme: String,
    /// The host as the standard serializes it: ASCII, lowercase, an IPv4 address in
    /// dotted decimal (`127.1` is `127.0.0.1`), an IPv6 address in brackets (`[::1]`);
    /// empty when the URL has none.
    pub host: String,
    /// The port when it is not the scheme's default.
    pub port: Option<u16>,
    /// Whether the URL carries a user name or a password.
    pub credentials: bool,
    /// The path (`/v1`), percent-encoded as the standard does.
    pub path: String,
}

/// Parses an absolute URL (no base): `None` when the standard fails it.
pub type Parser = fn(&str) -> Option<Url>;

/// The installed parser: the browser's `URL` in the extension.
static PARSER: std::sync::OnceLock<Parser> = std::sync::OnceLock::new();

/// Installs the parser (the first call wins): the web layer's, at start.
pub fn set_parser(parser: Parser) {
    let _first_wins = PARSER.set(parser);
}

/// `text` as the standard reads an absolute URL, or `None` when it is not one.
pub fn parse(text: &str) -> Option<Url> {
    let parser = PARSER.get().copied().unwrap_or(default_parser);
    parser(text)
}

/// Before a parser is installed: the `url` crate natively. In a browser nothing parses until
/// the web layer installs the browser's own, so nothing is sent anywhere on a guess.
#[cfg(not(target_arch = "wasm32"))]
fn default_parser(text: &str) -> Option<Url> {
    let url = ::url::Url::parse(text).ok()?;
    Some(Url {
        href: url.as_str().to_string(),
        scheme: url.scheme().to_string(),
        host: url.host_str().unwrap_or_default().to_string(),
        port: url.port(),
        credentials: !url.username().is_empty() || url.password().is_some(),
        path: url.path().to_string(),
    })
}

#[cfg(target_arch = "wasm32")]
fn default_parser(_text: &str) -> Option<Url> {
    None
}

/// Whether `a` and `b` are the same page: both URLs, with the same [`Url::place`] (scheme,
/// host, port and path; the query and the fragment aside).
pub fn same_page(a: &str, b: &str) -> bool {
    match (parse(a), parse(b)) {
        (Some(a), Some(b)) => a.place() == b.place(),
        _ => false,
    }
}

/// Whether `a` and `b` are one document: the same URL but for the fragment (`?t=1` and
/// `?t=2` of a forum are two pages; `#top` and `#end` of one page are not). Unparsable
/// URLs are one document only when equal.
pub fn same_document(a: &str, b: &str) -> bool {
    let document = |url: &Url| url.href.split('#').next().unwrap_or_default().to_string();
    match (parse(a), parse(b)) {
        (Some(a), Some(b)) => document(&a) == document(&b),
        _ => a == b,
    }
}

impl Url {
    /// The file an extension page is (`popup.html` of `chrome-extension://<id>/popup.html?…`),
    /// or `None` for any other URL.
    pub fn extension_page(&self) -> Option<&str> {
        (self.scheme == "chrome-extension")
            .then(|| self.path.strip_prefix('/'))
            .flatten()
    }

    /// Whether the scheme is `http` or `https`.
    pub fn is_web(&self) -> bool {
        matches!(self.scheme.as_str(), "http" | "https")
    }

    /// `scheme://host[:port]`.
    pub fn origin(&self) -> String {
        match self.port {
            Some(port) => format!("{}://{}:{port}", self.scheme, self.host),
            None => format!("{}://{}", self.scheme, self.host),
        }
    }

    /// The port a connection goes to: the URL's, else the scheme's default (80 or 443).
    pub fn port_or_default(&self) -> Option<u16> {
        self.port.or(match self.scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        })
    }

    /// The URL without its query and fragment: the same page whatever they are. (In the
    /// standard's serialization a `?` or `#` can only start the query or the fragment.)
    pub fn place(&self) -> String {
        self.href
            .split(['?', '#'])
            .next()
            .unwrap_or_default()
            .to_string()
    }

    /// Whether the host is this computer as Chrome decides it: `localhost` and its
    /// subdomains (which Chrome resolves to loopback itself; a trailing dot aside),
    /// 127.0.0.0/8 and `[::1]`. The host is the standard's serialization, so `127.1`,
    /// `LOCALHOST` and `%6c%6fcalhost` have already become the forms checked here.
    pub fn is_loopback(&self) -> bool {
        let host = self.host.strip_suffix('.').unwrap_or(&self.host);
        host == "localhost" || host.ends_with(".localhost") || host == "[::1]" || {
            let octets: Vec<&str> = host.split('.').collect();
            octets.len() == 4
                && octets[0] == "127"
                && octets.iter().all(|o| o.bytes().all(|b| b.is_ascii_digit()))
        }
    }

    /// Whether a key sent here travels in clear text: plain `http://` to another computer.
    pub fn exposes_keys(&self) -> bool {
        self.scheme == "http" && !self.is_loopback()
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn hosts_are_the_standards_serialization() {
        let host = |text: &str| parse(text).map(|u| u.host);
        assert_eq!(host("http://127.1/v1").as_deref(), Some("127.0.0.1"));
        assert_eq!(host("http://LOCALHOST:11434").as_deref(), Some("localhost"));
        assert_eq!(host("http://[0:0::1]/").as_deref(), Some("[::1]"));
        assert_eq!(
            host("http://evil.example\\@127.0.0.1/v1").as_deref(),
            Some("evil.example")
        );
        assert_eq!(host("not a url"), None);
    }

    #[test]
    fn origins_drop_credentials_and_default_ports() {
        let origin = |text: &str| parse(text).map(|u| u.origin());
        assert_eq!(
            origin("https://user:pw@api.example:443/v1").as_deref(),
            Some("https://api.example")
        );
        assert_eq!(
            origin("http://localhost:11434/api").as_deref(),
            Some("http://localhost:11434")
        );
    }
}
