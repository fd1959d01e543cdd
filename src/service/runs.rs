//! Runs: asking a question, the session's snapshot (live from the registry, else from
//! storage), and driving a run to its end, for a new question and a resumed run alike.

use std::rc::Rc;

use futures::FutureExt;

use super::registry::Claim;
use super::{RunFuture, Service};
use crate::agent::Engine;
use crate::ports::draw_nonce;
use crate::protocol::{
    ApiError, ApiErrorKind, SessionKey, SessionView, UserText, PAGE_READ_TIMEOUT_MS,
};
use crate::settings::Settings;
use crate::state::{self, RunStatus, SessionState, StateError, SESSION_PREFIX};
use crate::types::page::PDF_READ_TIMEOUT_MS;
use crate::types::{PageInfo, PageReadError, PdfReadError, Selection};

/// Whether `address` is a PDF file of the computer (`file://…/x.pdf`), which extensions
/// may not script.
fn is_pdf_file(address: &str) -> bool {
    let lower = address.to_ascii_lowercase();
    let path = lower.split(['?', '#']).next().unwrap_or_default();
    path.starts_with("file:") && path.ends_with(".pdf")
}

/// The notice for a question asked about a tab that closed before its text was read.
pub const CLOSED_TAB: &str =
    "The tab was closed before its text could be read, so the question is answered without the page's text.";

/// The notice for a question about a page on a site the extension has no access to (no host
/// permission and no `activeTab` grant: the popup was not opened from the toolbar on it).
pub const NO_ACCESS: &str = "KnowledgeLens has no access to this site yet: click its toolbar icon on the page (or use Explain with KnowledgeLens) to let it read this page, then ask again. This question is answered without the page's text.";

/// The notice for a question about a page extensions may not read.
pub const UNREADABLE_PAGE: &str = "This page can't be read by extensions (browser pages such as chrome:// and the Chrome Web Store are protected), so the question is answered without the page's text.";

/// `text` (our own English message) as a sentence for the UI: capitalized, ending with a
/// period. ASCII case only: Unicode case tables would add ~17 KB to the wasm.
fn sentence(text: &str) -> String {
    let mut out = text.trim().to_string();
    if let Some(first) = out.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    if !out.ends_with(['.', '!', '?']) {
        out.push('.');
    }
    out
}

/// A nonce when the platform has no random numbers: unpredictable enough only against a
/// page that does not know when the run resumed, so it is a last resort.
fn fallback_nonce(now_ms: u64, run_id: u32) -> String {
    let z = crate::agent::executor::splitmix64(now_ms ^ (u64::from(run_id) << 48));
    format!("{z:016x}")
}

/// The fence nonce of a new run on `page`: the session's last one while the session stays
/// on the same page (same URL), so the system text and the page block of a second question
/// are the bytes of the first one's (the model server's prompt cache reuses them); else
/// `fresh`. Either way the page never sees it: it is drawn here, kept in the session and
/// sent only to the model.
fn page_nonce(state: &SessionState, page: Option<&PageInfo>, fresh: String) -> String {
    let same_page = match (state.page.as_ref(), page) {
        (Some(before), Some(now)) => before.url == now.url,
        _ => false,
    };
    if same_page && !state.nonce.is_empty() {
        state.nonce.clone()
    } else {
        fresh
    }
}

/// The page `state`'s conversation is about, named for a notice (its title, else its
/// URL), when the tab now shows another one: `page`, of another origin or path (the query
/// and the fragment aside), or no page at all after a `read` that failed (a page
/// extensions may not read, a closed tab: the conversation's page is not known to be
/// there). `None` without a conversation, or when it had no page.
fn another_page(state: &SessionState, page: Option<&PageInfo>, read: bool) -> Option<String> {
    let before = state.page.as_ref()?;
    let place = |url: &str| crate::url::parse(url).map(|url| url.place());
    let same = match page {
        Some(now) => place(&before.url) == place(&now.url),
        None => !read,
    };
    if same || !state::has_conversation(state) {
        return None;
    }
    let title = crate::types::page::clean_title(&before.title);
    Some(if title.trim().is_empty() {
        crate::types::page::clean_url(&before.url)
    } else {
        title
    })
}

