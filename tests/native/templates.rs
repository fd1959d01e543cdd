//! Prompt templates (`template`): seed property 16 (any valid template round-trips
//! through serialize/parse unchanged), parsing and rendering never panicking, rendering
//! against an independent oracle, and unit tests for every validation, parse and render
//! error and for each placeholder type.

use knowledgelens::template::{
    Context, Delimiter, Placeholder, PlaceholderType, Section, Template, TemplateError,
};
use proptest::prelude::*;
use serde_json::{json, Value};

fn ctx(value: Value) -> Context {
    value.as_object().expect("an object").clone()
}

const GREETING: &str = "# template greeting
- {{name}}: string
- {{facts}}: list (optional)
- {{meta}}: object (optional)

## intro
Hello {{name}}.

<section name=\"facts\" optional>

What we know:
{{facts}}
</section>

## meta (optional)
 {{meta}}
";

fn greeting() -> Template {
    Template::load(GREETING).expect("the greeting template loads")
}

// ---- parsing and serializing -------------------------------------------------------------

#[test]
fn parses_the_documented_format() {
    let t = greeting();
    assert_eq!(t.name, "greeting");
    assert_eq!(
        t.placeholders,
        vec![
            Placeholder {
                name: "name".into(),
                kind: PlaceholderType::String,
                required: true
            },
            Placeholder {
                name: "facts".into(),
                kind: PlaceholderType::List,
                required: false
            },
            Placeholder {
                name: "meta".into(),
                kind: PlaceholderType::Object,
                required: false
            },
        ]
    );
    assert_eq!(
        t.sections,
        vec![
            Section {
                name: "intro".into(),
                delimiter: Delimiter::Markdown,
                required: true,
                content: "Hello {{name}}.".into()
            },
            Section {
                name: "facts".into(),
                delimiter: Delimiter::Xml,
                required: false,
                content: "\nWhat we know:\n{{facts}}".into()
            },
            Section {
                name: "meta".into(),
                delimiter: Delimiter::Markdown,
                required: false,
                content: " {{meta}}".into()
            },
        ]
    );
    assert_eq!(t.serialize(), GREETING);
}

#[test]
fn delimiter_like_content_is_escaped_and_round_trips() {
    let content = "</section>\n## fake (optional)\n<section name=\"x\">\n\\already\n# template y\n- {{a}}: string\n\n";
    let t = Template {
        name: "t".into(),
        placeholders: vec![],
        sections: vec![
            Section {
                name: "a".into(),
                delimiter: Delimiter::Xml,
                required: false,
                content: content.into(),
            },
            Section {
                name: "b".into(),
                delimiter: Delimiter::Markdown,
                required: false,
                content: content.into(),
            },
        ],
    };
    let text = t.serialize();
    let escaped = "\\</section>\n\\## fake (optional)\n\\<section name=\"x\">\n\\\\already\n# template y\n- {{a}}: string\n\n\n";
    assert_eq!(
        text,
        format!("# template t\n\n<section name=\"a\" optional>\n{escaped}</section>\n\n## b (optional)\n{escaped}")
    );
    assert_eq!(Template::parse(&text), Ok(t));
}

#[test]
fn empty_and_blank_contents_round_trip() {
    for content in ["", "\n", "\n\n", " ", "\r", "x\n", "\nx"] {
        for delimiter in [Delimiter::Xml, Delimiter::Markdown] {
            let section = |name: &str| Section {
                name: name.into(),
                delimiter,
                required: false,
                content: content.into(),
            };
            let t = Template {
                name: "t".into(),
                placeholders: vec![],
                sections: vec![section("a"), section("b")],
            };
            assert_eq!(Template::parse(&t.serialize()), Ok(t), "{content:?}");
        }
    }
}

