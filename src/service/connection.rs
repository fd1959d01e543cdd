//! Reaching the provider from Options: "Test connection" (one tiny real call), the model
//! list, and the doctor's diagnosis with the facts it needs gathered first.

use super::Service;
use crate::llm::diagnosis::doctor::{self, DoctorContext};
use crate::llm::{ChatMessage, ChatRequest, LlmError, LlmErrorKind, Role};
use crate::protocol::reply::{Connected, ConnectionFailed, ConnectionReply, ModelsReply};
use crate::protocol::ApiError;
use crate::settings::Settings;

impl Service {
    /// One tiny real call with `settings`: the latency and the model's reply, or the
    /// doctor's diagnosis of what failed and how to fix it.
    pub(super) async fn test_connection(
        &self,
        settings: Settings,
    ) -> Result<ConnectionReply, ApiError> {
        let settings = settings.validated()?;
        let config = settings.provider_config();
        let origin_rule = self.allow_checked(&settings).await;
        let client = self.ports.models.client(&settings);
        let request = ChatRequest {
            messages: vec![
                ChatMessage::new(
                    Role::System,
                    "This is a connection test. Reply with the single word OK.",
                ),
                ChatMessage::new(Role::User, "Reply with OK."),
            ],
            max_tokens: Some(16),
            stream: false,
            ..Default::default()
        };
        let started = self.ports.clock.now_ms();
        let result = client.complete(&request, &mut |_| {}).await;
        let latency_ms = self.ports.clock.now_ms().saturating_sub(started);
        Ok(match result {
            Ok(reply) => ConnectionReply::Connected(Connected {
                ok: true,
                latency_ms,
                reply: reply.content.trim().chars().take(200).collect(),
                provider: config.provider,
                capabilities: config.capabilities(),
                model: config.model,
            }),
            Err(err) => ConnectionReply::Failed(ConnectionFailed {
                ok: false,
                latency_ms,
                diagnosis: self.diagnose(&settings, &err, origin_rule).await,
            }),
        })
    }

    /// The doctor's reading of `err`, with the facts it needs gathered first: the host
    /// permission for a network failure, the server's model list for a 404; `origin_rule`
    /// says whether the browser holds the rule that removes the extension's `Origin` from
    /// requests to that server (`None`: none applies, it is not on this computer).
    async fn diagnose(
        &self,
        settings: &Settings,
        err: &LlmError,
        origin_rule: Option<bool>,
    ) -> doctor::Diagnosis {
        let config = settings.provider_config();
        let mut ctx = DoctorContext {
            extension_origin: self.ports.models.extension_origin(),
            origin_rule,
            ..Default::default()
        };
        if err.kind == LlmErrorKind::Network {
            if let Some(origin) = config.origin() {
                ctx.host_permission = self.ports.models.host_permission(&origin).await;
            }
        }
        if err.kind == LlmErrorKind::NotFound && settings.provider.lists_models() {
            ctx.models = self.ports.models.models(settings).await.ok();
        }
        doctor::diagnose(&config, err, &ctx)
    }

    /// The models the provider offers (`models` empty and a `diagnosis` when it cannot
    /// say).
    pub(super) async fn list_models(&self, settings: Settings) -> Result<ModelsReply, ApiError> {
        let settings = settings.validated()?;
        let unlisted = |diagnosis| ModelsReply {
            models: Vec::new(),
            listed: false,
            diagnosis,
        };
        if !settings.provider.lists_models() {
            return Ok(unlisted(None));
        }
        let origin_rule = self.allow_checked(&settings).await;
        Ok(match self.ports.models.models(&settings).await {
            Ok(models) => ModelsReply {
                models,
                listed: true,
                diagnosis: None,
            },
            Err(err) => unlisted(Some(self.diagnose(&settings, &err, origin_rule).await)),
        })
    }
}
