//! The browser layer: the only module tree that touches wasm-bindgen, web-sys and js-sys.
//! It implements the core's ports on `fetch`, `chrome.storage`, `chrome.scripting`,
//! `chrome.action`, `chrome.tabs` (screenshots), `chrome.notifications`, `crypto.getRandomValues` and timers (bound on the global scope: a service worker has no `window`), and exports the
//! [`api::Backend`] the extension's service worker drives.

pub mod api;
#[cfg(feature = "bench")]
pub mod bench;
#[cfg(feature = "bench")]
pub mod bench_crash;
pub mod builtin;
pub mod capture;
pub mod clock;
pub mod crash;
pub mod events;
pub mod http;
pub mod interop;
pub mod notifier;
pub mod pages;
pub mod pdf;
pub mod random;
pub mod storage;
pub mod urls;

/// The heap: Talc instead of the default wasm allocator (dlmalloc), which is larger and
/// slower in the wasm (README, Benchmarks). Single-threaded: the module is built without the
/// `atomics` feature.
#[cfg(not(target_feature = "atomics"))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
