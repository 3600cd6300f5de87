//! What receives every failed attempt's record: a user's `on_failure` function, or nothing.

use crate::stop::Failure;
use std::fmt;

/// Formats an error with its `Display` impl.
pub type FmtFn<E> = fn(&E, &mut fmt::Formatter<'_>) -> fmt::Result;

/// Receives every failed attempt's [`Failure`] record: any `FnMut(&Failure<'_, E>)`, or
/// [`NoHook`].
pub trait Hook<E> {
    /// Whether this hook wants records at all (and so whether the loop reads the clock).
    const ACTIVE: bool = true;
    /// Called once per failed attempt.
    fn on_failure(&mut self, failure: &Failure<'_, E>);
    /// Called when attempt number `attempt` succeeds (only for an [`ACTIVE`](Self::ACTIVE)
    /// hook; nothing by default).
    #[inline]
    fn on_success(&mut self, attempt: u32) {
        let _ = attempt;
    }
    /// Called when a hedged call starts attempt number `attempt` beside `running` attempts
    /// that have not answered within the hedge delay (see [`Hedge`](crate::builder::Hedge); nothing by
    /// default). A hedge is not a failure, so a user's `on_failure` function does not see it;
    /// `tracing` events and `metrics` do.
    #[inline]
    fn on_hedge(&mut self, attempt: u32, running: u32) {
        let _ = (attempt, running);
    }
    /// Called when a hedged call returns while `running` of its attempts have not answered: they
    /// are dropped (cancelled) with it. They were sent, so `metrics` counts them as attempts
    /// (`outcome = "cancelled"`); nothing by default.
    #[inline]
    fn on_cancelled(&mut self, running: u32) {
        let _ = running;
    }
    /// How to show an error in a `tracing` event, if it can be shown. See
    /// [`observe`](crate::observe).
    #[inline]
    fn display_fn(&self) -> Option<FmtFn<E>> {
        None
    }
    /// Whether the call should read the clock when it starts, so that records carry
    /// [`Failure::elapsed`].
    #[inline]
    fn wants_clock(&self) -> bool {
        Self::ACTIVE
    }
}

/// No failure hook: the loop builds no records and reads no clock for them.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHook;

impl<E> Hook<E> for NoHook {
    const ACTIVE: bool = false;
    #[inline]
    fn on_failure(&mut self, _: &Failure<'_, E>) {}
}

impl<E, F: FnMut(&Failure<'_, E>)> Hook<E> for F {
    #[inline]
    fn on_failure(&mut self, failure: &Failure<'_, E>) {
        self(failure)
    }
}

/// A hook whose errors are shown with their `Display` in `tracing` events: what
/// [`Retry::display_errors`](crate::Retry::display_errors) installs, and `#[retryable]` where
/// the error type has a `Display`.
#[derive(Clone, Copy, Debug)]
pub struct Displayed<H>(pub H);

impl<E: std::fmt::Display, H: Hook<E>> Hook<E> for Displayed<H> {
    const ACTIVE: bool = H::ACTIVE;
    #[inline]
    fn on_failure(&mut self, failure: &Failure<'_, E>) {
        self.0.on_failure(failure)
    }
    #[inline]
    fn on_success(&mut self, attempt: u32) {
        self.0.on_success(attempt)
    }
    #[inline]
    fn on_hedge(&mut self, attempt: u32, running: u32) {
        self.0.on_hedge(attempt, running)
    }
    #[inline]
    fn on_cancelled(&mut self, running: u32) {
        self.0.on_cancelled(running)
    }

    #[inline]
    fn display_fn(&self) -> Option<FmtFn<E>> {
        Some(<E as std::fmt::Display>::fmt)
    }
    #[inline]
    fn wants_clock(&self) -> bool {
        self.0.wants_clock()
    }
}
