//! The one way a model server's words reach the run: [`complete_scrubbed`], the HTTP chat
//! call with the configured key scrubbed out (the scrubbing itself is [`crate::llm::diagnosis::keys`]'s).

use futures::future::LocalBoxFuture;
use futures::FutureExt;

use super::HttpLlm;
use crate::llm::diagnosis::keys::{scrub_error, scrub_response, DeltaScrub};
use crate::llm::{ChatRequest, ChatResponse, LlmError};
#[cfg(doc)]
use crate::ports::LlmClient;

/// `client`'s chat call, with the configured key scrubbed from everything the server says
/// (the streamed text, the reply and any error): every model server's words reach the run
/// through here ([`LlmClient::complete`] for [`HttpLlm`]).
pub(crate) fn complete_scrubbed<'a>(
    client: &'a HttpLlm,
    request: &'a ChatRequest,
    on_delta: &'a mut dyn FnMut(&str),
) -> LocalBoxFuture<'a, Result<ChatResponse, LlmError>> {
    async move {
        let key = client.config().api_key.clone();
        let mut stream = DeltaScrub::new(&key);
        let mut scrubbed_delta = |delta: &str| {
            if let Some(text) = stream.push(delta) {
                on_delta(&text);
            }
        };
        let result = client
            .complete_unscrubbed(request, &mut scrubbed_delta)
            .await;
        if let Some(rest) = stream.finish() {
            on_delta(&rest);
        }
        match result {
            Ok(reply) => Ok(scrub_response(reply, &key)),
            Err(err) => Err(scrub_error(err, &key)),
        }
    }
    .boxed_local()
}
