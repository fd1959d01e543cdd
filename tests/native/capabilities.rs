//! The layout rule of `agent::capabilities`: each capability's files are in its folder (its
//! transitions, prompt code, templates and state type), and nowhere else; every template
//! file of the crate is one the registry lists.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use knowledgelens::agent::capabilities::{templates, CAPABILITIES};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` with the extension `ext`.
fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

#[test]
fn each_capability_folder_holds_its_transitions_prompt_templates_and_state() {
    let state_mod = fs::read_to_string(root().join("src/state/mod.rs")).expect("state/mod.rs");
    for cap in CAPABILITIES {
        let folder = root().join(cap.folder);
        for file in ["mod.rs", "prompt.rs"] {
            assert!(folder.join(file).is_file(), "{}: no {file}", cap.name);
        }
        assert!(!cap.templates.is_empty(), "{}: no template", cap.name);
        for template in cap.templates {
            assert!(
                folder.join(template.file).is_file(),
                "{}: {} is not in {}",
                cap.name,
                template.file,
                cap.folder
            );
        }
        let state_file = folder.join("state.rs");
        match cap.state {
            Some(module) => {
                assert!(state_file.is_file(), "{}: no state.rs", cap.name);
                let declared = format!(
                    "#[path = \"../agent/step/{}/state.rs\"]\npub mod {module};",
                    folder.file_name().and_then(|n| n.to_str()).expect("name")
                );
                assert!(
                    state_mod.contains(&declared),
                    "{}: state/mod.rs does not declare `{declared}`",
                    cap.name
                );
                assert!(
                    !root().join(format!("src/state/{module}.rs")).exists(),
                    "{}: a second state file in src/state/",
                    cap.name
                );
            }
            None => assert!(
                !state_file.exists(),
                "{}: state.rs not registered",
                cap.name
            ),
        }
    }
}

#[test]
fn every_template_file_is_registered_and_beside_its_code() {
    let mut found = Vec::new();
    files(&root().join("src"), "tpl", &mut found);
    let found: BTreeSet<String> = found
        .iter()
        .map(|p| {
            p.strip_prefix(root())
                .expect("under root")
                .display()
                .to_string()
        })
        .collect();
    let registered: BTreeSet<String> = templates()
        .map(|(folder, template)| format!("{folder}/{}", template.file))
        .collect();
    assert_eq!(found, registered);
    assert_eq!(
        templates().count(),
        registered.len(),
        "a template listed twice"
    );
}
