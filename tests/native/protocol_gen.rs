//! `extension/protocol.gen.js`, its declarations with the message types
//! (`extension/protocol.gen.d.ts`), `docs/protocol.md` and `extension/content/constants.gen.js`
//! are generated from the crate (`protocol::gen::protocol_js`, `typedefs::protocol_dts`,
//! `docs::protocol_md`, `content_js`): this fails when a committed file differs from what the
//! crate generates now, and rewrites them when run with `KL_BLESS=1`.

use std::path::Path;

use knowledgelens::protocol::gen::{
    content_js, protocol_js, settings_error_kinds, CONTENT_PATH, PATH,
};
use knowledgelens::protocol::ApiErrorKind;
use knowledgelens::types::RunErrorKind;

/// Fails when `relative` differs from `generated` (rewrites it under `KL_BLESS=1`).
fn check_generated(relative: &str, generated: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    if std::env::var_os("KL_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, generated).expect("write the generated file");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{relative} is stale (or missing): it differs from what the crate generates. Rewrite \
         it with `KL_BLESS=1 cargo test --test native protocol_gen::` and commit it."
    );
}

#[test]
fn the_generated_protocol_file_is_up_to_date() {
    check_generated(PATH, &protocol_js());
}

#[test]
fn the_generated_typedefs_are_up_to_date() {
    use knowledgelens::protocol::gen::typedefs;
    check_generated(typedefs::PATH, &typedefs::protocol_dts());
}

#[test]
fn the_generated_protocol_doc_is_up_to_date() {
    use knowledgelens::protocol::gen::docs;
    check_generated(docs::PATH, &docs::protocol_md());
}

#[test]
fn every_request_has_a_reply_type_and_a_schema() {
    use knowledgelens::protocol::gen::typedefs::Catalog;
    use knowledgelens::protocol::Command;
    let catalog = Catalog::new();
    let replies: Vec<&str> = catalog.replies.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        replies,
        Command::NAMES,
        "one reply per request, in the order of the names"
    );
    let tags: Vec<&str> = catalog.definitions["Command"]["oneOf"]
        .as_array()
        .expect("requests are a tagged union")
        .iter()
        .map(|v| v["properties"]["type"]["const"].as_str().expect("a tag"))
        .collect();
    assert_eq!(
        tags,
        Command::NAMES,
        "the schema's request types are the parsed ones"
    );
}

#[test]
fn the_generated_content_constants_are_up_to_date() {
    check_generated(CONTENT_PATH, &content_js());
}

#[test]
fn both_generated_files_carry_the_one_page_cap() {
    let cap = knowledgelens::protocol::MAX_PAGE_CHARS;
    assert_eq!(cap, 2_000_000);
    assert!(protocol_js().contains(&format!("export const MAX_PAGE_CHARS = {cap};")));
    assert!(content_js().contains(&format!("\"MAX_PAGE_CHARS\": {cap}")));
}

#[test]
fn every_settings_error_kind_is_a_real_kind() {
    for kind in settings_error_kinds() {
        let api = ApiErrorKind::ALL.iter().any(|k| k.name() == kind);
        let run = RunErrorKind::ALL.iter().any(|k| k.name() == kind);
        assert!(
            api || run,
            "{kind} is neither a request nor a run error kind"
        );
    }
}

#[test]
fn api_error_kind_names_are_serde_names() {
    for kind in ApiErrorKind::ALL {
        assert_eq!(serde_json::to_value(kind).expect("ser"), kind.name());
    }
}

#[test]
fn the_page_scripts_inject_the_generated_constants_first() {
    use knowledgelens::protocol::gen::CONTENT_CONSTANTS;
    let pages =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/web/pages.rs"))
            .expect("read src/web/pages.rs");
    for list in ["EXTRACT_SCRIPTS", "LOCATE_SCRIPTS"] {
        let start = pages.find(&format!("pub const {list}")).expect(list);
        let first = pages[start..].split('"').nth(1).unwrap_or_default();
        assert_eq!(
            first, CONTENT_CONSTANTS,
            "{list} must inject the constants first"
        );
    }
}
