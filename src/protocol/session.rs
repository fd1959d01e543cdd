//! [`SessionKey`]: which conversation a request is about (`popup` or `tab:<id>`), and
//! [`ConversationId`]: an archived conversation (`conv:<session>:<n>`), each parsed once when
//! the request is read.

use std::fmt;

use super::ApiError;

/// A session: the popup's own (no page), or one browser tab's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SessionKey {
    /// `popup`: questions without a page.
    Popup,
    /// `tab:<id>`: questions about one tab.
    Tab(u64),
}

impl SessionKey {
    /// Most digits a tab id may have.
    const MAX_DIGITS: usize = 12;

    /// Parses `popup` or `tab:<id>` (`id`: 1 to 12 ASCII digits).
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        if text == "popup" {
            return Ok(Self::Popup);
        }
        text.strip_prefix("tab:")
            .filter(|id| {
                !id.is_empty()
                    && id.len() <= Self::MAX_DIGITS
                    && id.bytes().all(|b| b.is_ascii_digit())
            })
            .and_then(|id| id.parse().ok())
            .map(Self::Tab)
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "\"{text}\" is not a session key (expected \"popup\" or \"tab:<id>\")."
                ))
            })
    }

    /// The session of tab `tab_id`.
    pub fn tab(tab_id: u64) -> Self {
        Self::Tab(tab_id)
    }
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Popup => f.write_str("popup"),
            Self::Tab(id) => write!(f, "tab:{id}"),
        }
    }
}

/// An archived conversation: the `n`th archived in `session` (`conv:<session>:<n>`, which
/// is also its storage key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConversationId {
    /// The session it was archived from.
    pub session: SessionKey,
    /// Its number in that session (1, 2, ...).
    pub n: u32,
}

impl ConversationId {
    /// The prefix of every conversation id (and storage key).
    pub const PREFIX: &'static str = "conv:";

    /// Parses `conv:<session>:<n>`.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let bad = || {
            ApiError::bad_request(format!(
                "\"{text}\" is not a conversation id (expected \"conv:<session>:<n>\", as \"history\" lists them)."
            ))
        };
        let rest = text.strip_prefix(Self::PREFIX).ok_or_else(bad)?;
        let (session, n) = rest.rsplit_once(':').ok_or_else(bad)?;
        let session = SessionKey::parse(session).map_err(|_| bad())?;
        let n = Some(n)
            .filter(|n| !n.is_empty() && n.len() <= 9 && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse().ok())
            .ok_or_else(bad)?;
        Ok(Self { session, n })
    }
}

impl fmt::Display for ConversationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}:{}", Self::PREFIX, self.session, self.n)
    }
}

/// `impl JsonSchema` for a key read from a string: a string of `pattern`.
macro_rules! string_schema {
    ($ty:ident, $pattern:literal) => {
        #[cfg(not(target_arch = "wasm32"))] // the schemas are for protocol::gen, natively
        impl schemars::JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "pattern": $pattern})
            }
        }
    };
}

string_schema!(SessionKey, "^(popup|tab:[0-9]{1,12})$");
string_schema!(ConversationId, "^conv:(popup|tab:[0-9]{1,12}):[0-9]+$");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_once_and_print_back() {
        assert_eq!(SessionKey::parse("popup"), Ok(SessionKey::Popup));
        assert_eq!(SessionKey::parse("tab:42"), Ok(SessionKey::Tab(42)));
        assert_eq!(SessionKey::Tab(42).to_string(), "tab:42");
        assert_eq!(SessionKey::Popup.to_string(), "popup");
        for bad in [
            "",
            "tab:",
            "tab:x",
            "tab:-1",
            "tab:1234567890123",
            "Popup",
            "tab: 1",
        ] {
            let err = SessionKey::parse(bad).unwrap_err();
            assert!(err.message.contains("not a session key"), "{bad}: {err}");
        }
    }

    #[test]
    fn conversation_ids_parse_once_and_print_back() {
        let id = ConversationId::parse("conv:tab:3:12").unwrap();
        assert_eq!(
            id,
            ConversationId {
                session: SessionKey::Tab(3),
                n: 12
            }
        );
        assert_eq!(id.to_string(), "conv:tab:3:12");
        assert_eq!(
            ConversationId::parse("conv:popup:1").unwrap().to_string(),
            "conv:popup:1"
        );
        for bad in [
            "",
            "conv:",
            "conv:tab:3",
            "conv:tab:3:",
            "conv:tab:3:x",
            "conv:tab:3:-1",
            "conv:nope:1",
            "tab:3:1",
            "conv:tab:3:1234567890",
        ] {
            let err = ConversationId::parse(bad).unwrap_err();
            assert!(
                err.message.contains("not a conversation id"),
                "{bad}: {err}"
            );
        }
    }
}