/// A selection made in a PDF (the context menu gives only its text) gets its paragraph from
/// the PDF's text as its context, and its page as its heading path.
fn pdf_context(selection: &mut Selection, page: &PageInfo) {
    if page.reader != crate::types::page::PDF_READER || !selection.context.trim().is_empty() {
        return;
    }
    if let Some((paragraph, number)) =
        crate::page::find::paragraph_around(&page.text, &selection.text)
    {
        let (context, _) =
            crate::types::page::cap_chars(paragraph, crate::types::page::MAX_CONTEXT_CHARS);
        selection.context = context;
        if let Some(number) = number {
            selection.headings = vec![format!("page {number}")];
        }
    }
}

/// What a new run starts from.
enum Begin<'a> {
    /// A question (checked), researched in at most this many subtopics when given (checked).
    Question(&'a str, Option<u32>),
    /// A selection to explain (checked).
    Explain(Selection),
    /// A selection action (not Explain) to apply to a selection (checked).
    Action(Selection, crate::actions::ActionRun),
}

fn busy() -> ApiError {
    ApiError::new(
        ApiErrorKind::Busy,
        "A question is already being answered here: wait for it or press Stop.",
    )
}

/// Takes a run out of the registry if its future goes without reaching its end (dropped,
/// or unwound by a panic), so its session never answers "busy" for a run that is gone. The
/// normal end defuses it and calls `Service::end`, which also deletes a closed tab's session.
struct Leave {
    service: Option<Rc<Service>>,
    key: SessionKey,
}

impl Leave {
    fn defuse(mut self) {
        self.service = None;
    }
}

impl Drop for Leave {
    fn drop(&mut self) {
        if let Some(service) = self.service.take() {
            service.registry.finish(self.key);
        }
    }
}

/// A session as read from storage, and the notice to show when it had to start afresh.
pub(super) struct Loaded {
    pub state: SessionState,
    pub damage: Option<String>,
}

impl Service {
    /// Loads a session; a corrupted or newer record becomes a fresh session whose notices
    /// say what happened (they show in its snapshot, and with its next run).
    pub(super) async fn load_session(&self, key: SessionKey) -> Result<Loaded, ApiError> {
        let session = key.to_string();
        let now = self.ports.clock.now_ms();
        let err = match state::load(self.ports.sessions.as_ref(), &session).await {
            Ok(state) => {
                let state = state.unwrap_or_else(|| SessionState::new(&session, now));
                return Ok(Loaded {
                    state,
                    damage: None,
                });
            }
            Err(StateError::Store(e)) => return Err(ApiError::storage("read the session", e)),
            Err(e) => e,
        };
        if self.registry.is_running(key) {
            // A run of this worker owns the session: what was read is a write in progress,
            // not damage; never set aside a live run's data.
            return Err(ApiError::new(
                ApiErrorKind::Busy,
                "The session is being saved: try again in a moment.",
            ));
        }
        let mut message = sentence(&err.to_string());
        if matches!(err, StateError::Corrupted(_)) {
            match state::quarantine(self.ports.sessions.as_ref(), &session, now).await {
                Ok(kept) => message.push_str(&format!(" The damaged data was kept under \"{kept}\" in the extension's session storage.")),
                Err(e) => message.push_str(&format!(" (It could not be set aside: {e}.)")),
            }
        }
        let mut state = SessionState::new(&session, now);
        state.notices.push(message.clone());
        Ok(Loaded {
            state,
            damage: Some(message),
        })
    }