#[test]
fn structural_lines_tolerate_trailing_whitespace_and_cr() {
    let text = "# template t \r\n- {{a}}: string (optional)\t\r\n\r\n## s (optional) \r\nbody {{a}}\r\n \r\n<section name=\"x\" optional> \nx\n</section>\r\n";
    let t = Template::load(text).unwrap();
    assert_eq!(t.name, "t");
    assert!(!t.placeholders[0].required);
    // Content keeps its `\r`; only structural lines (and the blank line that ends a
    // Markdown section) are trimmed.
    assert_eq!(t.sections[0].content, "body {{a}}\r");
    assert_eq!(t.sections[1].content, "x");
}

fn parse_err(text: &str) -> TemplateError {
    Template::parse(text).expect_err("the text must not parse")
}

#[test]
fn parse_errors_say_where_and_what() {
    assert!(matches!(parse_err(""), TemplateError::MissingHeader { found } if found.is_empty()));
    assert!(
        matches!(parse_err("## a\nx\n"), TemplateError::MissingHeader { found } if found == "## a")
    );
    assert!(matches!(
        parse_err("# template Bad\n"),
        TemplateError::BadName { line: 1, what: "template", found } if found == "Bad"
    ));
    assert!(matches!(
        parse_err("# template t\n- {{a}} string\n"),
        TemplateError::BadDeclaration { line: 2, .. }
    ));
    let err = parse_err("# template t\n- {{a}}: string\n- {{b}}: int\n");
    assert!(
        matches!(&err, TemplateError::UnknownType { line: 3, placeholder, found } if placeholder == "b" && found == "int")
    );
    assert!(err
        .to_string()
        .contains("expected `string`, `list` or `object`"));
    assert!(matches!(
        parse_err("# template t\n- {{A-b}}: string\n"),
        TemplateError::BadName {
            line: 2,
            what: "placeholder",
            ..
        }
    ));
    assert!(matches!(
        parse_err("# template t\n\nstray text\n"),
        TemplateError::OutsideSection { line: 3, found } if found == "stray text"
    ));
    assert!(matches!(
        parse_err("# template t\n## Has Space\n"),
        TemplateError::BadName {
            line: 2,
            what: "section",
            ..
        }
    ));
    assert!(matches!(
        parse_err("# template t\n<section name='a'>\n</section>\n"),
        TemplateError::BadSectionTag { line: 2, .. }
    ));
    assert!(matches!(
        parse_err("# template t\n<section name=\"a\" required>\n</section>\n"),
        TemplateError::BadSectionTag { line: 2, .. }
    ));
    let err = parse_err("# template t\n<section name=\"a\">\nbody\n");
    assert!(
        matches!(&err, TemplateError::Unclosed { section, opened: 2, line: 4, found } if section == "a" && found == "end of text"),
        "{err}"
    );
    assert!(matches!(
        parse_err("# template t\n<section name=\"a\">\nbody\n## b\n"),
        TemplateError::Unclosed {
            opened: 2,
            line: 4,
            ..
        }
    ));
    assert!(matches!(
        parse_err("# template t\n</section>\n"),
        TemplateError::StrayClose { line: 2, .. }
    ));
    assert!(matches!(
        parse_err("# template t\n## a\nbody\n</section>\n"),
        TemplateError::StrayClose { line: 4, .. }
    ));
}

#[test]
fn quoted_text_in_errors_is_clipped() {
    let long = "x".repeat(500);
    let err = parse_err(&format!("# template t\n{long}\n"));
    assert!(err.to_string().len() < 250, "{err}");
}

// ---- validation --------------------------------------------------------------------------

fn invalid(text: &str) -> TemplateError {
    Template::load(text).expect_err("the template must not validate")
}

#[test]
fn a_missing_required_section_is_named() {
    let err = greeting().expect_sections(&["intro", "outro"]).unwrap_err();
    assert_eq!(
        err,
        TemplateError::MissingSection {
            template: "greeting".into(),
            section: "outro".into()
        }
    );
    assert!(greeting()
        .expect_sections(&["intro", "facts", "meta"])
        .is_ok());
}

#[test]
fn an_empty_required_section_is_refused() {
    let err = invalid("# template t\n\n## a\n  \n\n## b (optional)\n");
    assert_eq!(
        err,
        TemplateError::EmptySection {
            template: "t".into(),
            section: "a".into()
        }
    );
    // An empty optional section is fine.
    assert!(Template::load("# template t\n\n## a\nx\n\n## b (optional)\n").is_ok());
}

