//! No module cycles inside a folder: for every module F with child modules (the
//! crate root, `agent`, `llm`, `page`, ..., and the JSON crate's), the graph among F's direct
//! children, each child's whole subtree collapsed into it, has no cycle. `layers.rs` holds
//! the top-level order; this test holds every level below it.
//!
//! A plain-text check (CI needs no extra tool), with approximate name resolution. It reads
//! the files reached from `src/lib.rs` through `mod x;` declarations, with comments, string
//! and character literals blanked and every `#[cfg(test)]` item left out (so a
//! `#[cfg(test)] mod tests;` file is not read). Inline `mod x { ... }` blocks are followed.
//! A path names a module when it is
//! - a `crate::` path (`$crate::` too), `use crate::x::{a, b::{c, self}}` groups expanded;
//! - a `super::` / `self::` path, resolved from the module the code is in;
//! - a bare `name::` path whose `name` is a module declared in the same module, or, when the
//!   file has `use super::*`, a module declared in its parent (a sibling).
//!
//! Not seen: names brought in by `use` and then written bare (the `use` line is the edge),
//! re-exports (a path to F's own `mod.rs` item counts for F, not for the child it re-exports,
//! so edges to F itself and from F's `mod.rs` are not counted), macros that build paths.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};

mod tokens;
use tokens::{tokens, without_tests, Tok};

/// One file's code, read once.
struct File {
    /// Shown in failures, relative to the crate.
    shown: String,
    tokens: Vec<(Tok, usize)>,
    /// The module each token is in (inline `mod x { ... }` blocks followed).
    scopes: Vec<Vec<String>>,
    /// The modules declared in it, by module path (inline ones included).
    declared: BTreeMap<Vec<String>, BTreeSet<String>>,
    /// It says `use super::*`.
    glob_super: bool,
}

/// A path the code names: its segments (the first as written) and the line.
type Named = (Vec<String>, usize);

/// The paths at `at` (an identifier starting a path), groups expanded, and the index after.
fn path_at(
    tokens: &[(Tok, usize)],
    mut at: usize,
    prefix: Vec<String>,
) -> (Vec<Vec<String>>, usize) {
    let mut segments = prefix;
    loop {
        match tokens.get(at).map(|t| &t.0) {
            Some(Tok::Ident(name)) if name != "as" => segments.push(name.clone()),
            Some(Tok::Other('*')) => return (vec![segments], at + 1),
            Some(Tok::Open) => {
                let mut all = Vec::new();
                at += 1;
                while let Some((tok, _)) = tokens.get(at) {
                    match tok {
                        Tok::Close => return (all, at + 1),
                        Tok::Other(',') => at += 1,
                        _ => {
                            let (paths, after) = path_at(tokens, at, segments.clone());
                            all.extend(paths.into_iter().map(|mut p| {
                                if p.last().is_some_and(|s| s == "self") {
                                    p.pop();
                                }
                                p
                            }));
                            at = after.max(at + 1);
                        }
                    }
                }
                return (all, at);
            }
            _ => return (vec![segments], at),
        }
        at += 1;
        if tokens.get(at).map(|t| &t.0) != Some(&Tok::Sep) {
            return (vec![segments], at);
        }
        at += 1;
    }
}

