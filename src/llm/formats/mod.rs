//! The vendors' wire formats, a file each: how a [`ChatRequest`](crate::llm::ChatRequest)
//! becomes the vendor's request body and how its reply (whole or streamed) becomes a
//! [`ChatResponse`](crate::llm::ChatResponse). Pure: [`crate::llm::transport`] sends them.
//! Chrome's built-in model (`builtin`) has no HTTP wire; its plan is made here and run by
//! `web::builtin`.

pub mod anthropic;
pub mod builtin;
pub mod gemini;
pub mod ollama;
pub mod openai;
mod turns;
