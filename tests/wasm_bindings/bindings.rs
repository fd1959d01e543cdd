//! The browser bindings under wasm-bindgen-test (Node, a Chromium page and a service
//! worker): `chrome.storage` through a stand-in installed on `globalThis.chrome` (a test page
//! is not an extension; the real one is covered end to end), `fetch` streaming through a
//! stand-in `fetch` that answers with a real `Response` over a `ReadableStream`, and the
//! exported `Backend` answering a question.
#![cfg(target_arch = "wasm32")]

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Function, Promise, Reflect};
use knowledgelens::llm::formats::openai::OpenAiWire;
use knowledgelens::llm::transport::HttpLlm;
use knowledgelens::llm::ProviderConfig;
use knowledgelens::llm::{ChatMessage, ChatRequest, LlmErrorKind, Role};
use knowledgelens::ports::{LlmClient, StateStore, StoreError};
use knowledgelens::web::api::Backend;
use knowledgelens::web::clock::JsClock;
use knowledgelens::web::http::FetchHttp;
use knowledgelens::web::storage::{Area, ChromeStore};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

/// Installs a `chrome` stand-in: storage areas over Maps (with a quota), runtime.id, and
/// scripting.executeScript returning a fixed page.
fn install_chrome() {
    Function::new_no_args(
        r#"
        const area = () => {
          const data = new Map();
          return {
            data,
            accessLevel: null,
            async get(key) {
              if (key === null) return Object.fromEntries(data);
              const out = {};
              for (const k of [].concat(key)) if (data.has(k)) out[k] = data.get(k);
              return out;
            },
            async set(items) {
              for (const [k, v] of Object.entries(items)) {
                if (typeof v === 'string' && v.length > 200000) throw new Error('Resource::kQuotaBytes quota exceeded');
                data.set(k, v);
              }
            },
            async remove(keys) { for (const k of [].concat(keys)) data.delete(k); },
            async getKeys() { return [...data.keys()]; },
            async setAccessLevel(o) { this.accessLevel = o.accessLevel; },
          };
        };
        globalThis.chrome = {
          storage: { session: area(), local: area() },
          runtime: { id: 'testextensionid', async getPlatformInfo() { return { os: 'linux' }; } },
          alarms: {
            created: [],
            async create(name, info) { this.created.push({ name, info }); },
            async clear(name) { this.created = this.created.filter((a) => a.name !== name); return true; },
          },
          scripting: { async executeScript(d) {
            if (d.target.tabId !== 5) throw new Error('Cannot access contents of the page');
            return [{ result: { title: 'Tides', url: 'https://example.test/tides', text: 'The moon pulls the oceans.' } }];
          } },
        };
        "#,
    )
    .call0(&JsValue::NULL)
    .expect("install chrome stand-in");
}

/// Replaces `fetch` with one answering from `script` (an array of {status, type, chunks}).
fn install_fetch(script: &str) {
    let body = format!(
        r#"
        const script = {script};
        globalThis.__requests = [];
        globalThis.fetch = async (request) => {{
          globalThis.__requests.push({{ url: request.url, method: request.method, body: await request.clone().text(), auth: request.headers.get('authorization'), redirect: request.redirect }});
          const next = script.shift();
          if (!next) throw new TypeError('Failed to fetch');
          if (next.reject) throw new TypeError(next.reject);
          // What fetch gives for a redirect under redirect: "manual" (an opaque redirect).
          if (next.redirect) return Object.defineProperty(new Response(null), 'type', {{ value: 'opaqueredirect' }});
          const enc = new TextEncoder();
          const stream = new ReadableStream({{ start(c) {{ for (const ch of next.chunks) c.enqueue(enc.encode(ch)); c.close(); }} }});
          return new Response(stream, {{ status: next.status, headers: {{ 'content-type': next.type }} }});
        }};
        "#
    );
    Function::new_no_args(&body)
        .call0(&JsValue::NULL)
        .expect("install fetch stand-in");
}