#[test]
fn an_undeclared_placeholder_is_named_with_its_section() {
    let err = invalid("# template t\n- {{a}}: string\n\n## s\n{{a}} {{b}}\n");
    assert_eq!(
        err,
        TemplateError::UndeclaredPlaceholder {
            template: "t".into(),
            section: "s".into(),
            placeholder: "b".into()
        }
    );
    assert!(err
        .to_string()
        .contains("placeholder `b` is used but not declared"));
}

#[test]
fn malformed_placeholders_are_refused() {
    for body in [
        "{{ a }}", "{{A}}", "{{a", "{{", "x {{}} y", "{{{a}}}", "{{a-b}}",
    ] {
        let err = invalid(&format!(
            "# template t\n- {{{{a}}}}: string (optional)\n\n## s\n{body}\n"
        ));
        assert!(
            matches!(&err, TemplateError::MalformedPlaceholder { section, .. } if section == "s"),
            "{body}: {err}"
        );
    }
    // Single braces and closing pairs are plain text.
    assert!(Template::load("# template t\n\n## s\n{\"a\": {\"b\": 1}} }} {x}\n").is_ok());
}

#[test]
fn duplicates_are_refused() {
    assert_eq!(
        invalid("# template t\n\n## a\nx\n\n<section name=\"a\">\ny\n</section>\n"),
        TemplateError::DuplicateSection {
            template: "t".into(),
            section: "a".into()
        }
    );
    assert_eq!(
        invalid("# template t\n- {{a}}: string\n- {{a}}: list\n\n## s\n{{a}}\n"),
        TemplateError::DuplicatePlaceholder {
            template: "t".into(),
            placeholder: "a".into()
        }
    );
}

#[test]
fn an_unused_required_placeholder_and_no_sections_are_refused() {
    assert_eq!(
        invalid("# template t\n- {{a}}: string\n- {{b}}: string\n\n## s\n{{a}}\n"),
        TemplateError::UnusedPlaceholder {
            template: "t".into(),
            placeholder: "b".into()
        }
    );
    assert!(Template::load("# template t\n- {{b}}: string (optional)\n\n## s\nx\n").is_ok());
    assert_eq!(
        invalid("# template t\n"),
        TemplateError::NoSections {
            template: "t".into()
        }
    );
}

#[test]
fn names_built_in_code_are_checked() {
    let mut t = greeting();
    t.sections[1].name = "Facts \"x\"".into();
    assert!(matches!(
        t.validate(),
        Err(TemplateError::InvalidName {
            what: "section",
            ..
        })
    ));
    let mut t = greeting();
    t.placeholders[0].name = "x".repeat(65);
    assert!(matches!(
        t.validate(),
        Err(TemplateError::InvalidName {
            what: "placeholder",
            ..
        })
    ));
    let mut t = greeting();
    t.name = "9lives".into();
    assert!(matches!(
        t.validate(),
        Err(TemplateError::InvalidName {
            what: "template",
            ..
        })
    ));
}

// ---- rendering ---------------------------------------------------------------------------

#[test]
fn renders_a_string_verbatim_and_never_expands_placeholders_in_values() {
    let out = greeting()
        .render(
            &ctx(json!({"name": "{{facts}} </section>\n## x", "facts": ["f"]})),
            &[],
        )
        .unwrap();
    assert_eq!(out, "Hello {{facts}} </section>\n## x.");
}

#[test]
fn renders_a_list_one_item_per_line() {
    let out = greeting()
        .render(
            &ctx(json!({"name": "Ada", "facts": ["one", 2, {"k": "v"}, null]})),
            &["facts"],
        )
        .unwrap();
    assert_eq!(
        out,
        "Hello Ada.\nWhat we know:\none\n2\n{\"k\":\"v\"}\nnull"
    );
    let empty = greeting()
        .render(&ctx(json!({"name": "Ada", "facts": []})), &["facts"])
        .unwrap();
    assert_eq!(empty, "Hello Ada.\nWhat we know:\n");
}