/// `text` as the module `module`, and the file modules it declares (name, module path).
fn parse(text: &str, module: Vec<String>, shown: String) -> (File, Vec<(String, Vec<String>)>) {
    let tokens = without_tests(tokens(text));
    let mut declared: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    let mut inline: Vec<(Vec<String>, i32)> = Vec::new();
    let mut depth = 0;
    let mut children = Vec::new();
    let mut scopes = Vec::new();
    for (i, (tok, _)) in tokens.iter().enumerate() {
        let here = inline.last().map_or(&module, |(m, _)| m).clone();
        scopes.push(here.clone());
        match tok {
            Tok::Open => depth += 1,
            Tok::Close => {
                depth -= 1;
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Tok::Ident(word) if word == "mod" => {
                let Some((Tok::Ident(name), _)) = tokens.get(i + 1) else {
                    continue;
                };
                declared
                    .entry(here.clone())
                    .or_default()
                    .insert(name.clone());
                let mut child = here.clone();
                child.push(name.clone());
                match tokens.get(i + 2).map(|t| &t.0) {
                    Some(Tok::Semi) => children.push((name.clone(), child)),
                    Some(Tok::Open) => inline.push((child, depth)),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let glob_super = tokens.windows(4).any(|w| {
        w[0].0 == Tok::Ident("use".into())
            && w[1].0 == Tok::Ident("super".into())
            && w[2].0 == Tok::Sep
            && w[3].0 == Tok::Other('*')
    });
    let file = File {
        shown,
        tokens,
        scopes,
        declared,
        glob_super,
    };
    (file, children)
}

/// Reads `path` as the module `module`, and the files of the modules it declares.
fn read_module(path: &Path, module: Vec<String>, src: &Path, files: &mut Vec<File>) {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let shown = format!(
        "src/{}",
        path.strip_prefix(src).expect("under src").display()
    );
    let (file, children) = parse(&text, module, shown);
    files.push(file);
    let stem = path.file_stem().and_then(|s| s.to_str()).expect("name");
    let dir = if stem == "mod" || stem == "lib" {
        path.parent().expect("dir").to_path_buf()
    } else {
        path.with_extension("")
    };
    let at_paths = path_attributes(&text);
    for (name, child) in children {
        let flat = dir.join(format!("{name}.rs"));
        let file: PathBuf = if let Some(at) = at_paths.get(&name) {
            // `#[path]` is relative to the declaring file's folder.
            path.parent().expect("dir").join(at)
        } else if flat.exists() {
            flat
        } else {
            dir.join(&name).join("mod.rs")
        };
        read_module(&file, child, src, files);
    }
}

/// The modules declared with `#[path = "..."]` in `text`, and their paths: the attribute on
/// its own line, the `mod name;` on the next.
pub(crate) fn path_attributes(text: &str) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut lines = text.lines().map(str::trim).peekable();
    while let Some(line) = lines.next() {
        let Some(at) = line
            .strip_prefix("#[path = \"")
            .and_then(|rest| rest.strip_suffix("\"]"))
        else {
            continue;
        };
        let Some(next) = lines.peek() else { break };
        let declared = next
            .trim_start_matches("pub ")
            .trim_start_matches("pub(crate) ");
        if let Some(name) = declared
            .strip_prefix("mod ")
            .and_then(|rest| rest.strip_suffix(';'))
        {
            found.insert(name.to_string(), at.to_string());
        }
    }
    found
}

/// Every path `file` names, as written, with the module path of the code naming it.
fn named_paths(file: &File) -> Vec<(Vec<String>, Named)> {
    let mut out = Vec::new();
    let tokens = &file.tokens;
    let mut i = 0;
    while i < tokens.len() {
        let starts_path = (i == 0 || tokens[i - 1].0 != Tok::Sep)
            && matches!(tokens[i].0, Tok::Ident(_))
            && tokens.get(i + 1).map(|t| &t.0) == Some(&Tok::Sep);
        if !starts_path {
            i += 1;
            continue;
        }
        let line = tokens[i].1;
        let (paths, after) = path_at(tokens, i, Vec::new());
        let here = &file.scopes[i];
        out.extend(paths.into_iter().map(|p| (here.clone(), (p, line))));
        i = after.max(i + 1);
    }
    out
}

/// The module path `path` (as written in `module` of `file`) names, if it names one.
fn resolve(path: &[String], module: &[String], file: &File, all: &Modules) -> Option<Vec<String>> {
    let first = path.first()?.as_str();
    let rest = &path[1..];
    let mut base: Vec<String> = match first {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => {
            let ups = 1 + rest.iter().take_while(|s| *s == "super").count();
            let kept = module.len().checked_sub(ups)?;
            let mut base = module[..kept].to_vec();
            base.extend(rest[ups - 1..].iter().cloned());
            return Some(base);
        }
        name if all.get(module).is_some_and(|c| c.contains(name)) => {
            let mut base = module.to_vec();
            base.push(name.to_string());
            base
        }
        name if file.glob_super
            && !module.is_empty()
            && all
                .get(&module[..module.len() - 1])
                .is_some_and(|c| c.contains(name)) =>
        {
            let mut base = module[..module.len() - 1].to_vec();
            base.push(name.to_string());
            base
        }
        _ => return None,
    };
    base.extend(rest.iter().cloned());
    Some(base)
}

/// Every module with children, and its children's names.
type Modules = BTreeMap<Vec<String>, BTreeSet<String>>;

/// Edges among the children of each folder module: (folder, from, to) -> the first
/// `file:line` that makes it.
type Edges = BTreeMap<(Vec<String>, String, String), String>;

fn edges(files: &[File]) -> (Modules, Edges) {
    let mut modules = Modules::new();
    for file in files {
        for (module, names) in &file.declared {
            modules
                .entry(module.clone())
                .or_default()
                .extend(names.iter().cloned());
        }
    }
    let mut edges = Edges::new();
    for file in files {
        for (here, (path, line)) in named_paths(file) {
            let Some(target) = resolve(&path, &here, file, &modules) else {
                continue;
            };
            for depth in 0..here.len() {
                let folder = &here[..depth];
                let (Some(from), Some(to)) = (here.get(depth), target.get(depth)) else {
                    continue;
                };
                let is_child = modules.get(folder).is_some_and(|c| c.contains(to));
                if from != to && target.starts_with(folder) && is_child {
                    let key = (folder.to_vec(), from.clone(), to.clone());
                    edges
                        .entry(key)
                        .or_insert_with(|| format!("{}:{line}", file.shown));
                }
            }
        }
    }
    (modules, edges)
}

/// The strongly connected parts (over one member) of each folder's graph, each with one
/// cycle through its first member: the folder, the sorted members and the cycle's edges.
fn cycles(modules: &Modules, edges: &Edges) -> Vec<(String, Vec<String>, Vec<String>)> {
    let mut found = Vec::new();
    for (folder, children) in modules {
        let next = |a: &String| -> Vec<String> {
            children
                .iter()
                .filter(|b| edges.contains_key(&(folder.clone(), a.clone(), (*b).clone())))
                .cloned()
                .collect()
        };
        let reach = |from: &String| -> BTreeMap<String, String> {
            // Breadth first: each reached module, and the module it was reached from.
            let mut seen = BTreeMap::new();
            let mut queue = VecDeque::from([from.clone()]);
            while let Some(a) = queue.pop_front() {
                for b in next(&a) {
                    if !seen.contains_key(&b) {
                        seen.insert(b.clone(), a.clone());
                        queue.push_back(b);
                    }
                }
            }
            seen
        };
        let mut placed = BTreeSet::new();
        for child in children {
            let from_child = reach(child);
            if placed.contains(child) || !from_child.contains_key(child) {
                continue;
            }
            let members: Vec<String> = children
                .iter()
                .filter(|b| {
                    *b == child || from_child.contains_key(*b) && reach(b).contains_key(child)
                })
                .cloned()
                .collect();
            placed.extend(members.iter().cloned());
            let mut cycle = Vec::new();
            let mut at = child.clone();
            loop {
                let before = from_child[&at].clone();
                let edge = &edges[&(folder.clone(), before.clone(), at.clone())];
                cycle.push(format!("{before} -> {at} ({edge})"));
                if &before == child {
                    break;
                }
                at = before;
            }
            cycle.reverse();
            found.push((folder.join("::"), members, cycle));
        }
    }
    found
}

/// The cycles among the modules of the crate whose root is `src/lib.rs` under `dir`.
fn crate_cycles(dir: &Path, least_files: usize) -> Vec<(String, Vec<String>, Vec<String>)> {
    let src = dir.join("src");
    let mut files = Vec::new();
    read_module(&src.join("lib.rs"), Vec::new(), &src, &mut files);
    assert!(
        files.len() >= least_files,
        "read only {} files of {}",
        files.len(),
        dir.display()
    );
    let (modules, edges) = edges(&files);
    cycles(&modules, &edges)
}

/// No cycle in this crate or in the JSON crate (crates/kljson).
#[test]
fn no_folder_has_a_module_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut report = Vec::new();
    for (dir, least_files) in [(root.to_path_buf(), 100), (root.join("crates/kljson"), 8)] {
        for (folder, members, cycle) in crate_cycles(&dir, least_files) {
            report.push(format!(
                "{}: {folder}: {{{}}}\n  {}",
                dir.display(),
                members.join(", "),
                cycle.join("\n  ")
            ));
        }
    }
    assert!(report.is_empty(), "module cycles:\n{}", report.join("\n"));
}

#[test]
fn the_scanner_resolves_groups_super_and_siblings_and_skips_tests() {
    let text = "use crate::a::{b::{self, c}, d};\n// crate::no\nfn f() { super::super::e::g(); \
                let s = \"crate::no\"; h::i(); }\n#[cfg(test)]\nmod tests { use crate::t; }\n\
                mod h;\nmod inner { fn k() { super::j::x(); } }\nuse super::*;\n";
    let (file, children) = parse(text, vec!["m".into(), "n".into()], "x.rs".into());
    assert!(file.glob_super);
    assert_eq!(
        children,
        [("h".to_string(), vec!["m".into(), "n".into(), "h".into()])]
    );
    let modules = Modules::from([
        (
            vec!["m".into(), "n".into()],
            BTreeSet::from(["h".to_string()]),
        ),
        (
            vec!["m".into()],
            BTreeSet::from(["j".to_string(), "n".to_string()]),
        ),
    ]);
    let resolved: Vec<(String, usize)> = named_paths(&file)
        .into_iter()
        .filter_map(|(here, (path, line))| {
            resolve(&path, &here, &file, &modules).map(|p| (p.join("::"), line))
        })
        .collect();
    let want = [
        ("a::b", 1),
        ("a::b::c", 1),
        ("a::d", 1),
        ("e::g", 3),
        ("m::n::h::i", 3),
        ("m::n::j::x", 7),
        ("m", 8),
    ];
    let want: Vec<(String, usize)> = want.iter().map(|(p, l)| (p.to_string(), *l)).collect();
    assert_eq!(resolved, want);
}
