//! Prompt templates: named sections with typed placeholders, parsed from and serialized back
//! to a small text format, validated, and rendered with a context. Pure: it never touches
//! the browser.
//!
//! # The text format
//!
//! ```text
//! # template greeting
//! - {{name}}: string
//! - {{facts}}: list (optional)
//!
//! ## intro
//! Hello {{name}}.
//!
//! <section name="facts" optional>
//! What we know:
//! {{facts}}
//! </section>
//! ```
//!
//! - Line 1 is `# template <name>`. Each following `- {{<name>}}: <type>` line declares a
//!   placeholder; `<type>` is `string`, `list` or `object`, and ` (optional)` after it makes
//!   the placeholder optional.
//! - Then come the sections, in order, each delimited one of two ways: a Markdown heading
//!   `## <name>` (its content runs to the next section or the end), or an XML block
//!   `<section name="<name>">` ... `</section>` (each on a line of its own). ` (optional)` after
//!   the heading's name, or ` optional` before the tag's `>`, makes the section optional.
//!   Blank lines (empty, or only spaces, tabs and `\r`) between sections are ignored. The
//!   serializer writes one empty line before every section; a Markdown section's content
//!   ends before the blank line that precedes the next section.
//! - Names (template, sections, placeholders) are a lowercase ASCII letter followed by
//!   lowercase letters, digits or `_`, at most 64 characters.
//! - Escapes: a content line that starts with `\`, `## `, `<section` or `</section` is written
//!   with one more `\` in front, and the parser drops the first `\` of every content line
//!   that has one. So any content round-trips, delimiter-like lines and all.
//! - The text is split on `\n` only; a `\r` stays part of its line. Trailing spaces, tabs and
//!   `\r` are ignored on structural lines (header, declarations, headings, tags).
//!
//! [`Template::serialize`] writes this canonical form, and for every template that passes
//! [`Template::validate`], [`Template::parse`] of the result gives back an equal template.
//!
//! # Placeholders and rendering
//!
//! In section content, `{{<name>}}` is a placeholder; every `{{` must start a well-formed one,
//! naming a declared placeholder (so a template cannot contain a literal `{{`; pass one in
//! a value instead). [`Template::render`] renders, in template order, every required section
//! plus the optional sections it is asked for, and substitutes each placeholder in one pass:
//! a substituted value is never scanned again, so placeholders inside page text or model
//! output stay literal text. A value is taken from the [`Context`] (a JSON object):
//! - `string`: a JSON string, verbatim;
//! - `list`: a JSON array, one item per line (string items verbatim, other items as compact
//!   JSON);
//! - `object`: a JSON object, as compact JSON (keys sorted), which keeps untrusted field
//!   values from forging structure;
//! - a missing or `null` value renders empty for an optional placeholder and is an error for
//!   a required one; any other JSON type is an error naming the placeholder.
//!
//! Sections are concatenated as they are: separators, such as a blank line between two
//! sections, are part of the content, so the template holds every byte the model sees.
//!
//! ```
//! use knowledgelens::template::{Context, Template};
//! use serde_json::json;
//!
//! let text = concat!(
//!     "# template greeting\n- {{name}}: string\n- {{facts}}: list (optional)\n",
//!     "\n## intro\nHello {{name}}.\n",
//!     "\n<section name=\"facts\" optional>\n\nWhat we know:\n{{facts}}\n</section>\n",
//! );
//! let template = Template::load(text).unwrap();
//! assert_eq!(template.serialize(), text);
//! let context: Context = json!({"name": "Ada {{facts}}", "facts": ["one", "two"]})
//!     .as_object().unwrap().clone();
//! assert_eq!(template.render(&context, &[]).unwrap(), "Hello Ada {{facts}}.");
//! assert_eq!(
//!     template.render(&context, &["facts"]).unwrap(),
//!     "Hello Ada {{facts}}.\nWhat we know:\none\ntwo",
//! );
//! ```

mod error;
mod text;

pub use error::TemplateError;

use std::fmt;

use serde_json::Value;

/// A template file built into the crate: its file name, its text (`include_str!` beside the
/// code that renders it) and the sections that code renders. Each capability's prompt
/// module declares its own; `agent::capabilities` lists them all for the tests.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinTemplate {
    /// The file name (`search.tpl`), which is the template's name plus `.tpl`.
    pub file: &'static str,
    /// The file's text.
    pub text: &'static str,
    /// The sections the code renders (a file without one of them fails to load).
    pub sections: &'static [&'static str],
}

/// A built-in template loaded once (a capability's `static`).
pub type Loaded = std::sync::OnceLock<Result<Template, TemplateError>>;