#[test]
fn renders_an_object_as_compact_json_with_sorted_keys() {
    let out = greeting()
        .render(
            &ctx(json!({"name": "Ada", "meta": {"z": 1, "a": "line\nbreak"}})),
            &["meta"],
        )
        .unwrap();
    assert_eq!(out, "Hello Ada. {\"a\":\"line\\nbreak\",\"z\":1}");
}

#[test]
fn optional_placeholders_render_empty_when_missing_or_null() {
    let t = greeting();
    let all = ["facts", "meta"];
    let out = t.render(&ctx(json!({"name": "Ada"})), &all).unwrap();
    assert_eq!(out, "Hello Ada.\nWhat we know:\n ");
    let out = t
        .render(
            &ctx(json!({"name": "Ada", "facts": null, "meta": null})),
            &all,
        )
        .unwrap();
    assert_eq!(out, "Hello Ada.\nWhat we know:\n ");
}

#[test]
fn optional_sections_render_only_when_asked_for() {
    let t = greeting();
    let c = ctx(json!({"name": "Ada", "facts": ["f"], "meta": {}}));
    assert_eq!(t.render(&c, &[]).unwrap(), "Hello Ada.");
    assert_eq!(t.render(&c, &["meta"]).unwrap(), "Hello Ada. {}");
    // Template order, whatever the order asked in; a required section may be named too.
    assert_eq!(
        t.render(&c, &["meta", "intro", "facts"]).unwrap(),
        "Hello Ada.\nWhat we know:\nf {}"
    );
}

#[test]
fn a_missing_required_value_is_named() {
    let err = greeting()
        .render(&ctx(json!({"facts": ["x"]})), &[])
        .unwrap_err();
    assert_eq!(
        err,
        TemplateError::MissingValue {
            template: "greeting".into(),
            section: "intro".into(),
            placeholder: "name".into(),
            expected: PlaceholderType::String
        }
    );
    let null = greeting()
        .render(&ctx(json!({"name": null})), &[])
        .unwrap_err();
    assert!(matches!(null, TemplateError::MissingValue { .. }));
}

#[test]
fn a_wrong_type_is_named_with_what_was_expected_and_found() {
    let cases = [
        (
            json!({"name": 3}),
            &[][..],
            "name",
            PlaceholderType::String,
            "number",
        ),
        (
            json!({"name": ["a"]}),
            &[][..],
            "name",
            PlaceholderType::String,
            "list",
        ),
        (
            json!({"name": "a", "facts": "one"}),
            &["facts"][..],
            "facts",
            PlaceholderType::List,
            "string",
        ),
        (
            json!({"name": "a", "meta": [1]}),
            &["meta"][..],
            "meta",
            PlaceholderType::Object,
            "list",
        ),
        (
            json!({"name": "a", "meta": true}),
            &["meta"][..],
            "meta",
            PlaceholderType::Object,
            "boolean",
        ),
    ];
    for (context, include, placeholder, expected, found) in cases {
        let err = greeting().render(&ctx(context), include).unwrap_err();
        assert_eq!(
            err,
            TemplateError::WrongType {
                template: "greeting".into(),
                placeholder: placeholder.into(),
                expected,
                found
            }
        );
        assert!(err.to_string().contains(&format!(
            "placeholder `{placeholder}` expects a {expected}, found a {found}"
        )));
    }
    // A wrong type in a section that is not rendered does not matter.
    assert!(greeting()
        .render(&ctx(json!({"name": "a", "meta": 1})), &[])
        .is_ok());
}

#[test]
fn an_unknown_section_is_named() {
    assert_eq!(
        greeting().render(&ctx(json!({"name": "a"})), &["outro"]),
        Err(TemplateError::UnknownSection {
            template: "greeting".into(),
            section: "outro".into()
        })
    );
}

// ---- properties --------------------------------------------------------------------------

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,63}"
}

