//! kljson held to serde_json, in one binary: `decode` derives the same declarations with
//! serde's derives and kljson's and requires the same outcome on arbitrary JSON, and the
//! same text written back; `names` does the same for `named_enum!`; `parse` holds the parser
//! to `serde_json::from_str::<Value>`.
//! Recorded proptest cases are in `tests/proptest-regressions/<module>.txt`.
#![cfg(not(target_arch = "wasm32"))]

mod decode;
mod names;
mod parse;
