//! Observability: one `tracing` event per failed attempt (with the `tracing` feature), and how
//! the retry loops learn whether an error can be displayed.
//!
//! # Events
//!
//! With the `tracing` feature, every failed attempt is an event with target `retry_kit`, at
//! `DEBUG` when the loop retries and at `WARN` when it gives up, emitted synchronously by the
//! loop on the caller's task, so it sits inside the caller's current span. Fields:
//!
//! | field | value |
//! | --- | --- |
//! | `fn` | the function's path, such as `my_app::db::insert` (for methods, the module path and the method's name); `"closure"` for [`Retry`](crate::Retry) |
//! | `attempt` | the attempt that failed, from 1 |
//! | `class` | `transient`, `permanent` or `idempotent_only` |
//! | `delay_ms` | when retrying: the wait before the next attempt |
//! | `reason` | when giving up: the [`StopReason`](crate::StopReason), such as `attempts_exhausted` |
//! | `elapsed_ms` | time since the call started |
//! | `error` | the error's `Display`, when its type has one |
//!
//! `error` is filled by autoref specialisation in the code `#[retryable]` generates: where the
//! error type implements `Display` (in a generic function: where a bound says so), its text is
//! recorded; otherwise the field is absent. [`Retry`](crate::Retry) cannot see the error type
//! when it is built, so it opts in with [`Retry::display_errors`](crate::Retry::display_errors).
//!
//! To fill `elapsed_ms`, a call reads the clock when it starts if a subscriber is interested in
//! `WARN` events at all (one atomic load decides). Without the feature, none of this is
//! compiled: no clock read, no check, no field.

use crate::class::ErrorClass;
use crate::run::{Next, Outcome};
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

/// Formats an error with its `Display` impl.
pub type FmtFn<E> = fn(&E, &mut fmt::Formatter<'_>) -> fmt::Result;

/// Finds out, for the outcome type `R` (a `Result<T, E>`), whether `E` has a `Display`, by
/// autoref specialisation: with both [`ViaDisplay`] and [`ViaNothing`] in scope,
/// `(&DisplayProbe::<R>::new()).display_fn()` is `Some(<E as Display>::fmt)` when `E: Display`
/// holds where the expression is written, and `None` otherwise (also when `R` is not a
/// `Result`, which is then reported elsewhere, once).
pub struct DisplayProbe<R: ?Sized>(PhantomData<fn(&R)>);

impl<R: ?Sized> DisplayProbe<R> {
    /// The probe for the outcome type `R`.
    pub const fn new() -> Self {
        DisplayProbe(PhantomData)
    }
}

impl<R: ?Sized> Default for DisplayProbe<R> {
    fn default() -> Self {
        DisplayProbe::new()
    }
}

/// The specialised case of [`DisplayProbe`]: the error has a `Display`.
pub trait ViaDisplay<E: ?Sized> {
    /// `Some` formatter.
    fn display_fn(&self) -> Option<FmtFn<E>>;
}

impl<R: Outcome> ViaDisplay<R::Error> for DisplayProbe<R>
where
    R::Error: fmt::Display,
{
    #[inline]
    fn display_fn(&self) -> Option<FmtFn<R::Error>> {
        Some(<R::Error as fmt::Display>::fmt)
    }
}

/// The fallback case of [`DisplayProbe`]: no `Display`.
pub trait ViaNothing {
    /// `None`.
    fn display_fn<E: ?Sized>(&self) -> Option<FmtFn<E>>;
}

impl<R: ?Sized> ViaNothing for &DisplayProbe<R> {
    #[inline]
    fn display_fn<E: ?Sized>(&self) -> Option<FmtFn<E>> {
        None
    }
}

/// No `Display` for the error: what generated code passes when it cannot name the outcome type
/// (a return type with `impl Trait` in it).
#[inline]
pub const fn no_display<E: ?Sized>() -> Option<FmtFn<E>> {
    None
}

/// Shows an error through a [`FmtFn`].
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub(crate) struct Shown<'e, E: ?Sized>(pub(crate) &'e E, pub(crate) FmtFn<E>);

impl<E: ?Sized> fmt::Display for Shown<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (self.1)(self.0, f)
    }
}

/// Whether a call should read the clock at its start so that events can report `elapsed_ms`.
#[inline]
pub(crate) fn wants_clock() -> bool {
    #[cfg(feature = "tracing")]
    {
        tracing::level_filters::LevelFilter::current() >= tracing::Level::WARN
    }
    #[cfg(not(feature = "tracing"))]
    {
        false
    }
}

/// What one event reports.
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub(crate) struct Event<'a> {
    pub(crate) function: &'static str,
    pub(crate) attempt: u32,
    pub(crate) class: ErrorClass,
    pub(crate) elapsed: Duration,
    pub(crate) next: Next,
    pub(crate) error: Option<&'a dyn fmt::Display>,
}

/// Emit the event for one failed attempt.
#[cfg(feature = "tracing")]
#[cold]
pub(crate) fn failed_attempt(event: &Event<'_>) {
    use tracing::field::display;
    let elapsed_ms = millis(event.elapsed);
    let error = event.error.map(display);
    match event.next {
        // `fn` is a keyword, so the field names are written in the braced, quoted form.
        Next::Retry(delay) => tracing::debug!(
            target: "retry_kit",
            {
                "fn" = event.function,
                "attempt" = event.attempt,
                "class" = event.class.as_str(),
                "delay_ms" = millis(delay),
                "elapsed_ms" = elapsed_ms,
                "error" = error,
            },
            "attempt failed; retrying"
        ),
        Next::Stop(reason) => tracing::warn!(
            target: "retry_kit",
            {
                "fn" = event.function,
                "attempt" = event.attempt,
                "class" = event.class.as_str(),
                "reason" = reason.as_str(),
                "elapsed_ms" = elapsed_ms,
                "error" = error,
            },
            "attempt failed; giving up"
        ),
    }
}

/// Whole milliseconds, saturating.
#[cfg(feature = "tracing")]
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