fn requests() -> JsValue {
    Reflect::get(&js_sys::global(), &"__requests".into()).expect("requests")
}

fn sse_script() -> &'static str {
    r#"[{ status: 200, type: 'text/event-stream', chunks: [
      'data: {"choices":[{"delta":{"content":"The moon"}}]}\n\nda',
      'ta: {"choices":[{"delta":{"content":" pulls."}}]}\n\n',
      'data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":4}}\n\ndata: [DONE]\n\n'] }]"#
}

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::new(Role::User, "Why tides?")],
        stream: true,
        ..Default::default()
    }
}

fn config() -> ProviderConfig {
    ProviderConfig::openai("http://127.0.0.1:1/v1", "m", "sk-wasm")
}

#[wasm_bindgen_test]
async fn storage_round_trips_strings_and_lists_keys() {
    install_chrome();
    let store = ChromeStore::new(Area::Session);
    store
        .set(vec![
            ("session:a".into(), "{\"x\":1}".into()),
            ("other".into(), "2".into()),
        ])
        .await
        .expect("set");
    assert_eq!(
        store.get("session:a").await.expect("get").as_deref(),
        Some("{\"x\":1}")
    );
    assert_eq!(store.get("missing").await.expect("get"), None);
    assert_eq!(
        store.keys("session:").await.expect("keys"),
        vec!["session:a".to_string()]
    );
    store
        .remove(vec!["session:a".into()])
        .await
        .expect("remove");
    assert_eq!(store.get("session:a").await.expect("get"), None);
    // The value is stored as one string, not a converted object.
    let raw =
        js_sys::eval("typeof globalThis.chrome.storage.session.data.get('other')").expect("eval");
    assert_eq!(raw.as_string().as_deref(), Some("string"));
}

#[wasm_bindgen_test]
async fn storage_faults_map_to_kinds() {
    install_chrome();
    let store = ChromeStore::new(Area::Local);
    let big = "x".repeat(300_000);
    match store.set(vec![("k".into(), big)]).await {
        Err(StoreError::QuotaExceeded(_)) => {}
        other => panic!("expected quota error, got {other:?}"),
    }
    js_sys::eval("delete globalThis.chrome").expect("eval");
    match store.get("k").await {
        Err(StoreError::Unavailable(m)) => assert!(m.contains("chrome"), "{m}"),
        other => panic!("expected unavailable, got {other:?}"),
    }
}

#[wasm_bindgen_test]
async fn access_level_is_restricted_to_trusted_contexts() {
    install_chrome();
    ChromeStore::new(Area::Session)
        .restrict_to_trusted_contexts()
        .await
        .expect("restrict");
    let level = js_sys::eval("globalThis.chrome.storage.session.accessLevel").expect("eval");
    assert_eq!(level.as_string().as_deref(), Some("TRUSTED_CONTEXTS"));
}

#[wasm_bindgen_test]
async fn fetch_streams_server_sent_events() {
    install_fetch(sse_script());
    let llm = HttpLlm::new(
        Rc::new(FetchHttp),
        Rc::new(JsClock),
        Box::new(OpenAiWire::new(config())),
    );
    let req = request();
    let deltas = RefCell::new(Vec::new());
    let reply = llm
        .complete(&req, &mut |d| deltas.borrow_mut().push(d.to_string()))
        .await
        .expect("reply");
    assert_eq!(reply.content, "The moon pulls.");
    assert_eq!(
        deltas.into_inner(),
        vec!["The moon".to_string(), " pulls.".to_string()]
    );
    assert_eq!(reply.usage.map(|u| u.input), Some(12));
    let sent = js_sys::Array::from(&requests()).get(0);
    let url = Reflect::get(&sent, &"url".into())
        .expect("url")
        .as_string()
        .expect("s");
    assert_eq!(url, "http://127.0.0.1:1/v1/chat/completions");
    let auth = Reflect::get(&sent, &"auth".into())
        .expect("auth")
        .as_string();
    assert_eq!(auth.as_deref(), Some("Bearer sk-wasm"));
    let body = Reflect::get(&sent, &"body".into())
        .expect("body")
        .as_string()
        .expect("s");
    assert!(body.contains("\"stream\":true"), "{body}");
}