fn kind() -> impl Strategy<Value = PlaceholderType> {
    prop_oneof![
        Just(PlaceholderType::String),
        Just(PlaceholderType::List),
        Just(PlaceholderType::Object)
    ]
}

/// Text without `{{` (and never ending in `{`): delimiter lookalikes, escapes, line ends,
/// unicode.
fn text_token() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[^{]{0,12}",
        1 => prop::sample::select(vec![
            "</section>", "</section> ", "<section name=\"a\">", "<section name=\"b\" optional>",
            "<section", "## a", "## b (optional)", "##", "### sub", "# template x",
            "- x: string", "\\", "\\\\", "\\n", "\n", "\n\n", "\r", "\r\n", " ", "\t", "}}", "}",
            "{x", "{ }", "<page>", "</page>", "日本語 🌿 ü", "\u{2028}", "\u{0}", "\u{feff}",
        ])
        .prop_map(str::to_string),
    ]
}

/// Content as tokens: text, or a placeholder (by index into the declarations).
#[derive(Debug, Clone)]
enum Token {
    Text(String),
    Placeholder(usize),
}

#[derive(Debug, Clone)]
struct Generated {
    template: Template,
    tokens: Vec<Vec<Token>>,
}

fn content_tokens(declared: usize) -> impl Strategy<Value = Vec<Token>> {
    let token = if declared == 0 {
        text_token().prop_map(Token::Text).boxed()
    } else {
        prop_oneof![
            3 => text_token().prop_map(Token::Text),
            1 => (0..declared).prop_map(Token::Placeholder),
        ]
        .boxed()
    };
    prop::collection::vec(token, 0..10)
}

fn dedup<T>(items: Vec<T>, key: impl Fn(&T) -> &str) -> Vec<T> {
    let mut seen = std::collections::BTreeSet::new();
    items
        .into_iter()
        .filter(|i| seen.insert(key(i).to_string()))
        .collect()
}

/// Arbitrary valid templates: both delimiters, required/optional mixes, every placeholder
/// type, content full of delimiter-like text.
fn valid_template() -> impl Strategy<Value = Generated> {
    let placeholders =
        prop::collection::vec((name(), kind(), any::<bool>()), 0..6).prop_map(|ps| {
            dedup(ps, |p| &p.0)
                .into_iter()
                .map(|(name, kind, required)| Placeholder {
                    name,
                    kind,
                    required,
                })
                .collect::<Vec<_>>()
        });
    (name(), placeholders).prop_flat_map(|(template_name, placeholders)| {
        let n = placeholders.len();
        let section = (name(), any::<bool>(), any::<bool>(), content_tokens(n));
        prop::collection::vec(section, 1..6).prop_map(move |sections| {
            let mut sections = dedup(sections, |s| &s.0);
            // Every required placeholder is used; every required section has text.
            for (i, p) in placeholders.iter().enumerate() {
                if p.required
                    && !sections.iter().any(|s| {
                        s.3.iter()
                            .any(|t| matches!(t, Token::Placeholder(j) if *j == i))
                    })
                {
                    let at = i % sections.len();
                    sections[at].3.push(Token::Placeholder(i));
                }
            }
            let mut tokens = Vec::new();
            let sections = sections
                .into_iter()
                .map(|(name, xml, required, mut toks)| {
                    let mut content = join(&toks, &placeholders);
                    if required && content.trim().is_empty() {
                        toks.push(Token::Text("x".into()));
                        content = join(&toks, &placeholders);
                    }
                    tokens.push(toks);
                    Section {
                        name,
                        delimiter: if xml {
                            Delimiter::Xml
                        } else {
                            Delimiter::Markdown
                        },
                        required,
                        content,
                    }
                })
                .collect();
            Generated {
                template: Template {
                    name: template_name.clone(),
                    placeholders: placeholders.clone(),
                    sections,
                },
                tokens,
            }
        })
    })
}

fn join(tokens: &[Token], placeholders: &[Placeholder]) -> String {
    tokens
        .iter()
        .map(|t| match t {
            Token::Text(text) => text.clone(),
            Token::Placeholder(i) => format!("{{{{{}}}}}", placeholders[*i].name),
        })
        .collect()
}

