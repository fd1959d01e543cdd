//! [`JsClock`]: `Date.now()` and `setTimeout` (gloo-timers binds it on the global scope).

use futures::future::LocalBoxFuture;
use futures::FutureExt;

use crate::ports::Clock;

/// The browser's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct JsClock;

impl Clock for JsClock {
    fn now_ms(&self) -> u64 {
        js_sys::Date::now() as u64
    }

    fn sleep(&self, ms: u64) -> LocalBoxFuture<'static, ()> {
        gloo_timers::future::TimeoutFuture::new(ms.min(u64::from(u32::MAX)) as u32).boxed_local()
    }
}
