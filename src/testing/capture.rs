//! [`ScriptedCapture`]: a screen capture that plays back screenshots (or failures) in order,
//! records the tabs it was asked for, and fails the test on a capture the script has no
//! answer for, or (when dropped) on answers never asked for; and [`test_png`], a real PNG
//! header of any size for its answers.

use std::cell::RefCell;
use std::collections::VecDeque;

use futures::future::{self, LocalBoxFuture};
use futures::FutureExt;

use crate::ports::{CaptureError, ScreenCapture};
use crate::types::image::base64_encode;
use crate::types::Image;

/// A screen capture that answers from a script.
pub struct ScriptedCapture {
    answers: RefCell<VecDeque<Result<Image, CaptureError>>>,
    /// The tab of every capture asked for, in order.
    pub tabs: RefCell<Vec<i64>>,
    /// The page each capture was asked for (the run's page address, if known), in order.
    pub pages: RefCell<Vec<Option<String>>>,
    /// What the tab shows, when a test sets it ([`ScriptedCapture::showing`]).
    showing: Option<String>,
    lenient: bool,
}

impl ScriptedCapture {
    /// A capture with `answers`, one per expected screenshot.
    pub fn new(answers: Vec<Result<Image, CaptureError>>) -> Self {
        Self {
            answers: RefCell::new(answers.into()),
            tabs: RefCell::default(),
            pages: RefCell::default(),
            showing: None,
            lenient: false,
        }
    }

    /// The same capture, on a tab that shows `url`: a capture asked for another page is
    /// refused as the browser's is ([`CaptureError::OtherPage`]), using no scripted answer.
    #[must_use]
    pub fn showing(mut self, url: &str) -> Self {
        self.showing = Some(url.to_string());
        self
    }

    /// The same capture, allowing answers never asked for (runs cut at random points).
    #[must_use]
    pub fn lenient(mut self) -> Self {
        self.lenient = true;
        self
    }

    /// The same capture answering every call with `image` (never failing on a count).
    pub fn always(image: Image) -> Self {
        Self::new(vec![Ok(image); 64]).lenient()
    }
}

/// A PNG image of `width` × `height` for tests: a valid signature and `IHDR` chunk (the
/// pixels themselves are not needed by anything that reads it).
pub fn test_png(width: u32, height: u32) -> Image {
    let mut bytes = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13];
    bytes.extend_from_slice(b"IHDR");
    bytes.extend_from_slice(&width.to_be_bytes());
    bytes.extend_from_slice(&height.to_be_bytes());
    bytes.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    Image {
        mime_type: "image/png".into(),
        data: base64_encode(&bytes),
        width,
        height,
    }
}

impl Drop for ScriptedCapture {
    fn drop(&mut self) {
        let left = self.answers.get_mut().len();
        if left > 0 && !self.lenient && !std::thread::panicking() {
            panic!(
                "ScriptedCapture: {left} scripted screenshot(s) never asked for after {} capture(s)",
                self.tabs.get_mut().len()
            );
        }
    }
}

impl ScreenCapture for ScriptedCapture {
    fn capture_visible<'a>(
        &'a self,
        tab_id: i64,
        page_url: Option<&'a str>,
    ) -> LocalBoxFuture<'a, Result<Image, CaptureError>> {
        self.tabs.borrow_mut().push(tab_id);
        self.pages.borrow_mut().push(page_url.map(str::to_string));
        if let (Some(shows), Some(page_url)) = (&self.showing, page_url) {
            if !crate::url::same_page(shows, page_url) {
                return future::ready(Err(CaptureError::OtherPage)).boxed_local();
            }
        }
        let answer = self.answers.borrow_mut().pop_front().unwrap_or_else(|| {
            panic!(
                "ScriptedCapture: unexpected capture #{} of tab {tab_id}, the script has no answer left",
                self.tabs.borrow().len()
            )
        });
        future::ready(answer).boxed_local()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::image::png_size;

    #[test]
    fn plays_back_in_order_and_records_the_tabs() {
        let capture =
            ScriptedCapture::new(vec![Ok(test_png(10, 20)), Err(CaptureError::NotVisible)]);
        let first =
            futures::executor::block_on(capture.capture_visible(7, Some("https://a.example/")))
                .expect("a png");
        let bytes = crate::types::image::base64_decode(&first.data).expect("base64");
        assert_eq!(png_size(&bytes), Some((10, 20)));
        let second =
            futures::executor::block_on(capture.capture_visible(8, Some("https://a.example/")));
        assert_eq!(second, Err(CaptureError::NotVisible));
        assert_eq!(*capture.tabs.borrow(), [7, 8]);
    }

    #[test]
    #[should_panic(expected = "unexpected capture")]
    fn an_unexpected_capture_fails_the_test() {
        let capture = ScriptedCapture::new(Vec::new());
        let _ = futures::executor::block_on(capture.capture_visible(1, Some("https://a.example/")));
    }

    #[test]
    #[should_panic(expected = "never asked for")]
    fn an_unused_screenshot_fails_the_test() {
        let _capture = ScriptedCapture::new(vec![Err(CaptureError::NotVisible)]);
    }
}