/// A value of `kind`, or (sometimes) of another JSON type, or absent.
fn value_for(kind: PlaceholderType) -> impl Strategy<Value = Option<Value>> {
    let right = match kind {
        PlaceholderType::String => "\\PC{0,8}|\\{\\{[a-z]{1,3}\\}\\}"
            .prop_map(Value::String)
            .boxed(),
        PlaceholderType::List => prop::collection::vec(
            prop_oneof![
                "\\PC{0,6}".prop_map(Value::String),
                any::<i32>().prop_map(Value::from)
            ],
            0..4,
        )
        .prop_map(Value::Array)
        .boxed(),
        PlaceholderType::Object => prop::collection::btree_map("[a-z]{1,3}", "\\PC{0,6}", 0..3)
            .prop_map(|m| json!(m))
            .boxed(),
    };
    prop_oneof![
        6 => right.prop_map(Some),
        1 => Just(None),
        1 => Just(Some(Value::Null)),
        1 => prop_oneof![
            Just(json!(1)),
            Just(json!(true)),
            Just(json!("s")),
            Just(json!([1])),
            Just(json!({"k": 1}))
        ]
        .prop_map(Some),
    ]
}

/// What rendering must give: an independent, token-level oracle.
fn expected_render(
    g: &Generated,
    context: &Context,
    include: &[String],
) -> Result<String, TemplateError> {
    let t = &g.template;
    let mut out = String::new();
    for (section, tokens) in t.sections.iter().zip(&g.tokens) {
        if !(section.required || include.contains(&section.name)) {
            continue;
        }
        for token in tokens {
            let i = match token {
                Token::Text(text) => {
                    out.push_str(text);
                    continue;
                }
                Token::Placeholder(i) => *i,
            };
            let p = &t.placeholders[i];
            let found = |v: &Value| match v {
                Value::Bool(_) => "boolean",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                Value::Array(_) => "list",
                _ => "object",
            };
            match (p.kind, context.get(&p.name)) {
                (_, None | Some(Value::Null)) if p.required => {
                    return Err(TemplateError::MissingValue {
                        template: t.name.clone(),
                        section: section.name.clone(),
                        placeholder: p.name.clone(),
                        expected: p.kind,
                    })
                }
                (_, None | Some(Value::Null)) => {}
                (PlaceholderType::String, Some(Value::String(s))) => out.push_str(s),
                (PlaceholderType::List, Some(Value::Array(items))) => {
                    let lines: Vec<String> = items
                        .iter()
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                        .collect();
                    out.push_str(&lines.join("\n"));
                }
                (PlaceholderType::Object, Some(v @ Value::Object(_))) => {
                    out.push_str(&v.to_string())
                }
                (_, Some(v)) => {
                    return Err(TemplateError::WrongType {
                        template: t.name.clone(),
                        placeholder: p.name.clone(),
                        expected: p.kind,
                        found: found(v),
                    })
                }
            }
        }
    }
    Ok(out)
}

fn with_context() -> impl Strategy<Value = (Generated, Context, Vec<String>)> {
    valid_template().prop_flat_map(|g| {
        let values: Vec<_> = g
            .template
            .placeholders
            .iter()
            .map(|p| value_for(p.kind))
            .collect();
        let names: Vec<String> = g.template.sections.iter().map(|s| s.name.clone()).collect();
        let include = prop::sample::subsequence(names.clone(), 0..=names.len());
        (Just(g), values, include).prop_map(|(g, values, include)| {
            let context = g
                .template
                .placeholders
                .iter()
                .zip(values)
                .filter_map(|(p, v)| v.map(|v| (p.name.clone(), v)))
                .collect();
            (g, context, include)
        })
    })
}

/// Any text at all, or text built from delimiter lookalikes and (malformed) placeholders.
fn any_content() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        text_token(),
        prop::sample::select(vec!["{{", "{{a}}", "{{ x }}", "{", "{{{b}}}"])
            .prop_map(str::to_string),
    ];
    prop_oneof![
        any::<String>(),
        prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
    ]
}