    /// The session's view: a run of this worker is read live, any other session from
    /// storage. A run that is persisted as going on but is not running in this worker (it
    /// was stopped mid-run) is resumed here too: a reconnecting popup is a resume trigger
    /// as much as the worker starting, and a run is never resumed twice.
    pub(super) async fn snapshot(
        self: &Rc<Self>,
        key: SessionKey,
    ) -> Result<(SessionView, Option<RunFuture>), ApiError> {
        let (settings_notice, configured) = self.settings_status().await;
        if let Some(mut view) = self.live_view(key).await {
            view.settings_notice = settings_notice;
            return Ok((view, None));
        }
        let state = self.load_session(key).await?.state;
        let mut view = SessionView::of(&state);
        view.settings_notice = settings_notice;
        // Only a session that never ran can show the setup card.
        view.setup_needed = state.run_id == 0 && !configured;
        let run = if state.status == RunStatus::Running {
            self.claim(key).await
        } else {
            None
        };
        Ok((view, run))
    }

    /// The view of `key`'s live run, `None` when none goes on here: the shared state the
    /// engine updates before each event it emits, so the view reflects exactly the events up
    /// to its `(rev, seq)`, streamed draft included.
    async fn live_view(&self, key: SessionKey) -> Option<SessionView> {
        self.registry.with_live(key, SessionView::of)
    }

    /// Takes over a persisted running session that no run in this worker is driving.
    ///
    /// The session is registered as running first and loaded after: a run of this worker
    /// saves its final state before it leaves the registry, so what is loaded here is never
    /// a state some run is about to supersede. `None` if it is running here already, or no
    /// longer running once loaded.
    pub(super) async fn claim(self: &Rc<Self>, key: SessionKey) -> Option<RunFuture> {
        let claim = self.registry.register(key)?;
        match state::load(self.ports.sessions.as_ref(), &key.to_string()).await {
            Ok(Some(state)) if state.status == RunStatus::Running => {
                Some(self.clone().drive(claim, state))
            }
            _ => {
                self.end(key).await;
                None
            }
        }
    }

    /// `key`'s run (or claim) ends here; a tab closed meanwhile loses its session now.
    async fn end(&self, key: SessionKey) {
        if self.registry.finish(key) {
            // Best effort: a leftover record is harmless and removed with the next close.
            let _ignored =
                state::delete_session(self.ports.sessions.as_ref(), &key.to_string()).await;
        }
    }

    /// Starts a run of `question` in `key`: the page's text is read first, and the new
    /// run is saved before the reply (its snapshot) is sent.
    pub(super) async fn ask(
        self: &Rc<Self>,
        key: SessionKey,
        question: &str,
        tab_id: Option<i64>,
        max_steps: Option<u32>,
        research: Option<u32>,
    ) -> Result<(SessionView, RunFuture), ApiError> {
        let question = UserText::Question.checked(question)?;
        self.start(key, Begin::Question(question, research), tab_id, max_steps)
            .await
    }

    /// Starts a run in `key` that explains `selection` (already checked and capped), like
    /// [`Service::ask`]: same page read, same busy error, same reply.
    pub(super) async fn explain(
        self: &Rc<Self>,
        key: SessionKey,
        selection: Selection,
        tab_id: Option<i64>,
        max_steps: Option<u32>,
    ) -> Result<(SessionView, RunFuture), ApiError> {
        self.start(key, Begin::Explain(selection), tab_id, max_steps)
            .await
    }

    /// Starts a run in `key` that applies action `action` to `selection` (already checked):
    /// Explain is an explanation ([`Service::explain`]); another action's run records it
    /// ([`crate::actions::ActionRun`]), translating into `language` (the browser's) unless
    /// Options chose a language.
    pub(super) async fn run_action(
        self: &Rc<Self>,
        key: SessionKey,
        selection: Selection,
        action: &str,
        language: Option<String>,
        tab_id: Option<i64>,
        max_steps: Option<u32>,
    ) -> Result<(SessionView, RunFuture), ApiError> {
        if action == crate::actions::EXPLAIN {
            return self.explain(key, selection, tab_id, max_steps).await;
        }
        let run = self.action_run(action, language).await?;
        self.start(key, Begin::Action(selection, run), tab_id, max_steps)
            .await
    }