#[wasm_bindgen_test]
async fn fetch_errors_become_network_and_status_errors() {
    install_fetch(
        r#"[{ reject: 'Failed to fetch' }, { status: 401, type: 'application/json', chunks: ['{"error":{"message":"bad key"}}'] }]"#,
    );
    let llm = HttpLlm::new(
        Rc::new(FetchHttp),
        Rc::new(JsClock),
        Box::new(OpenAiWire::new(config())),
    );
    let req = request();
    let err = llm.complete(&req, &mut |_| {}).await.expect_err("network");
    assert_eq!(err.kind, LlmErrorKind::Network);
    assert!(err.message.contains("127.0.0.1:1"), "{}", err.message);
    let err = llm.complete(&req, &mut |_| {}).await.expect_err("auth");
    assert_eq!(err.kind, LlmErrorKind::Auth);
    assert!(err.message.contains("bad key"), "{}", err.message);
}

fn sender() -> JsValue {
    js_sys::eval(
        "({ id: 'testextensionid', url: 'chrome-extension://testextensionid/popup.html' })",
    )
    .expect("sender")
}

async fn handle(backend: &Backend, request: &str) -> JsValue {
    let req = js_sys::JSON::parse(request).expect("json");
    JsFuture::from(backend.handle(req, sender()))
        .await
        .expect("envelope")
}

/// Lets 10 ms pass (a spawned run goes on meanwhile).
async fn tick() {
    JsFuture::from(Promise::new(&mut |resolve, _| {
        let _ = Reflect::apply(
            &Reflect::get(&js_sys::global(), &"setTimeout".into())
                .expect("st")
                .into(),
            &JsValue::NULL,
            &js_sys::Array::of2(&resolve, &JsValue::from_f64(10.0)),
        );
    }))
    .await
    .expect("tick");
}

fn get(v: &JsValue, path: &[&str]) -> JsValue {
    path.iter().fold(v.clone(), |acc, k| {
        Reflect::get(&acc, &JsValue::from_str(k)).expect("field")
    })
}

