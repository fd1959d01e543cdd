//! Time and event doubles: a manual clock, a recording event sink, static pages, and
//! polling a future by hand (the worker being stopped at a chosen point).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;

use crate::ports::{Clock, EventSink, PageReader};
use crate::types::events::EventEnvelope;
use crate::types::page::PDF_READER;
use crate::types::{PageInfo, PageReadError, PdfReadError};

/// A clock that moves only when told. By default a sleep passes at once (time jumps
/// forward by its length); a [`ManualClock::held`] clock keeps sleeps pending until
/// [`ManualClock::advance`] reaches their end, for tests that act while a run waits.
pub struct ManualClock {
    now: Rc<Cell<u64>>,
    held: bool,
    sleepers: Rc<RefCell<Vec<Waker>>>,
    /// Every sleep requested, in ms.
    pub sleeps: RefCell<Vec<u64>>,
}

impl ManualClock {
    /// A clock at `start_ms` whose sleeps pass at once.
    pub fn new(start_ms: u64) -> Rc<Self> {
        Rc::new(Self {
            now: Rc::new(Cell::new(start_ms)),
            held: false,
            sleepers: Rc::default(),
            sleeps: RefCell::new(Vec::new()),
        })
    }
    /// A clock at `start_ms` whose sleeps wait for [`ManualClock::advance`].
    pub fn held(start_ms: u64) -> Rc<Self> {
        Rc::new(Self {
            now: Rc::new(Cell::new(start_ms)),
            held: true,
            sleepers: Rc::default(),
            sleeps: RefCell::new(Vec::new()),
        })
    }
    /// Moves time forward (and wakes sleeps that are due).
    pub fn advance(&self, ms: u64) {
        self.now.set(self.now.get() + ms);
        let sleepers = std::mem::take(&mut *self.sleepers.borrow_mut());
        sleepers.into_iter().for_each(Waker::wake);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.get()
    }
    fn sleep(&self, ms: u64) -> LocalBoxFuture<'static, ()> {
        self.sleeps.borrow_mut().push(ms);
        if !self.held {
            self.now.set(self.now.get() + ms);
            return future::ready(()).boxed_local();
        }
        let (now, sleepers) = (self.now.clone(), self.sleepers.clone());
        let until = now.get().saturating_add(ms);
        future::poll_fn(move |cx| {
            if now.get() >= until {
                Poll::Ready(())
            } else {
                sleepers.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            }
        })
        .boxed_local()
    }
}

impl Clock for Rc<ManualClock> {
    fn now_ms(&self) -> u64 {
        self.as_ref().now_ms()
    }
    fn sleep(&self, ms: u64) -> LocalBoxFuture<'static, ()> {
        self.as_ref().sleep(ms)
    }
}

/// Records every event.
#[derive(Default)]
pub struct RecordingSink {
    /// The events, in order.
    pub events: RefCell<Vec<EventEnvelope>>,
}

impl RecordingSink {
    /// The event names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.events
            .borrow()
            .iter()
            .map(|e| e.event.kind.name())
            .collect()
    }

    /// Terminal events emitted (`completed`, `failed`, `stopped`, `timed_out`).
    pub fn endings(&self) -> usize {
        self.names()
            .iter()
            .filter(|n| matches!(**n, "completed" | "failed" | "stopped" | "timed_out"))
            .count()
    }
}

impl EventSink for RecordingSink {
    fn emit(&self, event: &EventEnvelope) {
        self.events.borrow_mut().push(event.clone());
    }
}

/// Pages by tab id; a missing tab is "cannot be scripted", and so is a page whose `reader`
/// is [`UNREADABLE`] (the tab shows its `url`, as the browser says).
#[derive(Default)]
pub struct StaticPages(pub BTreeMap<i64, PageInfo>);

/// The document id [`StaticPages`] gives the PDF in tab `tab_id` (what Chrome's
/// `InjectionResult.documentId` is to the extension).
pub fn document_of(tab_id: i64) -> String {
    format!("document-of-tab-{tab_id}")
}

/// The `reader` of a [`StaticPages`] page that cannot be scripted but has an address.
pub const UNREADABLE: &str = "unreadable";

/// The `reader` of a [`StaticPages`] page on a site the extension has no access to (no
/// host permission, no `activeTab` grant): Chrome hides its address too.
pub const NO_ACCESS: &str = "no_access";