    async fn start(
        self: &Rc<Self>,
        key: SessionKey,
        mut begin: Begin<'_>,
        tab_id: Option<i64>,
        max_steps: Option<u32>,
    ) -> Result<(SessionView, RunFuture), ApiError> {
        if self.registry.is_running(key) {
            return Err(busy());
        }
        let fresh_nonce = draw_nonce(self.ports.random.as_ref())
            .map_err(|e| ApiError::new(ApiErrorKind::Internal, format!("Could not start: {e}.")))?;
        let (settings, configured, problem) = Settings::load_checked(self.ports.settings.as_ref())
            .await
            .map_err(|e| ApiError::storage("read the settings", e))?;
        // A question (not an explanation) with a model set up and search never offered.
        let search_offer = matches!(begin, Begin::Question(..))
            && configured
            && problem.is_none()
            && settings.offers_search();
        let Loaded { mut state, damage } = self.load_session(key).await?;
        let mut notices: Vec<String> = damage.into_iter().collect();
        let page = match tab_id {
            Some(tab) => self.read_page(tab, &mut notices).await,
            None => None,
        };
        if let (Begin::Explain(selection) | Begin::Action(selection, _), Some(page)) =
            (&mut begin, &page)
        {
            pdf_context(selection, page);
        }
        // What is known of a page that could not be read: its address (screenshots check it).
        let address = match (tab_id, &page) {
            (Some(tab), None) => self.ports.pages.address(tab).await.unwrap_or_default(),
            _ => String::new(),
        };
        // Registered only now: reading the page yielded to other requests.
        let claim = self.registry.register(key).ok_or_else(busy)?;
        let now = self.ports.clock.now_ms();
        if let Some(earlier) = another_page(&state, page.as_ref(), tab_id.is_some()) {
            // A conversation belongs to one page: what one site's text made of the answers
            // never reaches the model on another. The earlier one goes to History first, so
            // a failure loses nothing.
            let store = self.ports.sessions.as_ref();
            if let Err(e) = state::archive_conversation(store, &state).await {
                self.end(key).await;
                return Err(ApiError::storage(
                    "keep the conversation about the page before in History (nothing was asked; clearing the history frees space)",
                    e,
                ));
            }
            state = state::fresh_conversation(&state, now);
            notices.push(format!(
                "Earlier conversation about {earlier} is in History."
            ));
        }
        if let (Some(tab), Some(read)) = (tab_id, &page) {
            self.keep_read_page(tab, read, &state, now).await;
        }
        let config = settings.run_config(max_steps);
        let nonce = page_nonce(&state, page.as_ref(), fresh_nonce);
        let research = match begin {
            Begin::Question(question, research) => {
                state.begin_run(question, page, config, now);
                research
            }
            Begin::Explain(selection) => {
                state.begin_explain(selection, page, config, now);
                None
            }
            Begin::Action(selection, action) => {
                state.begin_action(selection, action, page, config, now);
                None
            }
        };
        state.nonce = nonce;
        state.page_address = address;
        if !state.added.is_empty() {
            notices.extend(self.use_added_pages(&mut state).await);
        }
        if let Some(subtopics) = research {
            // The fence of the stages' prompts needs the run's nonce: set just above.
            crate::agent::step::research::begin(&mut state, subtopics, now).map_err(|e| {
                self.registry.finish(key);
                ApiError::new(ApiErrorKind::Internal, format!("Could not start: {e}."))
            })?;
        }
        state.notices = notices;
        match state::save_making_room(self.ports.sessions.as_ref(), &mut state).await {
            Ok(false) => {}
            // Carried by the run's next save, and shown when it starts.
            Ok(true) => state.notices.push(state::STORAGE_FULL_NOTICE.to_string()),
            Err(e) => state.notices.push(format!(
                "Could not save this session ({e}); the run continues in memory."
            )),
        }
        let mut view = SessionView::of(&state);
        view.search_offer = search_offer;
        view.settings_notice = problem.as_ref().map(super::settings::settings_notice);
        let run = self.clone().drive(claim, state);
        Ok((view, run))
    }