#[wasm_bindgen_test]
async fn backend_answers_a_question_and_persists_the_run() {
    install_chrome();
    install_fetch(sse_script());
    let events = Rc::new(RefCell::new(Vec::<String>::new()));
    let sink = events.clone();
    let emit = Closure::<dyn FnMut(JsValue)>::new(move |e: JsValue| {
        sink.borrow_mut()
            .push(get(&e, &["event", "type"]).as_string().unwrap_or_default());
    });
    let emit_fn: Function = emit.as_ref().unchecked_ref::<Function>().clone();
    emit.forget();
    let backend = Backend::start(emit_fn).await.expect("start");
    let saved = handle(&backend, r#"{"id": 1, "type": "save_settings", "settings": {"base_url": "http://127.0.0.1:1/v1", "model": "m"}}"#).await;
    assert_eq!(get(&saved, &["ok"]).as_bool(), Some(true));
    let asked = handle(
        &backend,
        r#"{"id": 2, "type": "ask", "session": "tab:5", "question": "Why tides?", "tab_id": 5}"#,
    )
    .await;
    assert_eq!(
        get(&asked, &["ok"]).as_bool(),
        Some(true),
        "{:?}",
        js_sys::JSON::stringify(&asked)
    );
    // Wait for the spawned run to finish.
    for _ in 0..100 {
        if events
            .borrow()
            .iter()
            .any(|e| e == "completed" || e == "failed")
        {
            break;
        }
        tick().await;
    }
    assert!(
        events.borrow().contains(&"completed".to_string()),
        "{:?}",
        events.borrow()
    );
    let snap = handle(
        &backend,
        r#"{"id": 3, "type": "snapshot", "session": "tab:5"}"#,
    )
    .await;
    assert_eq!(
        get(&snap, &["data", "answer"]).as_string().as_deref(),
        Some("The moon pulls.")
    );
    assert_eq!(
        get(&snap, &["data", "page", "title"])
            .as_string()
            .as_deref(),
        Some("Tides")
    );
    // The page text reached the model.
    let body = get(&js_sys::Array::from(&requests()).get(0), &["body"])
        .as_string()
        .expect("body");
    assert!(body.contains("The moon pulls the oceans."), "{body}");
    // The state is in chrome.storage.session as one JSON string.
    let stored =
        js_sys::eval("globalThis.chrome.storage.session.data.get('session:tab:5')").expect("eval");
    assert!(stored
        .as_string()
        .expect("string")
        .contains("\"status\":\"completed\""));
    // Storage was restricted to trusted contexts.
    let level = js_sys::eval("globalThis.chrome.storage.local.accessLevel").expect("eval");
    assert_eq!(level.as_string().as_deref(), Some("TRUSTED_CONTEXTS"));
    // A keep-alive alarm was set while the run was going on.
    let alarm = js_sys::eval("globalThis.chrome.alarms.created.map((a) => a.name).join(',')")
        .expect("eval");
    assert_eq!(
        alarm.as_string().as_deref(),
        Some("knowledgelens-keepalive")
    );
    // Closing the tab deletes its finished session: head, page and trajectory entries.
    JsFuture::from(backend.tab_closed(5.0))
        .await
        .expect("tab closed");
    let left = js_sys::eval("[...globalThis.chrome.storage.session.data.keys()].filter((k) => k.includes('tab:5')).length").expect("eval");
    assert_eq!(left.as_f64(), Some(0.0));
}

#[wasm_bindgen_test]
async fn backend_refuses_foreign_senders() {
    install_chrome();
    let backend = Backend::start(Function::new_no_args(""))
        .await
        .expect("start");
    let req = js_sys::JSON::parse(r#"{"id": 9, "type": "get_settings"}"#).expect("json");
    let content_script =
        js_sys::eval("({ id: 'testextensionid', url: 'https://evil.test/', tab: { id: 1 } })")
            .expect("sender");
    let reply = JsFuture::from(backend.handle(req.clone(), content_script))
        .await
        .expect("envelope");
    assert_eq!(get(&reply, &["ok"]).as_bool(), Some(false));
    assert_eq!(
        get(&reply, &["error", "kind"]).as_string().as_deref(),
        Some("forbidden")
    );
    // Another extension; our in-page panel (at its dynamic or its own origin); another page
    // of ours in a frame inside a page (web-accessible pages can be framed).
    for sender in [
        "({ id: 'someoneelse', url: 'chrome-extension://someoneelse/x.html' })",
        "({ id: 'testextensionid', url: 'chrome-extension://d1c2b3a4/panel.html?tab=1&run=2', tab: { id: 1 }, frameId: 4 })",
        "({ id: 'testextensionid', url: 'chrome-extension://testextensionid/panel.html', frameId: 0 })",
        "({ id: 'testextensionid', url: 'chrome-extension://testextensionid/panel.html#top', frameId: 0 })",
        "({ id: 'testextensionid', url: 'chrome-extension://testextensionid/popup.html', tab: { id: 1 }, frameId: 4 })",
    ] {
        let reply = JsFuture::from(backend.handle(req.clone(), js_sys::eval(sender).expect("sender")))
            .await
            .expect("envelope");
        assert_eq!(
            get(&reply, &["error", "kind"]).as_string().as_deref(),
            Some("forbidden"),
            "{sender}"
        );
        assert_eq!(get(&reply, &["id"]).as_f64(), Some(9.0));
    }
    // The popup opened in a tab of its own (frame 0) is ours.
    let popup_tab = "({ id: 'testextensionid', url: 'chrome-extension://testextensionid/popup.html?tab=1', tab: { id: 7 }, frameId: 0 })";
    let reply = JsFuture::from(backend.handle(req, js_sys::eval(popup_tab).expect("sender")))
        .await
        .expect("envelope");
    assert_eq!(
        get(&reply, &["ok"]).as_bool(),
        Some(true),
        "the popup in a tab"
    );
}

#[wasm_bindgen_test]
async fn the_panel_handler_reads_the_senders_tab_and_refuses_the_rest() {
    install_chrome();
    let backend = Backend::start(Function::new_no_args(""))
        .await
        .expect("start");
    let panel = |request: &str, sender: &str| {
        let req = js_sys::JSON::parse(request).expect("json");
        let sender = js_sys::eval(sender).expect("sender");
        JsFuture::from(backend.handle_panel(req, sender))
    };
    let in_tab_12 = "({ id: 'testextensionid', url: 'chrome-extension://d1c2b3a4/panel.html?tab=12&run=0', tab: { id: 12 }, frameId: 3 })";
    let reply = panel(
        r#"{"id": 1, "type": "snapshot", "session": "tab:12", "run": 0}"#,
        in_tab_12,
    )
    .await
    .expect("envelope");
    assert_eq!(get(&reply, &["ok"]).as_bool(), Some(true));
    assert_eq!(get(&reply, &["data", "run"]).as_f64(), Some(0.0));
    for (request, sender) in [
        (
            r#"{"id": 2, "type": "snapshot", "session": "tab:13"}"#,
            in_tab_12,
        ),
        (r#"{"id": 2, "type": "get_settings"}"#, in_tab_12),
        // Not our panel frame in a tab: no tab, another extension, a content script (the
        // page's URL), our panel at the top of a tab, another page of ours in a frame.
        (
            r#"{"id": 2, "type": "snapshot", "session": "tab:12", "run": 0}"#,
            "({ id: 'testextensionid', url: 'chrome-extension://d1c2b3a4/panel.html', frameId: 3 })",
        ),
        (
            r#"{"id": 2, "type": "snapshot", "session": "tab:12", "run": 0}"#,
            "({ id: 'someoneelse', url: 'chrome-extension://d1c2b3a4/panel.html', tab: { id: 12 }, frameId: 3 })",
        ),
        (
            r#"{"id": 2, "type": "snapshot", "session": "tab:12", "run": 0}"#,
            "({ id: 'testextensionid', url: 'https://page.test/', tab: { id: 12 }, frameId: 0 })",
        ),
        (
            r#"{"id": 2, "type": "snapshot", "session": "tab:12", "run": 0}"#,
            "({ id: 'testextensionid', url: 'chrome-extension://testextensionid/panel.html', tab: { id: 12 }, frameId: 0 })",
        ),
        (
            r#"{"id": 2, "type": "snapshot", "session": "tab:12", "run": 0}"#,
            "({ id: 'testextensionid', url: 'chrome-extension://testextensionid/popup.html', tab: { id: 12 }, frameId: 3 })",
        ),
    ] {
        let reply = panel(request, sender).await.expect("envelope");
        assert_eq!(
            get(&reply, &["error", "kind"]).as_string().as_deref(),
            Some("forbidden"),
            "{request} from {sender}"
        );
        assert_eq!(get(&reply, &["id"]).as_f64(), Some(2.0));
    }
}

#[wasm_bindgen_test]
async fn keyed_requests_do_not_follow_redirects() {
    install_fetch(&format!(
        "[{{ redirect: true }}, {}]",
        &sse_script()[1..sse_script().len() - 1]
    ));
    let keyed = HttpLlm::new(
        Rc::new(FetchHttp),
        Rc::new(JsClock),
        Box::new(OpenAiWire::new(config())),
    );
    let err = keyed
        .complete(&request(), &mut |_| {})
        .await
        .expect_err("a redirect");
    assert_eq!(err.kind, LlmErrorKind::Config);
    assert!(
        err.message.contains("answered with a redirect"),
        "{}",
        err.message
    );
    let keyless = HttpLlm::new(
        Rc::new(FetchHttp),
        Rc::new(JsClock),
        Box::new(OpenAiWire::new(ProviderConfig::openai(
            "http://127.0.0.1:1/v1",
            "m",
            "",
        ))),
    );
    keyless
        .complete(&request(), &mut |_| {})
        .await
        .expect("answer");
    let sent = js_sys::Array::from(&requests());
    assert_eq!(
        get(&sent.get(0), &["redirect"]).as_string().as_deref(),
        Some("manual")
    );
    assert_eq!(
        get(&sent.get(1), &["redirect"]).as_string().as_deref(),
        Some("follow")
    );
}

/// Saves settings with keys through a started backend; returns the reply's data and the
/// stored record.
async fn save_with_keys() -> (JsValue, String) {
    let emit = Function::new_no_args("");
    let backend = Backend::start(emit).await.expect("start");
    let saved = handle(&backend, r#"{"id": 1, "type": "save_settings", "settings": {"base_url": "https://api.example.com/v1", "model": "m", "api_key": "sk-wasm-secret"}}"#).await;
    assert_eq!(get(&saved, &["ok"]).as_bool(), Some(true));
    let stored = js_sys::eval("globalThis.chrome.storage.local.data.get('settings')")
        .expect("eval")
        .as_string()
        .expect("stored");
    (get(&saved, &["data"]), stored)
}

#[wasm_bindgen_test]
async fn keys_are_stored_only_once_the_store_is_restricted() {
    install_chrome();
    let (data, stored) = save_with_keys().await;
    assert!(get(&data, &["notice"]).is_undefined());
    assert!(stored.contains("sk-wasm-secret"));
    // A Chrome whose local area cannot be restricted: everything but the key is saved.
    install_chrome();
    js_sys::eval("globalThis.chrome.storage.local.setAccessLevel = async () => { throw new Error('Access level is not supported for this storage area'); }")
        .expect("eval");
    let (data, stored) = save_with_keys().await;
    let notice = get(&data, &["notice"]).as_string().expect("notice");
    assert!(notice.contains("except the API keys"), "{notice}");
    assert!(!stored.contains("sk-wasm-secret"), "{stored}");
    assert!(stored.contains("https://api.example.com/v1"), "{stored}");
}

#[wasm_bindgen_test]
async fn a_lone_surrogate_in_a_question_reaches_the_backend_replaced() {
    install_chrome();
    install_fetch(sse_script());
    let ended = Rc::new(RefCell::new(false));
    let sink = ended.clone();
    let emit = Closure::<dyn FnMut(JsValue)>::new(move |e: JsValue| {
        let kind = get(&e, &["event", "type"]).as_string().unwrap_or_default();
        if kind == "completed" || kind == "failed" {
            *sink.borrow_mut() = true;
        }
    });
    let emit_fn: Function = emit.as_ref().unchecked_ref::<Function>().clone();
    emit.forget();
    let backend = Backend::start(emit_fn).await.expect("start");
    // JSON.parse makes a JS string holding half of a surrogate pair, as a cut emoji would.
    let asked = handle(
        &backend,
        r#"{"id": 3, "type": "ask", "session": "popup", "question": "What is \uD800?"}"#,
    )
    .await;
    assert_eq!(
        get(&asked, &["ok"]).as_bool(),
        Some(true),
        "{:?}",
        js_sys::JSON::stringify(&asked)
    );
    assert_eq!(
        get(&asked, &["data", "question"]).as_string().as_deref(),
        Some("What is \u{FFFD}?")
    );
    // Let the spawned run end before the next test replaces the stand-ins.
    for _ in 0..100 {
        if *ended.borrow() {
            break;
        }
        tick().await;
    }
    assert!(*ended.borrow(), "the run ended");
}