/// The `lang` of a [`StaticPages`] page in an incognito tab.
pub const INCOGNITO: &str = "x-incognito";

impl PageReader for StaticPages {
    /// A page whose `lang` is [`INCOGNITO`] is in an incognito tab; a tab without a page is
    /// not known to be anything else.
    fn incognito(&self, tab_id: i64) -> LocalBoxFuture<'_, bool> {
        let private = self.0.get(&tab_id).is_none_or(|p| p.lang == INCOGNITO);
        future::ready(private).boxed_local()
    }

    /// A page whose `reader` is `"pdf"` is a PDF, read by [`PageReader::read_pdf`].
    fn read(&self, tab_id: i64) -> LocalBoxFuture<'_, Result<PageInfo, PageReadError>> {
        let page = self.0.get(&tab_id).filter(|p| p.reader != UNREADABLE);
        let result = match page {
            Some(page) if page.reader == NO_ACCESS => Err(PageReadError::NoAccess(
                "Cannot access contents of the page. Extension manifest must request permission to access the respective host.".to_string(),
            )),
            Some(page) if page.reader == PDF_READER => Err(PageReadError::Pdf {
                document: Some(document_of(tab_id)),
            }),
            Some(page) => Ok(page.clone()),
            None => Err(PageReadError::NotScriptable(
                "Cannot access contents of the page".to_string(),
            )),
        };
        future::ready(result).boxed_local()
    }

    /// A PDF without text is a scan. The document must be the one `read` named: another
    /// (or none) is a bug in the caller, and reads as the tab having moved on.
    fn read_pdf<'a>(
        &'a self,
        tab_id: i64,
        document: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<PageInfo, PdfReadError>> {
        if document != Some(document_of(tab_id).as_str()) {
            return future::ready(Err(PdfReadError::Gone)).boxed_local();
        }
        let result = match self.0.get(&tab_id).filter(|p| p.reader == PDF_READER) {
            Some(page) if page.text.trim().is_empty() => Err(PdfReadError::Scanned),
            Some(page) => Ok(page.clone()),
            None => Err(PdfReadError::Failed("no PDF in this tab".to_string())),
        };
        future::ready(result).boxed_local()
    }

    fn address(&self, tab_id: i64) -> LocalBoxFuture<'_, Option<String>> {
        let seen = self.0.get(&tab_id).filter(|p| p.reader != NO_ACCESS);
        future::ready(seen.map(|p| p.url.clone())).boxed_local()
    }

    /// Found when the tab's text holds the passage's first 80 non-space characters (as the
    /// extension's `content/locate.js` looks for them).
    fn locate<'a>(
        &'a self,
        tab_id: i64,
        passage: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, PageReadError>> {
        let squeeze = |t: &str| t.chars().filter(|c| !c.is_whitespace()).collect::<String>();
        let result = match self.0.get(&tab_id) {
            None => Err(PageReadError::NoTab(format!("No tab with id: {tab_id}"))),
            Some(page) => {
                let needle: String = squeeze(passage).chars().take(80).collect();
                Ok(!needle.is_empty() && squeeze(&page.text).contains(&needle))
            }
        };
        future::ready(result).boxed_local()
    }
}

/// Pending once (waking its task at once), then ready: a point at which a test driving a
/// future by hand ([`poll_times`]) can stop polling it.
pub fn yield_now() -> impl Future<Output = ()> {
    let mut yielded = false;
    future::poll_fn(move |cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
}

/// Polls `fut` until it is ready or has been polled `max` times; `Some(output)` if it
/// finished. The waker does nothing, so this is for futures whose only pending points
/// wake themselves at once ([`yield_now`] and the doubles built on it). Dropping the
/// future afterwards is the worker being stopped at that point.
pub fn poll_times<F: Future + ?Sized>(mut fut: Pin<&mut F>, max: usize) -> Option<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..max {
        if let Poll::Ready(output) = fut.as_mut().poll(&mut cx) {
            return Some(output);
        }
    }
    None
}

/// How many polls `fut` takes to finish (see [`poll_times`]); `None` if not within `max`.
pub fn polls_to_finish<F: Future + ?Sized>(mut fut: Pin<&mut F>, max: usize) -> Option<usize> {
    let mut cx = Context::from_waker(Waker::noop());
    (1..=max).find(|_| fut.as_mut().poll(&mut cx).is_ready())
}
