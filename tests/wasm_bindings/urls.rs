//! The browser's own URL parser as the crate's one parser (src/web/urls.rs), in Node, a
//! Chromium page and a Chromium service worker: every row of `tests/fixtures/urls.json`
//! reads to the same host, and to the same decisions (Settings' check, a key in clear), as in the native tests (the
//! `url` crate) and the options page. Chromium's URL differs from the standard on one row (a
//! space in a host), which the table records; both sides refuse such an address.
#![cfg(target_arch = "wasm32")]

use knowledgelens::settings::Settings;
use knowledgelens::types::secrets::key_in_clear;
use knowledgelens::url::set_parser;
use knowledgelens::web::urls::parse;
use wasm_bindgen_test::*;

/// Whether this runs in Chromium (a page or a service worker), not Node.
fn in_chromium() -> bool {
    let navigator = js_sys::Reflect::get(&js_sys::global(), &"navigator".into());
    let agent = navigator.and_then(|n| js_sys::Reflect::get(&n, &"userAgent".into()));
    agent
        .ok()
        .and_then(|a| a.as_string())
        .is_some_and(|a| a.contains("Chrome"))
}

#[wasm_bindgen_test]
fn tricky_addresses_read_as_the_table_says() {
    let table: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/urls.json")).expect("urls.json");
    let rows = table["rows"].as_array().expect("rows");
    assert!(rows.len() >= 30, "the table lost its rows");
    set_parser(parse);
    let mut differences = vec![];
    for row in rows {
        let text = row["url"].as_str().expect("url").trim();
        let url = parse(text);
        let host = match row.get("chromium_host") {
            Some(host) if in_chromium() => host.as_str(),
            _ => row["host"].as_str(),
        };
        let read = url.as_ref().map(|u| u.host.as_str());
        if read != host {
            differences.push(format!("{text}: {read:?}, not {host:?}"));
            continue;
        }
        let settings = Settings {
            base_url: text.into(),
            api_key: "sk-secret".into(),
            ..Settings::default()
        }
        .validated();
        let in_clear = key_in_clear(text, "sk-secret");
        match row["key"].as_str().expect("key") {
            "allowed" => assert!(settings.is_ok() && !in_clear, "{text}"),
            "refused" => assert!(settings.is_ok() && in_clear, "{text}"),
            _ => assert!(settings.is_err(), "{text}"),
        }
    }
    assert!(differences.is_empty(), "{differences:#?}");
}
