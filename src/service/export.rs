//! The trajectory export: the session's last run as a JSON document to download (never
//! with the API key, which no session record holds).

use serde::Serialize;

use super::Service;
use crate::protocol::reply::ExportReply;
use crate::protocol::{ApiError, ApiErrorKind, SessionKey};
use crate::state::config::RunConfig;
use crate::state::trajectory::{Entry, ErrorInfo, Metrics};
use crate::state::{RunStatus, SessionState, Turn};
use kljson::ToJson;

/// The exported document (`"kind": "knowledgelens.trajectory"`).
#[derive(Serialize, ToJson)]
struct TrajectoryDoc<'a> {
    kind: &'static str,
    version: u32,
    session: &'a str,
    run: u32,
    question: &'a str,
    status: RunStatus,
    answer: &'a str,
    partial: bool,
    error: &'a Option<ErrorInfo>,
    /// What the run told the user besides the answer (a search disclaimer among them).
    notices: &'a [String],
    /// The sources the answer cites (title and URL).
    sources: &'a [crate::state::sources::Source],
    page: Option<PageSummary<'a>>,
    config: &'a RunConfig,
    metrics: Metrics,
    trajectory: &'a [Entry],
    turns: &'a [Turn],
}

/// The page of the run, without its text.
#[derive(Serialize, ToJson)]
struct PageSummary<'a> {
    title: &'a str,
    url: &'a str,
    chars: usize,
    /// Which reader produced the text: "readability" or "visible-text" ("" when unknown).
    reader: &'a str,
}

impl<'a> TrajectoryDoc<'a> {
    fn of(state: &'a SessionState, now_ms: u64) -> Self {
        Self {
            kind: "knowledgelens.trajectory",
            version: state.version,
            session: &state.session,
            run: state.run_id,
            question: &state.question,
            status: state.status,
            answer: &state.answer,
            partial: state.partial,
            error: &state.error,
            notices: &state.notices,
            sources: &state.sources,
            page: state.page.as_ref().map(|p| PageSummary {
                title: &p.title,
                url: &p.url,
                chars: p.text.chars().count(),
                reader: &p.reader,
            }),
            config: &state.config,
            metrics: state.metrics(now_ms),
            trajectory: &state.trajectory,
            turns: &state.turns,
        }
    }
}

impl Service {
    /// The session's last run as a JSON download.
    pub(super) async fn export(&self, key: SessionKey) -> Result<ExportReply, ApiError> {
        let state = self.load_session(key).await?.state;
        if state.run_id == 0 {
            return Err(ApiError::new(
                ApiErrorKind::NotFound,
                "Nothing to export yet: ask a question first.",
            ));
        }
        let doc = TrajectoryDoc::of(&state, self.ports.clock.now_ms());
        // Through a Value, whose maps sort their keys: the document reads in a stable order.
        // (Written compactly first, by the encoder every other message uses, then parsed:
        // `to_value` would compile a second encoder for every type in the document.)
        let text = kljson::parse(&kljson::to_string(&doc))
            .map(|v| kljson::pretty(&v))
            .unwrap_or_default();
        Ok(ExportReply {
            filename: format!(
                "knowledgelens-{}-run{}.json",
                state.session.replace(':', "-"),
                state.run_id
            ),
            json: text,
        })
    }
}