impl BuiltinTemplate {
    /// The template, parsed and checked to have its sections. An error is a bug in the file
    /// (the tests load every one), and ends a run with that error instead of a panic.
    pub fn load(&self) -> Result<Template, TemplateError> {
        let template = Template::load(self.text)?;
        template.expect_sections(self.sections)?;
        Ok(template)
    }

    /// The template, loaded into `cell` the first time.
    pub fn loaded(&self, cell: &'static Loaded) -> Result<&'static Template, TemplateError> {
        cell.get_or_init(|| self.load())
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// The values a template is rendered with, by placeholder name.
pub type Context = serde_json::Map<String, Value>;

/// The longest name allowed.
pub const MAX_NAME_LEN: usize = 64;

/// A prompt template: a name, placeholder declarations and ordered sections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// Its name.
    pub name: String,
    /// The placeholders its sections may use.
    pub placeholders: Vec<Placeholder>,
    /// Its sections, in order.
    pub sections: Vec<Section>,
}

/// One named part of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Its name.
    pub name: String,
    /// How it is delimited in the template text.
    pub delimiter: Delimiter,
    /// Whether it is always rendered (and must not be empty).
    pub required: bool,
    /// Its text, with `{{placeholder}}`s.
    pub content: String,
}

/// How a section is delimited in the template text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delimiter {
    /// `<section name="...">` ... `</section>`.
    Xml,
    /// `## name`, up to the next section.
    Markdown,
}

/// A declared placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    /// Its name.
    pub name: String,
    /// The type of value it takes.
    pub kind: PlaceholderType,
    /// Whether rendering a section that uses it needs a value.
    pub required: bool,
}

/// The type of value a placeholder takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaceholderType {
    /// A JSON string.
    String,
    /// A JSON array.
    List,
    /// A JSON object.
    Object,
}

impl PlaceholderType {
    /// The name used in the text format.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::List => "list",
            Self::Object => "object",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        match name {
            "string" => Some(Self::String),
            "list" => Some(Self::List),
            "object" => Some(Self::Object),
            _ => None,
        }
    }
}

impl fmt::Display for PlaceholderType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether `name` is a well-formed name.
pub fn is_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    name.len() <= MAX_NAME_LEN
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// `text`, clipped to 60 characters for an error message.
fn clip(text: &str) -> String {
    crate::types::text::clip_marked(text, 60)
}

/// A piece of section content.
enum Piece<'a> {
    Text(&'a str),
    Placeholder(&'a str),
}

/// Splits content into text and placeholders; `Err` carries the text from a malformed `{{`.
fn pieces(content: &str) -> impl Iterator<Item = Result<Piece<'_>, &str>> {
    let mut rest = content;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let Some(open) = rest.find("{{") else {
            return Some(Ok(Piece::Text(std::mem::take(&mut rest))));
        };
        if open > 0 {
            let (text, tail) = rest.split_at(open);
            rest = tail;
            return Some(Ok(Piece::Text(text)));
        }
        let inner = &rest[2..];
        match inner.find("}}") {
            Some(close) if is_name(&inner[..close]) => {
                rest = &inner[close + 2..];
                Some(Ok(Piece::Placeholder(&inner[..close])))
            }
            _ => Some(Err(std::mem::take(&mut rest))),
        }
    })
}

