//! What a panic leaves behind: the release build aborts on panic (`panic = "abort"`: no
//! unwinding code in the wasm), so the module instance is dead once a panic returns. The
//! hook installed here logs the panic's message first (`KnowledgeLens crashed: ...` on the
//! worker's console); the service worker sees the trap itself (a `WebAssembly.RuntimeError`
//! from its `error` and `unhandledrejection` listeners), resets the instance and starts a
//! fresh backend (extension/background.js).

use std::sync::Once;

/// The panic's message and where it happened, on one line.
fn describe(info: &std::panic::PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message");
    match info.location() {
        Some(at) => format!("{message} (at {}:{})", at.file(), at.line()),
        None => message.to_string(),
    }
}

/// Installs the panic hook, once per module instance (a reset instance installs its own).
pub fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            web_sys::console::error_1(&format!("KnowledgeLens crashed: {}", describe(info)).into());
        }));
    });
}