    /// Keeps the page just read in tab `tab` for questions across pages (not an incognito
    /// tab's); never evicting a page `state`'s conversation uses. A page not kept changes
    /// nothing for this question (logged).
    async fn keep_read_page(&self, tab: i64, page: &PageInfo, state: &SessionState, now: u64) {
        let private = self.ports.pages.incognito(tab).await;
        let store = self.ports.sessions.as_ref();
        let protected = state.protected_pages();
        let cap = self.ports.pages.read_pages_cap();
        let cap = cap.unwrap_or(state::read_pages::MAX_READ_PAGES);
        let kept =
            state::read_pages::keep_within(store, page, Some(tab), now, &protected, private, cap);
        if let Err(e) = kept.await {
            crate::ports::log(&format!(
                "the page read was not kept for questions across pages: {e}"
            ));
        }
    }

    /// Before a question of a conversation with added pages: numbers them past the own
    /// page's passages for its first question, loads their texts, and says (in the notices
    /// returned) which are no longer kept. (Keeping the page read marked them used.)
    async fn use_added_pages(&self, state: &mut SessionState) -> Vec<String> {
        if state.turns.is_empty() {
            state.renumber_added();
        }
        let store = self.ports.sessions.as_ref();
        if let Err(e) = state::read_pages::load_added_texts(store, state).await {
            return vec![format!(
                "The added pages could not be read ({e}); the question is answered without them."
            )];
        }
        let mut notices = Vec::new();
        for (text, added) in state.added_texts.iter().zip(&state.added) {
            if !added.removed && text.page.text.is_empty() {
                notices.push(format!("\"{}\" is no longer kept, so it is not used: open it and ask KnowledgeLens about it once to add it again.", added.title));
            }
        }
        notices
    }

    /// The text of tab `tab`, or `None` with a notice saying why the question is answered
    /// without it. A PDF is read by the PDF reader, with its own time limit; one read only
    /// in part says which pages were read.
    async fn read_page(&self, tab: i64, notices: &mut Vec<String>) -> Option<PageInfo> {
        let pages = self.ports.pages.as_ref();
        let result = self.within(PAGE_READ_TIMEOUT_MS, pages.read(tab)).await;
        let notice = match result {
            Ok(page) => return Some(page),
            Err(None) => PageReadError::Timeout.to_string(),
            Err(Some(PageReadError::Pdf { document })) => {
                return self.read_pdf(tab, document.as_deref(), notices).await;
            }
            Err(Some(PageReadError::NotScriptable(_))) => {
                match pages.address(tab).await.as_deref().map(is_pdf_file) {
                    Some(true) => PdfReadError::FileUrl.to_string(),
                    _ => UNREADABLE_PAGE.to_string(),
                }
            }
            Err(Some(PageReadError::NoAccess(_))) => NO_ACCESS.to_string(),
            Err(Some(PageReadError::NoTab(_))) => CLOSED_TAB.to_string(),
            Err(Some(err)) => format!(
                "The page's text could not be read ({err}), so the question is answered without it. Reloading the page may help."
            ),
        };
        notices.push(notice);
        None
    }

    /// The text of the PDF tab `tab` shows, or `None` with a notice saying why not.
    async fn read_pdf(
        &self,
        tab: i64,
        document: Option<&str>,
        notices: &mut Vec<String>,
    ) -> Option<PageInfo> {
        let read = self.ports.pages.read_pdf(tab, document);
        match self.within(PDF_READ_TIMEOUT_MS, read).await {
            Ok(page) => {
                if let Some((read, total)) = page.pages_read().filter(|(r, t)| r < t) {
                    notices.push(format!(
                        "This PDF is longer than KnowledgeLens reads: only pages 1-{read} of {total} were read."
                    ));
                }
                Some(page)
            }
            Err(err) => {
                notices.push(err.unwrap_or(PdfReadError::Timeout).to_string());
                None
            }
        }
    }

