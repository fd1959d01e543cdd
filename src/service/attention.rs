//! A question you cannot miss: the toolbar badge shows a running run's step, and `?` when
//! the run waits for the user; when no popup or side panel is open to show that question,
//! a system notification says so, and clicking it opens the popup. [`AttentionSink`] reads
//! the events a run emits (the engine knows nothing of badges); [`Attention`] keeps which UI
//! pages are connected and what each badge shows. Pure: the badge and notifications go
//! through the [`Notifier`] port.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::ports::{EventSink, Notification, Notifier, NotifyError, PopupOpened};
use crate::protocol::SessionKey;
use crate::types::events::{EventEnvelope, EventKind};
use crate::types::VecMap;

/// Notification ids of questions: this prefix plus the session key.
pub const QUESTION_NOTIFICATION_PREFIX: &str = "knowledgelens-question:";

/// The title of a question's notification.
pub const QUESTION_TITLE: &str = "KnowledgeLens has a question";

/// Longest question text put in a notification, in characters.
const NOTIFICATION_CHARS: usize = 200;

/// The extension pages that show a session's question (the popup and the side panel; the
/// options page does not).
const UI_PAGES: [&str; 2] = ["popup.html", "sidepanel.html"];

/// Whether `url` (an extension page's address) is the popup or the side panel.
pub fn is_ui_page(url: &str) -> bool {
    crate::url::parse(url).is_some_and(|url| {
        url.extension_page()
            .is_some_and(|page| UI_PAGES.contains(&page))
    })
}

/// The notification id of `key`'s question.
pub fn question_notification_id(key: SessionKey) -> String {
    format!("{QUESTION_NOTIFICATION_PREFIX}{key}")
}

fn tab_of(key: SessionKey) -> Option<u64> {
    match key {
        SessionKey::Tab(id) => Some(id),
        SessionKey::Popup => None,
    }
}

/// What is shown to draw the user's attention, and the UI pages that are open.
pub struct Attention {
    notifier: Rc<dyn Notifier>,
    ui_pages: Cell<u32>,
    badges: RefCell<VecMap<SessionKey, String>>,
}

impl Attention {
    /// Nothing shown, no UI page connected.
    pub fn new(notifier: Rc<dyn Notifier>) -> Self {
        Self {
            notifier,
            ui_pages: Cell::new(0),
            badges: RefCell::default(),
        }
    }

    /// An extension page connected (`url`: its address); only the popup and side panel
    /// count.
    pub fn page_connected(&self, url: &str) {
        if is_ui_page(url) {
            self.ui_pages.set(self.ui_pages.get().saturating_add(1));
        }
    }

    /// An extension page disconnected.
    pub fn page_disconnected(&self, url: &str) {
        if is_ui_page(url) {
            self.ui_pages.set(self.ui_pages.get().saturating_sub(1));
        }
    }

    /// Whether a popup or side panel is open.
    pub fn ui_open(&self) -> bool {
        self.ui_pages.get() > 0
    }

    /// Sets `key`'s badge, skipping a call that would change nothing.
    fn badge(&self, key: SessionKey, text: &str) {
        let mut badges = self.badges.borrow_mut();
        if badges.get(&key).map(String::as_str) == Some(text) {
            return;
        }
        if text.is_empty() {
            badges.remove(&key);
        } else {
            badges.insert(key, text.to_string());
        }
        self.notifier.set_badge(tab_of(key), text);
    }

    /// What one event of `key`'s run changes: the step while it runs, `?` (and, with no UI
    /// open, a notification) when it waits for the user, nothing once it ended.
    pub fn on_event(&self, key: SessionKey, kind: &EventKind, step: u32) {
        match kind {
            EventKind::AwaitingInput { question, .. } => {
                self.badge(key, "?");
                if !self.ui_open() {
                    self.notifier.notify(&Notification {
                        id: question_notification_id(key),
                        title: QUESTION_TITLE.to_string(),
                        message: short(question),
                    });
                }
            }
            EventKind::Completed { .. }
            | EventKind::Stopped { .. }
            | EventKind::Failed { .. }
            | EventKind::TimedOut { .. } => {
                self.badge(key, "");
                self.notifier
                    .clear_notification(&question_notification_id(key));
            }
            // Anything else: the run goes on (an answer came, or the step moved).
            _ => self.badge(key, &step.max(1).to_string()),
        }
    }

    /// The user saw `key`'s question (a UI acknowledged it): its notification goes.
    pub fn question_seen(&self, key: SessionKey) {
        self.notifier
            .clear_notification(&question_notification_id(key));
    }

    /// The question notification `id` was clicked: it goes, and the popup opens on its
    /// session. `Ok(None)` for a notification that is not a question's.
    pub async fn question_clicked(&self, id: &str) -> Result<Option<PopupOpened>, NotifyError> {
        let Some(key) = id
            .strip_prefix(QUESTION_NOTIFICATION_PREFIX)
            .and_then(|k| SessionKey::parse(k).ok())
        else {
            return Ok(None);
        };
        self.notifier.clear_notification(id);
        self.open_session(key).await.map(Some)
    }

    /// Opens the popup on `key`'s conversation (a question's notification click, the
    /// in-page panel's "Ask a follow-up").
    pub async fn open_session(&self, key: SessionKey) -> Result<PopupOpened, NotifyError> {
        self.notifier.open_popup(tab_of(key)).await
    }
}

/// `text` cut to [`NOTIFICATION_CHARS`] characters.
fn short(text: &str) -> String {
    match text.char_indices().nth(NOTIFICATION_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Forwards every event to the UI, then lets [`Attention`] update the badge.
pub struct AttentionSink {
    /// Where events go.
    pub inner: Rc<dyn EventSink>,
    /// The badge and notifications.
    pub attention: Rc<Attention>,
}

impl EventSink for AttentionSink {
    fn emit(&self, event: &EventEnvelope) {
        self.inner.emit(event);
        if let Ok(key) = SessionKey::parse(&event.session) {
            self.attention
                .on_event(key, &event.event.kind, event.event.step);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_popup_and_side_panel_are_ui_pages() {
        for url in [
            "chrome-extension://abc/popup.html",
            "chrome-extension://abc/popup.html?tab=3",
            "chrome-extension://abc/sidepanel.html#x",
        ] {
            assert!(is_ui_page(url), "{url}");
        }
        for url in [
            "chrome-extension://abc/options.html",
            "chrome-extension://abc/popup.htmlx",
            "https://example.com/popup.html",
            "",
        ] {
            assert!(!is_ui_page(url), "{url}");
        }
    }

    #[test]
    fn long_questions_are_cut_in_notifications() {
        let long = "é".repeat(300);
        assert_eq!(short(&long).chars().count(), NOTIFICATION_CHARS + 1);
        assert_eq!(short("short?"), "short?");
    }
}
