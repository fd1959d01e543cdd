//! The crate's layers: each top-level module may use only the modules below it in
//! [`LAYERS`], so there is no cycle between them.
//! Reads every non-test `crate::` path in `src/` (a plain-text check, so CI needs no extra
//! tool).

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// Bottom first: a module, and the modules it may use (all of them earlier in this list).
const LAYERS: &[(&str, &[&str])] = &[
    ("url", &[]),
    ("types", &["url"]),
    ("template", &["url", "types"]),
    ("actions", &["url", "types", "template"]),
    ("page", &["url", "types", "template"]),
    ("ports", &["url", "types", "template"]),
    ("llm", &["url", "types", "template", "page", "ports"]),
    ("search", &["url", "types", "template", "page", "ports"]),
    ("tools", &["url", "types", "template", "page", "ports"]),
    (
        "state",
        &[
            "url", "types", "template", "actions", "page", "ports", "tools",
        ],
    ),
    (
        "settings",
        &[
            "url", "types", "template", "actions", "page", "ports", "llm", "search", "state",
        ],
    ),
    (
        "agent",
        &[
            "url", "types", "template", "actions", "page", "ports", "llm", "search", "tools",
            "state",
        ],
    ),
    (
        "protocol",
        &[
            "url", "types", "template", "actions", "page", "ports", "llm", "search", "tools",
            "state", "settings", "agent",
        ],
    ),
    (
        "service",
        &[
            "url", "types", "template", "actions", "page", "ports", "llm", "search", "tools",
            "state", "settings", "agent", "protocol",
        ],
    ),
    (
        "testing",
        &[
            "url", "types", "template", "actions", "page", "ports", "llm", "search", "tools",
            "state", "settings", "agent", "protocol", "service",
        ],
    ),
    (
        "bench",
        &[
            "url", "types", "template", "actions", "page", "ports", "llm", "search", "tools",
            "state", "settings", "agent", "protocol", "service", "testing",
        ],
    ),
    (
        "web",
        &[
            "url", "types", "template", "actions", "page", "ports", "llm", "search", "tools",
            "state", "settings", "agent", "protocol", "service", "bench",
        ],
    ),
];

/// The code of a file without its inline `#[cfg(test)]` module(s) and comments.
fn non_test_code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            // Skip the item that follows: up to its matching closing brace.
            let mut depth = 0i32;
            let mut opened = false;
            for next in lines.by_ref() {
                depth += next.matches('{').count() as i32 - next.matches('}').count() as i32;
                opened |= next.contains('{');
                if opened && depth <= 0 || !opened && next.trim_end().ends_with(';') {
                    break;
                }
            }
            continue;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The top-level modules `code` names through `crate::` (`use crate::{a, b::c}` included).
fn used_modules(code: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            // Nested braces are rare; the first names of each comma-separated part count.
            for part in group[..end].split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    used.insert(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            used.insert(name);
        }
    }
    used
}

/// The top-level module a file under `src/` belongs to by its place.
fn top_module(relative: &Path) -> String {
    relative
        .components()
        .next()
        .and_then(|c| c.as_os_str().to_str())
        .expect("name")
        .trim_end_matches(".rs")
        .to_string()
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_layer_table_has_no_cycle() {
    for (i, (name, allowed)) in LAYERS.iter().enumerate() {
        let below: Vec<&str> = LAYERS[..i].iter().map(|(n, _)| *n).collect();
        for dep in *allowed {
            assert!(
                below.contains(dep),
                "{name} may use {dep}, which is not below it"
            );
        }
    }
}

#[test]
fn every_module_uses_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    let mut seen = BTreeSet::new();
    // A file declared with `#[path]` (a capability's state type, compiled into `state`)
    // belongs to the layer of the module that declares it, not to the folder it sits in.
    let mut declared_in: std::collections::BTreeMap<std::path::PathBuf, String> =
        std::collections::BTreeMap::new();
    for file in &files {
        let text = fs::read_to_string(file).expect("read");
        for at in crate::cycles::path_attributes(&text).values() {
            let target = file.parent().expect("dir").join(at);
            let target = fs::canonicalize(&target).expect("a #[path] file exists");
            declared_in.insert(
                target,
                top_module(file.strip_prefix(&src).expect("under src")),
            );
        }
    }
    for file in &files {
        let relative = file.strip_prefix(&src).expect("under src");
        let top = declared_in
            .get(&fs::canonicalize(file).expect("canonical"))
            .cloned()
            .unwrap_or_else(|| top_module(relative));
        if top == "lib" {
            continue;
        }
        let (_, allowed) = LAYERS
            .iter()
            .find(|(name, _)| *name == top)
            .unwrap_or_else(|| {
                panic!("src/{top} is not in the layer table of tests/native/layers.rs")
            });
        seen.insert(top.clone());
        let code = non_test_code(&fs::read_to_string(file).expect("read"));
        for used in used_modules(&code) {
            if used != top && !allowed.contains(&used.as_str()) {
                violations.push(format!("{} uses crate::{used}", relative.display()));
            }
        }
    }
    assert!(seen.len() >= 10, "found only {seen:?}");
    assert!(
        violations.is_empty(),
        "layer violations:\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_scanner_sees_grouped_and_inline_paths_and_skips_tests() {
    let code = non_test_code(
        "use crate::{agent::Engine, llm};\nfn f() { crate::state::save(); }\n// crate::web\n#[cfg(test)]\nmod tests {\n    use crate::testing::X;\n}\n",
    );
    let used: Vec<String> = used_modules(&code).into_iter().collect();
    assert_eq!(used, ["agent", "llm", "state"]);
}
