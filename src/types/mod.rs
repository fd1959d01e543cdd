//! The bottom layer: plain data shared by every other module (chat requests and replies,
//! tool calls, usage, the page, errors, run events). It depends on nothing else in the
//! crate, and the ports are written in its terms. `tests/native/layers.rs` holds the layer table.

pub mod case;
pub mod chat;
pub mod error;
pub mod events;
pub mod image;
pub mod json_text;
pub mod order;
pub mod page;
pub mod search;
pub mod secrets;
pub mod source;
pub mod text;
pub mod tokens;
pub mod vec_map;

pub use chat::{
    ChatMessage, ChatRequest, ChatResponse, JsonSchemaFormat, Role, ToolCall, ToolSpec, Usage,
};
pub use error::{ErrorInfo, LlmError, LlmErrorKind, PageReadError, PdfReadError, RunErrorKind};
pub use image::Image;
pub use page::{PageInfo, Selection, SelectionError};
pub use search::{SearchError, SearchErrorKind, SearchResult};
pub use vec_map::VecMap;
