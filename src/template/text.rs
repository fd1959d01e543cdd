//! The template text format (see the parent module's docs): a strict line parser and the
//! canonical serializer. Pure: no browser access.

use super::{
    clip, is_name, Delimiter, Placeholder, PlaceholderType, Section, Template, TemplateError,
};

const HEADER: &str = "# template ";
const HEADING: &str = "## ";
const OPEN: &str = "<section";
const CLOSE: &str = "</section>";
const OPTIONAL_HEADING: &str = " (optional)";

/// Whether a content line must be escaped (prefixed with `\`) to stay content.
fn needs_escape(line: &str) -> bool {
    line.starts_with('\\')
        || line.starts_with(HEADING)
        || line.starts_with(OPEN)
        || line.starts_with("</section")
}

/// The content of a structural line: without trailing spaces, tabs and `\r`.
fn structural(line: &str) -> &str {
    line.trim_end_matches([' ', '\t', '\r'])
}

pub(super) fn serialize(template: &Template) -> String {
    let mut out = format!("{HEADER}{}\n", template.name);
    for p in &template.placeholders {
        let optional = if p.required { "" } else { OPTIONAL_HEADING };
        out.push_str(&format!("- {{{{{}}}}}: {}{optional}\n", p.name, p.kind));
    }
    for s in &template.sections {
        out.push('\n');
        match s.delimiter {
            Delimiter::Xml => {
                let optional = if s.required { "" } else { " optional" };
                out.push_str(&format!("{OPEN} name=\"{}\"{optional}>\n", s.name));
            }
            Delimiter::Markdown => {
                let optional = if s.required { "" } else { OPTIONAL_HEADING };
                out.push_str(&format!("{HEADING}{}{optional}\n", s.name));
            }
        }
        if !s.content.is_empty() {
            for line in s.content.split('\n') {
                if needs_escape(line) {
                    out.push('\\');
                }
                out.push_str(line);
                out.push('\n');
            }
        }
        if s.delimiter == Delimiter::Xml {
            out.push_str(CLOSE);
            out.push('\n');
        }
    }
    out
}

/// The lines of `text` (a final `\n` ends the last line rather than starting an empty one).
fn lines(text: &str) -> Vec<&str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').collect()
}

/// Content lines, unescaped and joined.
fn content(lines: &[&str]) -> String {
    let unescaped: Vec<&str> = lines
        .iter()
        .map(|l| l.strip_prefix('\\').unwrap_or(l))
        .collect();
    unescaped.join("\n")
}

/// `name` or `name<suffix>` -> (name, whether the suffix was there).
fn optional_suffix<'a>(text: &'a str, suffix: &str) -> (&'a str, bool) {
    match text.strip_suffix(suffix) {
        Some(name) => (name, true),
        None => (text, false),
    }
}

fn checked_name(name: &str, line: usize, what: &'static str) -> Result<String, TemplateError> {
    if is_name(name) {
        Ok(name.to_string())
    } else {
        Err(TemplateError::BadName {
            line,
            what,
            found: clip(name),
        })
    }
}

fn declaration(raw: &str, line: usize) -> Result<Placeholder, TemplateError> {
    let bad = || TemplateError::BadDeclaration {
        line,
        found: clip(raw),
    };
    let rest = structural(raw).strip_prefix("- {{").ok_or_else(bad)?;
    let (name, kind) = rest.split_once("}}: ").ok_or_else(bad)?;
    let name = checked_name(name, line, "placeholder")?;
    let (kind_name, optional) = optional_suffix(kind, OPTIONAL_HEADING);
    let kind = PlaceholderType::from_name(kind_name).ok_or_else(|| TemplateError::UnknownType {
        line,
        placeholder: name.clone(),
        found: clip(kind_name),
    })?;
    Ok(Placeholder {
        name,
        kind,
        required: !optional,
    })
}

/// A section opening line -> (name, delimiter, required); `None` if the line opens none.
fn opening(raw: &str, line: usize) -> Result<Option<(String, Delimiter, bool)>, TemplateError> {
    if let Some(rest) = raw.strip_prefix(HEADING) {
        let (name, optional) = optional_suffix(structural(rest), OPTIONAL_HEADING);
        let name = checked_name(name, line, "section")?;
        return Ok(Some((name, Delimiter::Markdown, !optional)));
    }
    if raw.starts_with(OPEN) {
        let bad = || TemplateError::BadSectionTag {
            line,
            found: clip(raw),
        };
        let rest = structural(raw)
            .strip_prefix("<section name=\"")
            .and_then(|r| r.strip_suffix('>'))
            .ok_or_else(bad)?;
        let (quoted, optional) = optional_suffix(rest, " optional");
        let name = quoted.strip_suffix('"').ok_or_else(bad)?;
        if name.contains('"') {
            return Err(bad());
        }
        let name = checked_name(name, line, "section")?;
        return Ok(Some((name, Delimiter::Xml, !optional)));
    }
    Ok(None)
}

pub(super) fn parse(text: &str) -> Result<Template, TemplateError> {
    let lines = lines(text);
    let first = structural(lines[0]);
    let name = first
        .strip_prefix(HEADER)
        .ok_or_else(|| TemplateError::MissingHeader { found: clip(first) })?;
    let name = checked_name(name, 1, "template")?;
    let mut at = 1;
    let mut placeholders = Vec::new();
    while at < lines.len() && lines[at].starts_with("- ") {
        placeholders.push(declaration(lines[at], at + 1)?);
        at += 1;
    }
    let mut sections = Vec::new();
    while at < lines.len() {
        let raw = lines[at];
        if structural(raw).trim_start_matches([' ', '\t']).is_empty() {
            at += 1;
            continue;
        }
        let Some((name, delimiter, required)) = opening(raw, at + 1)? else {
            return Err(if raw.starts_with("</section") {
                TemplateError::StrayClose {
                    line: at + 1,
                    found: clip(raw),
                }
            } else {
                TemplateError::OutsideSection {
                    line: at + 1,
                    found: clip(raw),
                }
            });
        };
        let opened = at + 1;
        at += 1;
        let start = at;
        let content = match delimiter {
            Delimiter::Xml => {
                loop {
                    let Some(raw) = lines.get(at) else {
                        return Err(TemplateError::Unclosed {
                            section: name,
                            opened,
                            line: at + 1,
                            found: "end of text".into(),
                        });
                    };
                    if structural(raw) == CLOSE {
                        break;
                    }
                    if raw.starts_with(HEADING)
                        || raw.starts_with(OPEN)
                        || raw.starts_with("</section")
                    {
                        return Err(TemplateError::Unclosed {
                            section: name,
                            opened,
                            line: at + 1,
                            found: clip(raw),
                        });
                    }
                    at += 1;
                }
                let body = content(&lines[start..at]);
                at += 1;
                body
            }
            Delimiter::Markdown => {
                while let Some(raw) = lines.get(at) {
                    if raw.starts_with(HEADING) || raw.starts_with(OPEN) {
                        break;
                    }
                    if raw.starts_with("</section") {
                        return Err(TemplateError::StrayClose {
                            line: at + 1,
                            found: clip(raw),
                        });
                    }
                    at += 1;
                }
                let mut end = at;
                // The blank line the serializer writes before the next section.
                if at < lines.len() && end > start && structural(lines[end - 1]).is_empty() {
                    end -= 1;
                }
                content(&lines[start..end])
            }
        };
        sections.push(Section {
            name,
            delimiter,
            required,
            content,
        });
    }
    Ok(Template {
        name,
        placeholders,
        sections,
    })
}
