//! The settings requests: read (with whether any are saved, and why a saved record was not
//! used), save (validated and normalized), and whether a model is set up at all.

use super::Service;
use crate::llm::diagnosis::{doctor, keys};
use crate::protocol::reply::{SearchOfferReply, SettingsReply};
use crate::protocol::{ApiError, ApiErrorKind, SearchOfferAnswer};
use crate::settings::{Settings, SettingsError, WebSearch, DEFAULT_BASE_URL};

/// The popup's words for saved settings that cannot be used.
pub(super) fn settings_notice(problem: &SettingsError) -> String {
    format!(
        "{}, so questions go to the default model server ({DEFAULT_BASE_URL}) instead of the one you chose. Open Options to check the provider and save the settings again.",
        doctor::capitalized(&problem.to_string())
    )
}

/// Why a save left the API keys out.
pub const UNPROTECTED_KEYS: &str = "Saved, except the API keys: this version of Chrome could not restrict the extension's storage to its own pages (chrome.storage.local.setAccessLevel failed), so a stored key could be read by scripts the extension runs in web pages. Update Chrome to store keys, or use a provider that needs none.";

/// Clears every API key in `settings` (the model's, each provider profile's, the search
/// provider's); true when there was one.
fn strip_keys(settings: &mut Settings) -> bool {
    let mut had = !settings.api_key.is_empty() || !settings.search_api_key.is_empty();
    settings.api_key.clear();
    settings.search_api_key.clear();
    for profile in settings.profiles.values_mut() {
        had |= !profile.api_key.is_empty();
        profile.api_key.clear();
    }
    had
}

impl Service {
    pub(super) async fn get_settings(&self) -> Result<SettingsReply, ApiError> {
        let (settings, configured, problem) = Settings::load_checked(self.ports.settings.as_ref())
            .await
            .map_err(|e| ApiError::storage("read the settings", e))?;
        Ok(SettingsReply {
            settings,
            configured,
            notice: problem.map(|problem| {
                format!(
                    "{}: the defaults are shown, and the saved record is kept until you save.",
                    doctor::capitalized(&problem.to_string())
                )
            }),
        })
    }

    /// From one read of the saved settings: what the popup says when they cannot be used
    /// (runs then go to the default model server, which the user did not choose; `None` when
    /// they are fine or none are saved), and whether any were ever saved (else the popup
    /// offers its setup card). A store that cannot be read gives no notice and counts as
    /// configured: the run's own error then says what failed.
    pub(super) async fn settings_status(&self) -> (Option<String>, bool) {
        match Settings::load_checked(self.ports.settings.as_ref()).await {
            Ok((_, configured, problem)) => (problem.map(|p| settings_notice(&p)), configured),
            Err(_) => (None, true),
        }
    }

    /// Saves `settings`, refusing a model key that would travel in clear text. API keys are
    /// left out (and the reply's notice says why) while the store is not out of content
    /// scripts' reach.
    pub(super) async fn save_settings(
        &self,
        settings: Settings,
    ) -> Result<SettingsReply, ApiError> {
        let mut settings = settings.validated()?;
        if settings.provider.uses_http()
            && keys::key_in_clear(&settings.base_url, &settings.api_key)
        {
            return Err(ApiError::new(
                ApiErrorKind::InvalidSettings,
                keys::insecure_key_message(&settings.base_url, "API key"),
            ));
        }
        // Search chosen in Options answers the popup's offer as well.
        settings.search_offered |= settings.search_provider != WebSearch::Off;
        let notice = if self.keys_protected.get() {
            None
        } else {
            strip_keys(&mut settings).then(|| UNPROTECTED_KEYS.to_string())
        };
        settings
            .save(self.ports.settings.as_ref())
            .await
            .map_err(|e| ApiError::storage("save the settings", e))?;
        self.allow_saved(&settings).await;
        Ok(SettingsReply {
            settings,
            configured: true,
            notice,
        })
    }

    /// The answer to the popup's offer to search the web: saved, so the offer is not made
    /// again; "Turn on" also turns Wikipedia search on. The saved record must exist and be
    /// usable (the offer follows a question, so a model is set up): a missing or unusable
    /// record is never replaced from here.
    pub(super) async fn search_offer(
        &self,
        answer: SearchOfferAnswer,
    ) -> Result<SearchOfferReply, ApiError> {
        let (mut settings, configured, problem) =
            Settings::load_checked(self.ports.settings.as_ref())
                .await
                .map_err(|e| ApiError::storage("read the settings", e))?;
        if let Some(problem) = problem {
            return Err(ApiError::new(
                ApiErrorKind::InvalidSettings,
                format!(
                    "{}: turn web search on in Options instead.",
                    doctor::capitalized(&problem.to_string())
                ),
            ));
        }
        if !configured {
            return Err(ApiError::new(
                ApiErrorKind::InvalidSettings,
                "Set up a model in Options first.",
            ));
        }
        if answer == SearchOfferAnswer::TurnOn {
            settings.search_provider = WebSearch::Wikipedia;
        }
        settings.search_offered = true;
        settings
            .save(self.ports.settings.as_ref())
            .await
            .map_err(|e| ApiError::storage("save the settings", e))?;
        Ok(SearchOfferReply {
            search_provider: settings.search_provider,
            search_offered: true,
        })
    }
}
