//! Ways to crash the worker on purpose, for tests/e2e/crash.test.mjs (feature `bench` only:
//! never in the shipped build): a panic in a spawned future, and a tool that panics, so a
//! run's persisted state panics again whenever it is resumed.

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use wasm_bindgen::prelude::*;

use crate::tools::{ToolContext, ToolError, TypedTool};
use kljson::FromJson;

/// Panics with `message` in a spawned future (as a bug in a run would), after this call
/// returned.
#[wasm_bindgen]
pub fn bench_panic_soon(message: String) {
    wasm_bindgen_futures::spawn_local(async move { panic!("{message}") });
}

/// No arguments.
#[derive(FromJson, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// A tool whose code panics: a run that calls it crashes the worker, and so does every
/// resume of that run (its state says to run the tool next).
pub struct PanicTool;

impl TypedTool for PanicTool {
    const NAME: &'static str = "bench_panic";
    const DESCRIPTION: &'static str = "Test only: panics.";
    type Args = NoArgs;
    type Output = String;
    fn call<'a>(
        &'a self,
        _args: NoArgs,
        _ctx: &'a ToolContext<'a>,
    ) -> LocalBoxFuture<'a, Result<String, ToolError>> {
        async move { panic!("bench_panic: the test-only tool that panics") }.boxed_local()
    }
}
