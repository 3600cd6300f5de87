//! Time: the real clock, tokio's (pausable) clock, and this thread's virtual clock.
//!
//! Every reading of "now" in the crate goes through [`now`], so a test controls time in one of
//! two ways and every feature follows it:
//! - under `#[tokio::test(start_paused = true)]`, `now` is tokio's paused clock (with the
//!   `tokio` feature), and async sleeps are tokio sleeps;
//! - inside [`testing::record_sleeps`](crate::testing::record_sleeps), `now` is a virtual clock
//!   on this thread that sync sleeps advance instead of sleeping; inside
//!   [`testing::record_sleeps_async`](crate::testing::record_sleeps_async) the same clock is
//!   installed around every poll of the recorded future, and async sleeps advance it too.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

struct Virtual {
    origin: Instant,
    advanced: Duration,
}

thread_local! {
    static VIRTUAL: Cell<Option<(Instant, Duration)>> = const { Cell::new(None) };
    static RECORDED: RefCell<Vec<Duration>> = const { RefCell::new(Vec::new()) };
}

/// The current instant on the clock this thread is following.
#[inline]
pub fn now() -> Instant {
    if let Some((origin, advanced)) = VIRTUAL.with(Cell::get) {
        return Virtual { origin, advanced }.now();
    }
    real_now()
}

#[cfg(feature = "tokio")]
#[inline]
fn real_now() -> Instant {
    // Without tokio's `test-util` feature, or outside a paused runtime, this is the system's
    // monotonic clock.
    tokio::time::Instant::now().into_std()
}

#[cfg(not(feature = "tokio"))]
#[inline]
fn real_now() -> Instant {
    Instant::now()
}

/// The wall-clock time on the clock this thread is following: the system's time when the
/// process first asked, moved on by as much as [`now`] has moved since, so that a paused or
/// virtual clock moves it too, and two readings at one instant of that clock agree to the
/// nanosecond. What work that outlives the process records (`RetryState`): a deadline that
/// spans processes is measured on it. (A step of the system clock after the first reading is
/// not followed: the process keeps the wall clock it started with.)
pub fn wall_now() -> std::time::SystemTime {
    static BASE: std::sync::OnceLock<(std::time::SystemTime, Instant)> = std::sync::OnceLock::new();
    let (wall, at) = *BASE.get_or_init(|| (std::time::SystemTime::now(), Instant::now()));
    let followed = now();
    if followed >= at {
        wall.checked_add(followed - at).unwrap_or(wall)
    } else {
        wall.checked_sub(at - followed).unwrap_or(wall)
    }
}

impl Virtual {
    fn now(&self) -> Instant {
        saturating_add(self.origin, self.advanced)
    }
}

/// `instant + d`, or the latest instant this platform represents on the way there: virtual time
/// never runs backwards, however long the recorded sleeps.
pub(crate) fn saturating_add(instant: Instant, d: Duration) -> Instant {
    if let Some(later) = instant.checked_add(d) {
        return later;
    }
    // Binary search for the largest representable step: at most ~94 halvings of a Duration.
    let (mut reached, mut step) = (instant, d);
    while !step.is_zero() {
        match reached.checked_add(step) {
            Some(later) => reached = later,
            None => step /= 2,
        }
    }
    reached
}

/// Block this thread for `d`, or advance the virtual clock by `d` inside `record_sleeps`.
// Inlined, so that a zero wait on a real clock (the retry benchmarks' case) costs one
// thread-local read and no call; the virtual clock stays out of line.
#[inline]
pub fn sleep_sync(d: Duration) {
    if VIRTUAL.with(|v| v.get().is_some()) {
        return sleep_virtual(d);
    }
    if !d.is_zero() {
        std::thread::sleep(d);
    }
}

#[cold]
fn sleep_virtual(d: Duration) {
    if let Some((origin, advanced)) = VIRTUAL.with(Cell::get) {
        VIRTUAL.with(|v| v.set(Some((origin, advanced.saturating_add(d)))));
        RECORDED.with(|r| r.borrow_mut().push(d));
    }
}

