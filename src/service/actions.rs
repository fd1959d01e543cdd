//! Selection actions: which action a request names, as the run records it.

use super::Service;
use crate::actions::{ActionRun, DEFAULT_TARGET_LANGUAGE};
use crate::protocol::ApiError;

impl Service {
    /// The run of action `id` (not Explain), translating into `language` (the browser's)
    /// when given, else English; an id that names no action is refused.
    pub(super) async fn action_run(
        &self,
        id: &str,
        language: Option<String>,
    ) -> Result<ActionRun, ApiError> {
        let target = language.unwrap_or_else(|| DEFAULT_TARGET_LANGUAGE.to_string());
        ActionRun::builtin(id, &target).ok_or_else(|| {
            ApiError::new(
                crate::protocol::ApiErrorKind::NotFound,
                format!("There is no action \"{id}\": it may have been deleted in Options."),
            )
        })
    }
}
