//! Why a value did not decode, and where, in serde's wording.

use std::fmt;

use serde_json::Value;

/// Why a value did not decode, and where. Boxed, so that every decoder's `Result` stays
/// small (a pointer), which keeps the code that moves results around small too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(Box<ErrorAt>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct ErrorAt {
    /// Where, outermost first (`state.trajectory[2].text`); empty at the top.
    path: String,
    /// What.
    message: String,
}

impl Error {
    /// An error at the current value.
    pub fn new(message: impl Into<String>) -> Self {
        Self::at_top(message.into())
    }

    #[cold]
    #[inline(never)]
    fn at_top(message: String) -> Self {
        Self(Box::new(ErrorAt {
            path: String::new(),
            message,
        }))
    }

    /// `found` is not `expected` (serde's wording: "invalid type: string \"x\", expected u32").
    #[cold]
    #[inline(never)]
    pub fn invalid_type(found: &Value, expected: &str) -> Self {
        Self::new(format!(
            "invalid type: {}, expected {expected}",
            Unexpected(found)
        ))
    }

    /// `name` is not among `names`.
    #[cold]
    #[inline(never)]
    pub fn unknown_variant(name: &str, names: &[&str]) -> Self {
        Self::new(format!(
            "unknown variant `{name}`, expected {}",
            OneOf(names)
        ))
    }

    /// Field `name` is not among the type's `names` (`#[serde(deny_unknown_fields)]`).
    #[cold]
    #[inline(never)]
    pub fn unknown_field(name: &str, names: &[&str]) -> Self {
        Self::new(format!("unknown field `{name}`, expected {}", OneOf(names)))
    }

    /// The error inside field `name` of the current object.
    #[cold]
    #[inline(never)]
    pub fn in_field(mut self, name: &str) -> Self {
        self.0.path = match self.0.path.as_str() {
            "" => name.to_owned(),
            inner if inner.starts_with('[') => format!("{name}{inner}"),
            inner => format!("{name}.{inner}"),
        };
        self
    }

    /// The error inside item `index` of the current array.
    #[cold]
    #[inline(never)]
    pub fn in_item(mut self, index: usize) -> Self {
        self.0.path = match self.0.path.as_str() {
            "" => format!("[{index}]"),
            inner if inner.starts_with('[') => format!("[{index}]{inner}"),
            inner => format!("[{index}].{inner}"),
        };
        self
    }

    /// Where (`list[1].name`; empty for the value itself).
    pub fn path(&self) -> &str {
        &self.0.path
    }

    /// What went wrong, without where.
    pub fn message(&self) -> &str {
        &self.0.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.path.is_empty() {
            f.write_str(&self.0.message)
        } else {
            write!(f, "{}: {}", self.0.path, self.0.message)
        }
    }
}

impl std::error::Error for Error {}

/// A value as serde names an unexpected one.
struct Unexpected<'a>(&'a Value);

impl fmt::Display for Unexpected<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "boolean `{b}`"),
            Value::Number(n) if n.is_f64() => write!(f, "floating point `{n}`"),
            Value::Number(n) => write!(f, "integer `{n}`"),
            Value::String(s) => write!(f, "string {s:?}"),
            Value::Array(_) => f.write_str("sequence"),
            Value::Object(_) => f.write_str("map"),
        }
    }
}

/// serde's "one of `a`, `b`" list.
struct OneOf<'a>(&'a [&'a str]);

impl fmt::Display for OneOf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [] => f.write_str("there are no variants"),
            [one] => write!(f, "`{one}`"),
            [a, b] => write!(f, "`{a}` or `{b}`"),
            names => {
                f.write_str("one of ")?;
                for (i, name) in names.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "`{name}`")?;
                }
                Ok(())
            }
        }
    }
}