    /// `read`'s result, or `Err(None)` when it takes longer than `limit_ms` (the clock
    /// decides, so tests can hold it; a read that is done at once arms no timer).
    async fn within<T, E>(
        &self,
        limit_ms: u64,
        read: futures::future::LocalBoxFuture<'_, Result<T, E>>,
    ) -> Result<T, Option<E>> {
        let mut read = read;
        let result = match futures::poll!(&mut read) {
            std::task::Poll::Ready(result) => result,
            std::task::Poll::Pending => {
                let late = self.ports.clock.sleep(limit_ms);
                match futures::future::select(read, late).await {
                    futures::future::Either::Left((result, _)) => result,
                    futures::future::Either::Right(_) => return Err(None),
                }
            }
        };
        result.map_err(Some)
    }

    /// The claimed session's run, driven to its end on the state it shares with the
    /// registry (attached now, so a snapshot taken before the future first runs is live).
    pub(super) fn drive(self: Rc<Self>, claim: Claim, mut state: SessionState) -> RunFuture {
        if state.nonce.is_empty() {
            // A record from before runs had a nonce: it gets one now, saved with the run's
            // next save (before any model call).
            state.nonce = draw_nonce(self.ports.random.as_ref()).unwrap_or_else(|e| {
                crate::ports::log(&format!("{e}; the fence nonce falls back to the clock"));
                fallback_nonce(self.ports.clock.now_ms(), state.run_id)
            });
        }
        let shared = self.registry.attach(&claim, state);
        let leave = Leave {
            service: Some(self.clone()),
            key: claim.key,
        };
        async move {
            // The provider as configured now (a resumed run uses the current settings; the
            // run's bounds and budget come from its own snapshot).
            let settings = Settings::load(self.ports.settings.as_ref())
                .await
                .unwrap_or_default();
            let llm = self.ports.models.client(&settings);
            let search = settings
                .search_config()
                .map(|config| self.ports.search.client(config));
            let engine = Engine::new(
                llm.as_ref(),
                self.ports.clock.as_ref(),
                self.ports.events.as_ref(),
                self.ports.sessions.as_ref(),
                &self.tools,
                claim.stop,
            )
            .with_inbox(claim.inbox)
            .with_search(search.as_deref())
            .with_capture(self.ports.capture.as_ref());
            engine.drive_shared(&shared).await;
            leave.defuse();
            self.end(claim.key).await;
        }
        .boxed_local()
    }

    /// Futures continuing every session that was running when the worker stopped.
    pub async fn resume_all(self: &Rc<Self>) -> Vec<RunFuture> {
        let Ok(keys) = self.ports.sessions.keys(SESSION_PREFIX).await else {
            return Vec::new();
        };
        let mut runs = Vec::new();
        for stored in keys {
            let Ok(key) = SessionKey::parse(&stored[SESSION_PREFIX.len()..]) else {
                continue;
            };
            // Claimed before the head is read (as in `claim`); only the small head record
            // decides, so finished sessions are not loaded whole, and a running one is
            // loaded with the head just read (a worker's start-up waits for this).
            let Some(claim) = self.registry.register(key) else {
                continue;
            };
            let store = self.ports.sessions.as_ref();
            let state = match store.get(&stored).await {
                Ok(Some(text)) => match state::decode_head(&text) {
                    Ok((head, _)) if head.status == RunStatus::Running => {
                        state::load_with_head(store, &key.to_string(), &text)
                            .await
                            .ok()
                    }
                    _ => None,
                },
                _ => None,
            };
            match state {
                Some(state) if state.status == RunStatus::Running => {
                    runs.push(self.clone().drive(claim, state));
                }
                _ => self.end(key).await,
            }
        }
        runs
    }
}
