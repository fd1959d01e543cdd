//! The browser bindings under wasm-bindgen-test, in one binary (Node, a Chromium page and a
//! Chromium service worker; `pkg-scripts/test.sh --tier wasm`): each file is a module.
//! Natively they compile to nothing (`#![cfg(target_arch = "wasm32")]` in each).

mod bindings;
mod builtin;
mod urls;
