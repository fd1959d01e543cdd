//! Model servers on this computer. Ollama answers 403 to a request whose `Origin` is an
//! extension's (unless `OLLAMA_ORIGINS` allows it), so the browser layer keeps rules that
//! remove the extension's `Origin` from its own requests to named loopback origins, as the
//! server's command-line clients send none. This module decides which origins, and when:
//! the saved provider's (on save and at worker start), the one Options is testing or
//! listing, and the probe's for as long as it runs. The probe (`find_local_models`) asks
//! the usual ports for their model lists, 1 s each, in parallel.

use std::task::Poll;

use futures::future::{self, Either, LocalBoxFuture};
use futures::FutureExt;

use super::Service;
use crate::llm::local::{loopback_origin, LocalServer};
use crate::llm::provider::origin_of;
use crate::protocol::reply::{FoundServer, LocalModelsReply};
use crate::settings::Settings;

/// The browser's rules that let the extension's requests through local servers' origin
/// checks, one per use (`web::api` keeps them as session rules with these ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OriginRule {
    /// The saved provider's origin, when it is on this computer.
    Provider = 1,
    /// The origin Options last tested or listed models from (cleared by a save).
    Check = 2,
    /// The probe's origins, while it runs.
    Probe = 3,
}

impl OriginRule {
    /// The update for `chrome.declarativeNetRequest.updateSessionRules` that makes this
    /// rule remove the `Origin` header from the requests of the extension `extension_id`
    /// to `origins` (only theirs: `^origin/` for each, `initiatorDomains` the extension,
    /// `tabIds` none, `xmlhttprequest` is `fetch`), or removes the rule when there are no
    /// origins. Chrome's reference:
    /// <https://developer.chrome.com/docs/extensions/reference/api/declarativeNetRequest>
    /// (`RuleCondition.initiatorDomains`, `tabIds`, `regexFilter`; `ModifyHeaderInfo`
    /// `remove`); `declarativeNetRequestWithHostAccess` acts only where the extension has
    /// host access, which it has up front only on loopback.
    pub fn update(self, origins: &[String], extension_id: &str) -> serde_json::Value {
        let id = self as u32;
        if origins.is_empty() || extension_id.is_empty() {
            return kljson::json!({ "removeRuleIds": [id] });
        }
        let alternatives: Vec<String> = origins.iter().map(|o| regex_escape(o)).collect();
        kljson::json!({
            "removeRuleIds": [id],
            "addRules": [{
                "id": id,
                "priority": 1,
                "action": {
                    "type": "modifyHeaders",
                    "requestHeaders": [{ "header": "origin", "operation": "remove" }],
                },
                "condition": {
                    "regexFilter": format!("^({})/", alternatives.join("|")),
                    "initiatorDomains": [extension_id],
                    "tabIds": [-1],
                    "resourceTypes": ["xmlhttprequest"],
                },
            }],
        })
    }
}

/// `text` with RE2's special characters escaped.
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// How long the probe waits for each server's model list.
pub const PROBE_DEADLINE_MS: u64 = 1_000;

impl Service {
    /// At worker start: the provider rule names the saved provider's origin (if it is on
    /// this computer); the others are removed. True when the browser holds the rules.
    pub async fn restore_origin_rules(&self) -> bool {
        // Only a saved, usable record names a server (not the defaults shown before one).
        let saved = Settings::load_checked(self.ports.settings.as_ref())
            .await
            .ok()
            .filter(|(_, configured, problem)| *configured && problem.is_none());
        let origins: Vec<String> = saved
            .and_then(|(settings, _, _)| loopback_origin(&settings.provider_config()))
            .into_iter()
            .collect();
        let models = &self.ports.models;
        let (provider, check, probe) = future::join3(
            models.set_origin_rule(OriginRule::Provider, &origins),
            models.set_origin_rule(OriginRule::Check, &[]),
            models.set_origin_rule(OriginRule::Probe, &[]),
        )
        .await;
        provider && check && probe
    }

