//! The errors of parsing, validating and rendering a template, with the line or section
//! they concern.

use super::PlaceholderType;

/// Everything that can go wrong parsing, validating or rendering a template. Quoted text
/// (`found`) is clipped to 60 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// Line 1 is not `# template <name>`.
    #[error("line 1: expected `# template <name>`, found `{found}`")]
    MissingHeader {
        /// What line 1 holds.
        found: String,
    },
    /// A malformed name in the text.
    #[error("line {line}: `{found}` is not a valid {what} name (a lowercase ASCII letter, then lowercase letters, digits or `_`, at most 64)")]
    BadName {
        /// The line (1-based).
        line: usize,
        /// `template`, `section` or `placeholder`.
        what: &'static str,
        /// The name as written.
        found: String,
    },
    /// A header line that is not a placeholder declaration.
    #[error("line {line}: expected a placeholder declaration `- {{{{name}}}}: string|list|object`, optionally followed by ` (optional)`, found `{found}`")]
    BadDeclaration {
        /// The line (1-based).
        line: usize,
        /// The line as written.
        found: String,
    },
    /// A placeholder declared with a type that does not exist.
    #[error("line {line}: placeholder `{placeholder}` has type `{found}`, expected `string`, `list` or `object`")]
    UnknownType {
        /// The line (1-based).
        line: usize,
        /// The placeholder.
        placeholder: String,
        /// The type as written.
        found: String,
    },
    /// A malformed `<section ...>` tag.
    #[error("line {line}: expected `<section name=\"name\">` or `<section name=\"name\" optional>`, found `{found}`")]
    BadSectionTag {
        /// The line (1-based).
        line: usize,
        /// The line as written.
        found: String,
    },
    /// Text where a section or a blank line was expected.
    #[error("line {line}: expected a section (`## name` or `<section name=\"name\">`) or a blank line, found `{found}`")]
    OutsideSection {
        /// The line (1-based).
        line: usize,
        /// The line as written.
        found: String,
    },
    /// An XML section without its `</section>`.
    #[error("section `{section}` (line {opened}) is not closed: expected `</section>`, found `{found}` on line {line}")]
    Unclosed {
        /// The section.
        section: String,
        /// The line of its opening tag.
        opened: usize,
        /// Where its closing tag was expected.
        line: usize,
        /// What is there (`end of text` at the end).
        found: String,
    },
    /// A `</section>` that closes nothing.
    #[error(
        "line {line}: `{found}` closes no `<section>` (escape a content line with a leading `\\`)"
    )]
    StrayClose {
        /// The line (1-based).
        line: usize,
        /// The line as written.
        found: String,
    },
    /// A malformed name in a template built in code.
    #[error("template `{template}`: `{found}` is not a valid {what} name")]
    InvalidName {
        /// The template.
        template: String,
        /// `template`, `section` or `placeholder`.
        what: &'static str,
        /// The name.
        found: String,
    },
    /// A template without sections.
    #[error("template `{template}` has no sections")]
    NoSections {
        /// The template.
        template: String,
    },
    /// Two sections with one name.
    #[error("template `{template}`: section `{section}` is defined twice")]
    DuplicateSection {
        /// The template.
        template: String,
        /// The section.
        section: String,
    },
    /// Two placeholders with one name.
    #[error("template `{template}`: placeholder `{placeholder}` is declared twice")]
    DuplicatePlaceholder {
        /// The template.
        template: String,
        /// The placeholder.
        placeholder: String,
    },
    /// A required section with no text.
    #[error("template `{template}`: required section `{section}` is empty")]
    EmptySection {
        /// The template.
        template: String,
        /// The section.
        section: String,
    },
    /// A section the caller needs is not in the template.
    #[error("template `{template}` has no section `{section}`")]
    MissingSection {
        /// The template.
        template: String,
        /// The section.
        section: String,
    },
    /// A `{{` that does not start a well-formed `{{name}}`.
    #[error("template `{template}`, section `{section}`: `{found}` is not a placeholder; expected `{{{{name}}}}` (a template cannot contain a literal `{{{{`)")]
    MalformedPlaceholder {
        /// The template.
        template: String,
        /// The section.
        section: String,
        /// The text from the `{{`.
        found: String,
    },
    /// A placeholder used in content but not declared.
    #[error("template `{template}`, section `{section}`: placeholder `{placeholder}` is used but not declared")]
    UndeclaredPlaceholder {
        /// The template.
        template: String,
        /// The section.
        section: String,
        /// The placeholder.
        placeholder: String,
    },
    /// A required placeholder no section uses.
    #[error("template `{template}`: required placeholder `{placeholder}` is used by no section")]
    UnusedPlaceholder {
        /// The template.
        template: String,
        /// The placeholder.
        placeholder: String,
    },
    /// Rendering was asked for a section the template does not have.
    #[error("template `{template}` has no section `{section}` to render")]
    UnknownSection {
        /// The template.
        template: String,
        /// The section asked for.
        section: String,
    },
    /// A required placeholder without a value.
    #[error("template `{template}`, section `{section}`: required placeholder `{placeholder}` has no value (expected a {expected})")]
    MissingValue {
        /// The template.
        template: String,
        /// The section being rendered.
        section: String,
        /// The placeholder.
        placeholder: String,
        /// Its type.
        expected: PlaceholderType,
    },
    /// A value of the wrong type.
    #[error(
        "template `{template}`: placeholder `{placeholder}` expects a {expected}, found a {found}"
    )]
    WrongType {
        /// The template.
        template: String,
        /// The placeholder.
        placeholder: String,
        /// Its type.
        expected: PlaceholderType,
        /// The JSON type of the value given.
        found: &'static str,
    },
}