impl Template {
    /// Parses template text (see the module docs for the format). Only the syntax is
    /// checked; [`Template::load`] also validates.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        text::parse(text)
    }

    /// The template in the canonical text format.
    pub fn serialize(&self) -> String {
        text::serialize(self)
    }

    /// Parses and validates template text.
    pub fn load(text: &str) -> Result<Self, TemplateError> {
        let template = Self::parse(text)?;
        template.validate()?;
        Ok(template)
    }

    /// The section called `name`.
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// The placeholder called `name`.
    pub fn placeholder(&self, name: &str) -> Option<&Placeholder> {
        self.placeholders.iter().find(|p| p.name == name)
    }

    /// Checks the template: well-formed names, no duplicates, at least one section, no empty
    /// required section, every `{{placeholder}}` well-formed and declared, every required
    /// placeholder used. Returns the first problem found.
    pub fn validate(&self) -> Result<(), TemplateError> {
        let bad = |what, found: &str| TemplateError::InvalidName {
            template: self.name.clone(),
            what,
            found: clip(found),
        };
        if !is_name(&self.name) {
            return Err(bad("template", &self.name));
        }
        for (i, p) in self.placeholders.iter().enumerate() {
            if !is_name(&p.name) {
                return Err(bad("placeholder", &p.name));
            }
            if self.placeholders[..i].iter().any(|q| q.name == p.name) {
                return Err(TemplateError::DuplicatePlaceholder {
                    template: self.name.clone(),
                    placeholder: p.name.clone(),
                });
            }
        }
        if self.sections.is_empty() {
            return Err(TemplateError::NoSections {
                template: self.name.clone(),
            });
        }
        let mut used = vec![false; self.placeholders.len()];
        for (i, s) in self.sections.iter().enumerate() {
            if !is_name(&s.name) {
                return Err(bad("section", &s.name));
            }
            if self.sections[..i].iter().any(|t| t.name == s.name) {
                return Err(TemplateError::DuplicateSection {
                    template: self.name.clone(),
                    section: s.name.clone(),
                });
            }
            if s.required && s.content.trim().is_empty() {
                return Err(TemplateError::EmptySection {
                    template: self.name.clone(),
                    section: s.name.clone(),
                });
            }
            for piece in pieces(&s.content) {
                if let Piece::Placeholder(name) = self.check_piece(s, piece)? {
                    if let Some(at) = self.placeholders.iter().position(|p| p.name == name) {
                        used[at] = true;
                    }
                }
            }
        }
        match self
            .placeholders
            .iter()
            .zip(&used)
            .find(|(p, u)| p.required && !**u)
        {
            Some((p, _)) => Err(TemplateError::UnusedPlaceholder {
                template: self.name.clone(),
                placeholder: p.name.clone(),
            }),
            None => Ok(()),
        }
    }

    /// A piece of `section`, or the error for a malformed or undeclared placeholder.
    fn check_piece<'a>(
        &self,
        section: &Section,
        piece: Result<Piece<'a>, &str>,
    ) -> Result<Piece<'a>, TemplateError> {
        match piece {
            Err(found) => Err(TemplateError::MalformedPlaceholder {
                template: self.name.clone(),
                section: section.name.clone(),
                found: clip(found),
            }),
            Ok(Piece::Placeholder(name)) if self.placeholder(name).is_none() => {
                Err(TemplateError::UndeclaredPlaceholder {
                    template: self.name.clone(),
                    section: section.name.clone(),
                    placeholder: name.to_string(),
                })
            }
            Ok(piece) => Ok(piece),
        }
    }

    /// Checks that the template has every section in `names` (the sections a caller renders).
    pub fn expect_sections(&self, names: &[&str]) -> Result<(), TemplateError> {
        match names.iter().find(|n| self.section(n).is_none()) {
            Some(missing) => Err(TemplateError::MissingSection {
                template: self.name.clone(),
                section: (*missing).to_string(),
            }),
            None => Ok(()),
        }
    }

    /// Renders every required section and the optional sections named in `include`, in
    /// template order, with the placeholders they use filled from `context` in one pass.
    /// Context entries no rendered section uses are ignored.
    pub fn render(&self, context: &Context, include: &[&str]) -> Result<String, TemplateError> {
        if let Some(unknown) = include.iter().find(|n| self.section(n).is_none()) {
            return Err(TemplateError::UnknownSection {
                template: self.name.clone(),
                section: (*unknown).to_string(),
            });
        }
        let mut out = String::new();
        for section in &self.sections {
            if section.required || include.contains(&section.name.as_str()) {
                for piece in pieces(&section.content) {
                    match self.check_piece(section, piece)? {
                        Piece::Text(text) => out.push_str(text),
                        Piece::Placeholder(name) => {
                            self.substitute(section, name, context, &mut out)?
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// Appends the value of placeholder `name` (declared) to `out`.
    fn substitute(
        &self,
        section: &Section,
        name: &str,
        context: &Context,
        out: &mut String,
    ) -> Result<(), TemplateError> {
        let Some(declared) = self.placeholder(name) else {
            return Ok(());
        };
        let wrong = |found| TemplateError::WrongType {
            template: self.name.clone(),
            placeholder: name.to_string(),
            expected: declared.kind,
            found,
        };
        match (declared.kind, context.get(name)) {
            (_, None | Some(Value::Null)) if declared.required => {
                Err(TemplateError::MissingValue {
                    template: self.name.clone(),
                    section: section.name.clone(),
                    placeholder: name.to_string(),
                    expected: declared.kind,
                })
            }
            (_, None | Some(Value::Null)) => Ok(()),
            (PlaceholderType::String, Some(Value::String(text))) => {
                out.push_str(text);
                Ok(())
            }
            (PlaceholderType::List, Some(Value::Array(items))) => {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push('\n');
                    }
                    match item {
                        Value::String(text) => out.push_str(text),
                        other => kljson::write_value(out, other),
                    }
                }
                Ok(())
            }
            (PlaceholderType::Object, Some(value @ Value::Object(_))) => {
                kljson::write_value(out, value);
                Ok(())
            }
            (_, Some(value)) => Err(wrong(json_type(value))),
        }
    }
}

/// The JSON type of `value`, for error messages.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}