    /// After a save: the provider rule follows the saved settings, and Options' last check
    /// is forgotten, so nothing names an origin no longer in use.
    pub(super) async fn allow_saved(&self, settings: &Settings) -> bool {
        let origins: Vec<String> = loopback_origin(&settings.provider_config())
            .into_iter()
            .collect();
        let models = &self.ports.models;
        let (saved, cleared) = future::join(
            models.set_origin_rule(OriginRule::Provider, &origins),
            models.set_origin_rule(OriginRule::Check, &[]),
        )
        .await;
        saved && cleared
    }

    /// Before Options tests `settings` or lists their models: the check rule names their
    /// origin when it is on this computer. `None` for a server elsewhere (no rule applies),
    /// else whether the browser holds the rule.
    pub(super) async fn allow_checked(&self, settings: &Settings) -> Option<bool> {
        let origin = loopback_origin(&settings.provider_config())?;
        Some(
            self.ports
                .models
                .set_origin_rule(OriginRule::Check, &[origin])
                .await,
        )
    }

    /// The usual local servers that answer within [`PROBE_DEADLINE_MS`], with their models.
    /// Only their model lists are asked for, and only on this computer.
    pub(super) async fn find_local_models(&self) -> LocalModelsReply {
        // Every one is at 127.0.0.1 (`LocalServer::base_url`).
        let servers = self.ports.models.local_servers();
        let mut origins: Vec<String> = servers
            .iter()
            .filter_map(|server| origin_of(&server.base_url()))
            .collect();
        origins.dedup();
        self.probes.set(self.probes.get() + 1);
        self.ports
            .models
            .set_origin_rule(OriginRule::Probe, &origins)
            .await;
        let found = all(servers
            .iter()
            .map(|server| self.probe(server).boxed_local()))
        .await;
        self.probes.set(self.probes.get().saturating_sub(1));
        if self.probes.get() == 0 {
            self.ports
                .models
                .set_origin_rule(OriginRule::Probe, &[])
                .await;
        }
        LocalModelsReply {
            servers: found.into_iter().flatten().collect(),
        }
    }

    /// One server's model list, or `None` when it does not give one in time.
    async fn probe(&self, server: &LocalServer) -> Option<FoundServer> {
        let settings = probe_settings(server);
        let listed = self.ports.models.models(&settings).boxed_local();
        let models = match future::select(listed, self.ports.clock.sleep(PROBE_DEADLINE_MS)).await {
            Either::Left((Ok(models), _)) => models,
            _ => return None,
        };
        // What a server on this computer lists is shown as buttons: a sane number of names,
        // each of a sane length.
        let models = models
            .into_iter()
            .filter(|m| !m.is_empty() && m.chars().count() <= MAX_MODEL_NAME_CHARS)
            .take(MAX_MODELS_PER_SERVER)
            .collect();
        Some(FoundServer {
            name: server.name.clone(),
            provider: server.provider,
            base_url: settings.base_url.clone(),
            models,
        })
    }
}

/// The outputs of `futures`, in their order, polled together (`future::join_all` would
/// bring `FuturesOrdered` into the wasm for lists over 30).
async fn all<'a, T>(futures: impl Iterator<Item = LocalBoxFuture<'a, T>>) -> Vec<T> {
    let mut pending: Vec<Option<LocalBoxFuture<'a, T>>> = futures.map(Some).collect();
    let mut done: Vec<Option<T>> = pending.iter().map(|_| None).collect();
    future::poll_fn(|cx| {
        for (slot, out) in pending.iter_mut().zip(done.iter_mut()) {
            if let Some(Poll::Ready(value)) = slot.as_mut().map(|f| f.poll_unpin(cx)) {
                *out = Some(value);
                *slot = None;
            }
        }
        if pending.iter().all(Option::is_none) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    done.into_iter().flatten().collect()
}

/// Most models listed per server found.
pub const MAX_MODELS_PER_SERVER: usize = 50;

/// Longest model name listed (characters); longer ones are left out.
pub const MAX_MODEL_NAME_CHARS: usize = 200;

/// Settings that reach `server` (the model list needs no model or key).
fn probe_settings(server: &LocalServer) -> Settings {
    Settings {
        provider: server.provider,
        base_url: server.base_url(),
        model: String::new(),
        api_key: String::new(),
        ..Settings::default()
    }
}