/// Inside [`testing::record_sleeps`](crate::testing::record_sleeps) or
/// [`testing::record_sleeps_async`](crate::testing::record_sleeps_async): record `d` and advance
/// the virtual clock by it instead of sleeping, and say so. An async loop asks this before it
/// awaits its sleep; outside a recording it costs one thread-local read.
#[inline]
pub fn virtual_sleep(d: Duration) -> bool {
    if VIRTUAL.with(|v| v.get().is_some()) {
        sleep_virtual(d);
        return true;
    }
    false
}

/// A virtual clock and its log of sleeps, kept outside the thread-locals while it is not
/// entered: a sync recording enters it once, an async one around every poll of its future.
pub(crate) struct VirtualTime {
    clock: Option<(Instant, Duration)>,
    recorded: Vec<Duration>,
}

impl VirtualTime {
    /// A virtual clock starting now: at the current virtual time inside another recording (a
    /// nested recording starts its own log and continues the outer time), else the real time.
    pub(crate) fn starting_now() -> Self {
        VirtualTime {
            clock: Some((now(), Duration::ZERO)),
            recorded: Vec::new(),
        }
    }

    /// Make this the thread's clock until the guard drops (also on unwind).
    pub(crate) fn enter(&mut self) -> EnteredTime<'_> {
        self.swap();
        EnteredTime(self)
    }

    /// The sleeps recorded so far.
    pub(crate) fn into_recorded(self) -> Vec<Duration> {
        self.recorded
    }

    fn swap(&mut self) {
        VIRTUAL.with(|v| self.clock = v.replace(self.clock));
        RECORDED.with(|r| std::mem::swap(&mut *r.borrow_mut(), &mut self.recorded));
    }
}

/// A [`VirtualTime`] installed on this thread; dropping it restores what was there before.
pub(crate) struct EnteredTime<'a>(&'a mut VirtualTime);

impl Drop for EnteredTime<'_> {
    fn drop(&mut self) {
        self.0.swap();
    }
}

/// Run `f` with this thread's sleeps made virtual; return what it returned and the sleeps.
pub(crate) fn with_virtual_time<R>(f: impl FnOnce() -> R) -> (R, Vec<Duration>) {
    let mut time = VirtualTime::starting_now();
    let out = {
        let _entered = time.enter();
        f()
    };
    (out, time.into_recorded())
}

/// The default async sleep: tokio's inside a tokio runtime (following its clock, paused or
/// not), and a portable timer of the crate's own on any other executor, so a
/// retry never panics with "there is no reactor running" at the first failure. The async loop
/// skips zero-length waits itself (tokio rounds a zero sleep up to its 1 ms tick on a real
/// clock). A function returning the future rather than an `async fn`, so that the loop boxes
/// the sleep itself and no wrapper's state.
#[cfg(feature = "tokio")]
#[inline]
pub fn tokio_sleep(d: Duration) -> Sleep {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => Sleep::Tokio(tokio::time::sleep(d)),
        Err(_) => Sleep::Portable(timer::Sleep::new(d)),
    }
}

#[cfg(feature = "tokio")]
pub mod timer;

/// What [`tokio_sleep`] returns: tokio's sleep, or the portable timer's (also named
/// `retry_kit::run::plumbing::Sleep`).
#[cfg(feature = "tokio")]
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub enum Sleep {
    /// Inside a tokio runtime.
    Tokio(tokio::time::Sleep),
    /// On any other executor.
    Portable(timer::Sleep),
}

#[cfg(feature = "tokio")]
impl std::future::Future for Sleep {
    type Output = ();

    #[inline]
    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        // SAFETY: the variants are pinned structurally: neither is moved out of `self`, and
        // `Sleep` has no `Drop` impl of its own.
        unsafe {
            match self.get_unchecked_mut() {
                Sleep::Tokio(sleep) => std::pin::Pin::new_unchecked(sleep).poll(cx),
                Sleep::Portable(sleep) => std::pin::Pin::new(sleep).poll(cx),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturating_add_never_goes_backwards() {
        let now = Instant::now();
        let far = saturating_add(now, Duration::MAX);
        assert!(far > now);
        assert_eq!(saturating_add(far, Duration::from_secs(1)), far);
        assert_eq!(
            saturating_add(now, Duration::from_secs(1)),
            now + Duration::from_secs(1)
        );
    }
}