/// Lines that look like the format's structure, to make parse-able and nearly parse-able text.
fn structured_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("# template t".to_string()),
        Just("- {{a}}: string".to_string()),
        Just("- {{b}}: list (optional)".to_string()),
        Just("- {{c}}: object".to_string()),
        Just("- {{d}}: int".to_string()),
        Just("## s".to_string()),
        Just("## s (optional)".to_string()),
        Just("## u".to_string()),
        Just("<section name=\"x\">".to_string()),
        Just("<section name=\"y\" optional>".to_string()),
        Just("<section name=\"x".to_string()),
        Just("</section>".to_string()),
        Just("</section >".to_string()),
        Just(String::new()),
        Just("{{a}} {{b}} {{ c }} {{".to_string()),
        Just("\\## s".to_string()),
        "[^\n]{0,10}",
    ];
    prop::collection::vec(line, 0..14).prop_map(|mut lines| {
        lines.insert(0, "# template t".into());
        lines.join("\n")
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Property 16: any valid template round-trips through serialize/parse unchanged.
    #[test]
    fn property_16_valid_templates_round_trip(g in valid_template()) {
        prop_assert_eq!(g.template.validate(), Ok(()));
        let text = g.template.serialize();
        prop_assert_eq!(Template::load(&text), Ok(g.template.clone()));
        // Serializing again gives the same text: it is canonical.
        prop_assert_eq!(Template::parse(&text).unwrap().serialize(), text);
    }

    /// Escaping handles any content whatsoever, even content that would not validate.
    #[test]
    fn any_content_round_trips(
        template in name(),
        sections in prop::collection::vec((name(), any::<bool>(), any::<bool>(), any_content()), 0..5),
    ) {
        let t = Template {
            name: template,
            placeholders: vec![],
            sections: sections
                .into_iter()
                .map(|(name, xml, required, content)| Section {
                    name,
                    delimiter: if xml { Delimiter::Xml } else { Delimiter::Markdown },
                    required,
                    content,
                })
                .collect(),
        };
        prop_assert_eq!(Template::parse(&t.serialize()), Ok(t));
    }

    /// Parsing never panics; whatever parses serializes to text that parses back equal.
    #[test]
    fn parse_never_panics(text in prop_oneof![any::<String>(), structured_text()]) {
        if let Ok(t) = Template::parse(&text) {
            prop_assert_eq!(Template::parse(&t.serialize()), Ok(t.clone()));
            // Validation never panics either.
            let _ = t.validate();
        }
    }

    /// Rendering matches a token-level oracle: values substituted in one pass, lists one
    /// item per line, objects as JSON, optional values empty, and the first missing or
    /// mistyped value reported by name.
    #[test]
    fn render_matches_the_oracle((g, context, include) in with_context()) {
        let include_refs: Vec<&str> = include.iter().map(String::as_str).collect();
        let rendered = g.template.render(&context, &include_refs);
        prop_assert_eq!(rendered, expected_render(&g, &context, &include));
    }

    /// Rendering any parsed text with any context never panics, and an error names the
    /// template (and what went wrong) rather than being silent.
    #[test]
    fn render_never_panics(
        text in structured_text(),
        context in prop::collection::btree_map(
            prop_oneof![Just("a".to_string()), Just("b".to_string()), Just("c".to_string()), "[a-z]{1,2}"],
            prop_oneof![Just(Value::Null), Just(json!(1)), Just(json!("v {{a}}")), Just(json!(["x"])), Just(json!({"k": "v"}))],
            0..4,
        ),
        include in prop::collection::vec(prop_oneof![Just("s"), Just("x"), Just("y"), Just("u"), Just("z")], 0..3),
    ) {
        if let Ok(t) = Template::parse(&text) {
            let context: Context = context.into_iter().collect();
            match t.render(&context, &include) {
                Ok(_) => {}
                Err(e) => prop_assert!(e.to_string().contains("template `t`"), "{}", e),
            }
        }
    }
}
