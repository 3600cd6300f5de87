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
//! | `fn` | the function's path, such as `my_app::db::insert` (for methods, the module path and the method's name); `"closure"` for [`Retry`](crate::Retry) unless [named](crate::Retry::named); for the layers, unless `.named(..)`: the gRPC layer's method path (`/pkg.Service/Method`), the HTTP layers' and the middleware's request authority (`host:port`) |
//! | `attempt` | the attempt that failed, from 1 |
//! | `class` | `transient`, `permanent`, `idempotent_only`, `already_done`, or `value` for a value `retry_if` polls past |
//! | `next` | the next action, as [`Failure::next`](crate::Failure) says it: `retry`, `wait` (a hedged call waiting for its running attempts) or `stop` |
//! | `delay_ms` | when retrying: the wait before the next attempt |
//! | `code` | the layers' failed attempts that had a status: the HTTP status (`"503"`) or the gRPC code's name (`"UNAVAILABLE"`) |
//! | `reason` | when giving up: the [`StopReason`](crate::StopReason), such as `attempts_exhausted` |
//! | `running` | hedged calls: the attempts still running (a failure that waits for them, at `DEBUG`; a hedge that starts, at `DEBUG` with the message "attempt slow; hedging") |
//! | `elapsed_ms` | time since the call started |
//! | `error` | the error's `Display`, when its type has one (the layers' failures always have one) |
//!
//! A hedged call that returns while attempts are still running drops them: one `DEBUG` event,
//! "call answered; attempts still running cancelled", with `fn` and `cancelled` (how many).
//!
//! `error` is filled by autoref specialisation in the code `#[retryable]` generates: where the
//! error type implements `Display` (in a generic function: where a bound says so), its text is
//! recorded; otherwise the field is absent. [`Retry`](crate::Retry) cannot see the error type
//! when it is built, so it opts in with [`Retry::display_errors`](crate::Retry::display_errors).
//!
//! # Spans
//!
//! Through the layers and the middleware, every attempt after the first runs in a span of its
//! own inside the caller's span, with OpenTelemetry's names: `http.request.resend_count`
//! (HTTP), `grpc.previous-rpc-attempts` (gRPC), and `error.type` when it failed. See
//! [`span`] for every field and where its name comes from. A first attempt has none, so a
//! call answered at once makes no span, and none is made unless a subscriber wants it.
//!
//! To fill `elapsed_ms`, a call reads the clock when it starts if a subscriber is interested in
//! `WARN` events at all (one atomic load decides). Without the feature, none of this is
//! compiled: no clock read, no check, no field.

#[cfg(any(feature = "tracing", feature = "metrics"))]
use crate::run::Failure;
#[cfg(any(feature = "tracing", feature = "metrics"))]
use crate::run::Hook;
#[cfg(feature = "tracing")]
use crate::run::Next;
use crate::run::Outcome;
use crate::run::plumbing::Displayed;
#[cfg(any(feature = "tracing", feature = "metrics"))]
use crate::run::plumbing::FmtFn;
use std::fmt;
use std::marker::PhantomData;
#[cfg(feature = "tracing")]
use std::time::Duration;

pub mod span;
mod subject;
pub use span::AttemptSpan;
pub use subject::{Borrowed, Name, Named, Status, Subject};

/// Finds out, for the outcome type `R` (a `Result<T, E>`), whether `E` has a `Display`, by
/// autoref specialisation: with both [`ViaDisplay`] and [`ViaNothing`] in scope,
/// `(&DisplayProbe::<R>::new()).described(hook)` is `Displayed(hook)`, which shows errors with
/// `<E as Display>::fmt`, when `E: Display` holds where the expression is written, and `hook`
/// itself otherwise (also when `R` is not a `Result`, which is then reported elsewhere, once).
/// Decided by type, so that the hook in every retryable future carries no formatter.
#[doc(hidden)]
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
#[doc(hidden)]
pub trait ViaDisplay<E: ?Sized> {
    /// `hook`, showing errors with their `Display`.
    fn described<H>(&self, hook: H) -> Displayed<H>;
}

impl<R: Outcome> ViaDisplay<R::Error> for DisplayProbe<R>
where
    R::Error: fmt::Display,
{
    #[inline]
    fn described<H>(&self, hook: H) -> Displayed<H> {
        Displayed(hook)
    }
}

/// The fallback case of [`DisplayProbe`]: no `Display`.
#[doc(hidden)]
pub trait ViaNothing {
    /// `hook` as it is.
    fn described<H>(&self, hook: H) -> H;
}

impl<R: ?Sized> ViaNothing for &DisplayProbe<R> {
    #[inline]
    fn described<H>(&self, hook: H) -> H {
        hook
    }
}

/// The hook every loop hands the engine: with the `tracing` or `metrics` feature, the caller's
/// hook wrapped so that each attempt is also an event or a measurement ([`Observer`]), named by
/// `S` (see [`Subject`]); without them, the hook itself.
#[cfg(any(feature = "tracing", feature = "metrics"))]
pub type Observed<H, S = Named> = Observer<H, S>;

/// The hook every loop hands the engine: with the `tracing` or `metrics` feature, the caller's
/// hook wrapped so that each attempt is also an event or a measurement, named by `S` (see
/// [`Subject`]); without them, the hook itself.
#[cfg(not(any(feature = "tracing", feature = "metrics")))]
pub type Observed<H, S = Named> = <H as Unnamed<S>>::Hook;

/// Without the `tracing` and `metrics` features, an observed hook is the hook itself, whatever
/// would have named it: this trait is how [`Observed`] says so while naming `S`.
#[cfg(not(any(feature = "tracing", feature = "metrics")))]
#[doc(hidden)]
pub trait Unnamed<S> {
    /// The hook itself.
    type Hook;
}

#[cfg(not(any(feature = "tracing", feature = "metrics")))]
impl<H, S> Unnamed<S> for H {
    type Hook = H;
}

/// Observe the attempts `hook` receives: with the `tracing` feature as events, with the
/// `metrics` feature as measurements, both labelled `fn` = `name`.
#[inline]
pub fn observed<H>(hook: H, name: &'static str) -> Observed<H> {
    observed_by(hook, Named::new(name))
}

/// Observe the attempts `hook` receives, naming them by `subject` (a layer's: the request's
/// `host:port`, a gRPC method's path, and the status code of each failed attempt).
///
/// A hand-written loop over the engine, named as the builder names its calls:
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::observe::{Named, observed_by};
/// use retry_kit::run::{ByTrait, Call, Hook, NoHook, retry_sync};
/// use retry_kit::RetryPolicy;
/// use std::io;
///
/// let policy = RetryPolicy::new().attempts(2);
/// let mut hook = observed_by(NoHook, Named::new("billing::charge"));
/// let mut call = Call::for_hook::<io::Error, _>(&policy, &hook);
/// let out: io::Result<u32> =
///     retry_sync!(call.after(&ByTrait, &mut hook) <- call.attempt_sync(|| Ok(7)));
/// assert_eq!(out.unwrap(), 7);
/// ```
#[inline]
pub fn observed_by<H, S>(hook: H, subject: S) -> Observed<H, S> {
    #[cfg(any(feature = "tracing", feature = "metrics"))]
    {
        Observer { hook, subject }
    }
    #[cfg(not(any(feature = "tracing", feature = "metrics")))]
    {
        let _ = subject;
        hook
    }
}

/// The [`Meter`] of the builder or layer named `name` at run time (a `Retry`, a tower layer,
/// the middleware), made the first time the name is seen and kept for the program's life, so
/// that their measurements use kept handles as `#[retryable]` functions do. Names are told
/// apart by address (a `&'static str` is one string in the binary): a lookup is a hash of the
/// address and a probe of a table of 64 places, without a lock. Two addresses of one text share
/// the recorder's series (each registers it once); past 64 names, a name is measured without
/// kept handles.
#[cfg(feature = "metrics")]
pub(crate) fn meter_named(name: &'static str) -> Option<&'static Meter> {
    use std::sync::atomic::{AtomicPtr, Ordering};
    const PLACES: usize = 64;
    static NAMED: [AtomicPtr<Meter>; PLACES] =
        [const { AtomicPtr::new(std::ptr::null_mut()) }; PLACES];
    let same = |meter: &Meter| std::ptr::eq(meter.name, name);
    let home = (name.as_ptr() as usize >> 3).wrapping_mul(0x9E37_79B9) % PLACES;
    for i in (home..PLACES).chain(0..home) {
        let mut found = NAMED[i].load(Ordering::Acquire);
        if found.is_null() {
            // Leaked on purpose: one per name, for the program's life (the handles in it are
            // what the measurements keep).
            let new = Box::into_raw(Box::new(Meter::new(name)));
            match NAMED[i].compare_exchange(
                std::ptr::null_mut(),
                new,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                // SAFETY: `new` was just leaked and is never freed.
                Ok(_) => return Some(unsafe { &*new }),
                Err(other) => {
                    // SAFETY: `new` lost the race and was never shared.
                    drop(unsafe { Box::from_raw(new) });
                    found = other;
                }
            }
        }
        // SAFETY: a place holds a leaked `Meter`, never freed, once set.
        let meter = unsafe { &*found };
        if same(meter) {
            return Some(meter);
        }
    }
    None
}

/// The [`Meter`] of a name written per call (a layer's `host:port`, a gRPC method's path),
/// found by its text: made the first time the text is seen, its text and handles kept for the
/// program's life, so that a layer's measurements use kept handles as `#[retryable]` functions
/// do. A table of 64 places, probed without a lock; past 64 texts, a name is measured without
/// kept handles (and its text copied per measurement): what stays bounded is what is kept,
/// whatever a client sends requests to.
#[cfg(feature = "metrics")]
pub(crate) fn meter_for_text(text: &str) -> Option<&'static Meter> {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicPtr, Ordering};
    const PLACES: usize = 64;
    static TEXTS: [AtomicPtr<Meter>; PLACES] =
        [const { AtomicPtr::new(std::ptr::null_mut()) }; PLACES];
    let mut hasher = foldhash::fast::FixedState::with_seed(0x5EED).build_hasher();
    hasher.write(text.as_bytes());
    let home = (hasher.finish() as usize) % PLACES;
    for i in (home..PLACES).chain(0..home) {
        let mut found = TEXTS[i].load(Ordering::Acquire);
        if found.is_null() {
            // Leaked on purpose, as in `meter_named`: one per text, at most 64.
            let name: &'static str = Box::leak(Box::from(text));
            let new = Box::into_raw(Box::new(Meter::new(name)));
            match TEXTS[i].compare_exchange(
                std::ptr::null_mut(),
                new,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                // SAFETY: `new` was just leaked and is never freed.
                Ok(_) => return Some(unsafe { &*new }),
                Err(other) => {
                    // SAFETY: `new` lost the race and was never shared; its name goes with it
                    // (a few bytes, once per lost race).
                    drop(unsafe { Box::from_raw(new) });
                    found = other;
                }
            }
        }
        // SAFETY: a place holds a leaked `Meter`, never freed, once set.
        let meter = unsafe { &*found };
        if meter.name == text {
            return Some(meter);
        }
    }
    None
}

/// A retried function's name and, with the `metrics` feature, the labels and handles of its
/// measurements, made once: `#[retryable]` keeps one in a `static` per function, so that
/// counting an attempt builds no labels, allocates nothing and, once the handle is registered
/// with the application's global recorder, is one atomic add (see [`crate::meter`]).
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::observe::{Meter, observed_as};
/// use retry_kit::run::{ByTrait, Call, Hook, NoHook, retry_sync};
/// use retry_kit::RetryPolicy;
/// use std::io;
///
/// static LOAD: Meter = Meter::new("my_app::load");
/// const POLICY: RetryPolicy = RetryPolicy::new().attempts(2);
///
/// let mut hook = observed_as(NoHook, &LOAD);
/// let mut call = Call::for_hook::<io::Error, _>(&POLICY, &hook);
/// let out: io::Result<u32> =
///     retry_sync!(call.after(&ByTrait, &mut hook) <- call.attempt_sync(|| Ok(1)));
/// assert_eq!(out.unwrap(), 1);
/// assert_eq!(LOAD.name(), "my_app::load");
/// ```
#[derive(Debug)]
pub struct Meter {
    name: &'static str,
    /// `fn` = the name, `outcome` = `success`, `class` = `none`.
    #[cfg(feature = "metrics")]
    success: [::metrics::Label; 3],
    /// Its measurement handles, kept once registered with the application's global recorder.
    #[cfg(feature = "metrics")]
    handles: crate::meter::Handles,
}

impl Meter {
    /// The meter of the function `name` (its path, as in `tracing` events and metrics labels).
    pub const fn new(name: &'static str) -> Self {
        Meter {
            name,
            #[cfg(feature = "metrics")]
            success: [
                ::metrics::Label::from_static_parts("fn", name),
                ::metrics::Label::from_static_parts("outcome", "success"),
                ::metrics::Label::from_static_parts("class", "none"),
            ],
            #[cfg(feature = "metrics")]
            handles: crate::meter::Handles::new(),
        }
    }

    /// The function's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// A successful attempt, counted with the kept handle.
    #[cfg(feature = "metrics")]
    #[inline]
    pub(crate) fn succeeded(&'static self) {
        self.handles.succeeded(&self.success)
    }
}

/// The measurement handles a call's `name` counts with: a `#[retryable]` function's own; a
/// name in the binary's, by its address; a name written per call (a layer's `host:port` or
/// method path), by its text. Past the places kept for names, a name is measured without kept
/// handles.
#[cfg(feature = "metrics")]
pub(crate) fn resolve(name: &Name<'_>) -> crate::meter::Resolved {
    let meter = match *name {
        Name::Kept(meter) => Some(meter),
        Name::Static(name) => meter_named(name),
        Name::Text(text) => meter_for_text(text),
    };
    match meter {
        Some(meter) => crate::meter::Resolved {
            function: ::metrics::SharedString::const_str(meter.name),
            kept: Some(crate::meter::Kept {
                name: meter.name,
                success: &meter.success,
                handles: &meter.handles,
            }),
        },
        None => crate::meter::Resolved {
            function: match *name {
                Name::Static(name) => ::metrics::SharedString::const_str(name),
                other => ::metrics::SharedString::from(other.as_str().to_owned()),
            },
            kept: None,
        },
    }
}

/// As [`observed`], with the function's [`Meter`]: what `#[retryable]` hands the engine.
#[inline]
pub fn observed_as<H>(hook: H, meter: &'static Meter) -> Observed<H> {
    observed_by(hook, Named::kept(meter))
}

/// A hook that also reports every attempt: one `tracing` event per failed attempt (feature
/// `tracing`) and the `retry_kit_*` measurements (feature `metrics`, see [`crate::meter`]),
/// named by its [`Subject`].
#[cfg(any(feature = "tracing", feature = "metrics"))]
#[derive(Debug)]
pub struct Observer<H, S = Named> {
    hook: H,
    subject: S,
}

#[cfg(any(feature = "tracing", feature = "metrics"))]
impl<E, H: Hook<E>, S: Subject + Status<E>> Hook<E> for Observer<H, S> {
    const ACTIVE: bool = true;

    #[inline]
    fn on_failure(&mut self, failure: &Failure<'_, E>) {
        if H::ACTIVE {
            self.hook.on_failure(failure);
        }
        failed(&self.hook, &self.subject, failure);
    }

    #[inline]
    fn on_success(&mut self, attempt: u32) {
        if H::ACTIVE {
            self.hook.on_success(attempt);
        }
        #[cfg(feature = "metrics")]
        self.subject.succeeded();
    }

    #[inline]
    fn on_hedge(&mut self, attempt: u32, running: u32) {
        if H::ACTIVE {
            self.hook.on_hedge(attempt, running);
        }
        hedged(&self.subject, attempt, running);
    }

    #[inline]
    fn on_cancelled(&mut self, running: u32) {
        if H::ACTIVE {
            self.hook.on_cancelled(running);
        }
        cancelled(&self.subject, running);
    }

    #[inline]
    fn display_fn(&self) -> Option<FmtFn<E>> {
        self.hook.display_fn()
    }

    /// To fill `elapsed_ms`, a call reads the clock when it starts if a subscriber is
    /// interested in `WARN` events at all (one atomic load decides).
    #[inline]
    fn wants_clock(&self) -> bool {
        self.hook.wants_clock() || wants_clock()
    }
}

/// Report one failed attempt: an event (feature `tracing`, if a subscriber may want it) and
/// measurements (feature `metrics`, if a recorder is installed). Out of line, so that the
/// engine's code around a hook, the success path's included, stays as small as without it.
#[cfg(any(feature = "tracing", feature = "metrics"))]
#[cold]
#[inline(never)]
fn failed<E, H: Hook<E>, S: Subject + Status<E>>(hook: &H, subject: &S, failure: &Failure<'_, E>) {
    #[cfg(feature = "metrics")]
    if crate::meter::recording() {
        let code = subject.code(failure.error);
        subject.with_name(|name| {
            crate::meter::failed_attempt(resolve(&name), failure.class_label(), failure.next, code)
        });
    }
    #[cfg(feature = "tracing")]
    if listening() {
        let code = subject.code(failure.error);
        let shown = hook.display_fn().map(|fmt| Shown(failure.error, fmt));
        subject.with_name(|name| {
            failed_attempt(
                name.as_str(),
                failure,
                code,
                shown.as_ref().map(|s| s as &dyn fmt::Display),
            )
        });
    }
    #[cfg(not(feature = "tracing"))]
    let _ = hook;
}

/// Report a hedge that started: an event (feature `tracing`), a count (`metrics`). Out of
/// line, as [`failed`].
#[cfg(any(feature = "tracing", feature = "metrics"))]
#[cold]
#[inline(never)]
fn hedged<S: Subject>(subject: &S, attempt: u32, running: u32) {
    #[cfg(feature = "metrics")]
    if crate::meter::recording() {
        subject.with_name(|name| crate::meter::hedged(resolve(&name)));
    }
    #[cfg(feature = "tracing")]
    if listening() {
        subject.with_name(|name| {
            tracing::debug!(
                target: "retry_kit",
                { "fn" = name.as_str(), "attempt" = attempt, "running" = running },
                "attempt slow; hedging"
            );
        });
    }
    let _ = (attempt, running);
}

/// Report the attempts still running when a hedged call returned, dropped with it: an event
/// (feature `tracing`), a count as attempts (`metrics`, `outcome="cancelled"`). Out of line, as
/// [`failed`].
#[cfg(any(feature = "tracing", feature = "metrics"))]
#[cold]
#[inline(never)]
fn cancelled<S: Subject>(subject: &S, running: u32) {
    #[cfg(feature = "metrics")]
    if crate::meter::recording() {
        subject.with_name(|name| crate::meter::cancelled(resolve(&name), running));
    }
    #[cfg(feature = "tracing")]
    if listening() {
        subject.with_name(|name| {
            tracing::debug!(
                target: "retry_kit",
                { "fn" = name.as_str(), "cancelled" = running },
                "call answered; attempts still running cancelled"
            );
        });
    }
}

/// Report a call the breaker refused before its first attempt (there is no `Failure` for the
/// hook): a `WARN` event with the `tracing` feature, a `circuit_open` stop with `metrics`.
#[cfg(any(feature = "tracing", feature = "metrics"))]
#[cold]
pub fn refused<H, S: Subject>(observer: &mut Observer<H, S>) {
    observer.subject.with_name(|name| {
        #[cfg(feature = "metrics")]
        crate::meter::refused(resolve(&name));
        #[cfg(feature = "tracing")]
        tracing::warn!(
            target: "retry_kit",
            { "fn" = name.as_str(), "reason" = "circuit_open" },
            "call refused by an open circuit breaker; no attempt made"
        );
    });
}

/// Report a call the breaker refused before its first attempt: nothing without the `tracing`
/// and `metrics` features.
#[cfg(not(any(feature = "tracing", feature = "metrics")))]
#[inline(always)]
pub fn refused<H>(hook: &mut H) {
    let _ = hook;
}

/// Whether a call should read the clock at its start so that events can report `elapsed_ms`:
/// with the `tracing` feature, when a subscriber is interested in `WARN` events at all (one
/// atomic load decides); without it, never.
#[inline]
pub fn wants_clock() -> bool {
    #[cfg(feature = "tracing")]
    {
        tracing::level_filters::LevelFilter::current() >= tracing::Level::WARN
    }
    #[cfg(not(feature = "tracing"))]
    {
        false
    }
}

/// Whether any subscriber may want the crate's events (the most verbose level any of them
/// enables is not `OFF`: one atomic load), so that a call with nobody listening writes no
/// name and builds no fields for them.
#[cfg(feature = "tracing")]
#[inline]
fn listening() -> bool {
    tracing::level_filters::LevelFilter::current() != tracing::level_filters::LevelFilter::OFF
}

/// Shows an error through a [`FmtFn`].
#[cfg(feature = "tracing")]
struct Shown<'e, E: ?Sized>(&'e E, FmtFn<E>);

#[cfg(feature = "tracing")]
impl<E: ?Sized> fmt::Display for Shown<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (self.1)(self.0, f)
    }
}

/// Emit the event for one failed attempt.
#[cfg(feature = "tracing")]
#[cold]
fn failed_attempt<E>(
    function: &str,
    failure: &Failure<'_, E>,
    code: Option<&'static str>,
    error: Option<&dyn fmt::Display>,
) {
    use tracing::field::display;
    let elapsed_ms = millis(failure.elapsed);
    let error = error.map(display);
    let class = failure.class_label();
    match failure.next {
        // `fn` is a keyword, so the field names are written in the braced, quoted form.
        Next::Retry(delay) => tracing::debug!(
            target: "retry_kit",
            {
                "fn" = function,
                "attempt" = failure.attempt,
                "class" = class,
                "code" = code,
                "next" = "retry",
                "delay_ms" = millis(delay),
                "elapsed_ms" = elapsed_ms,
                "error" = error,
            },
            "attempt failed; retrying"
        ),
        Next::Wait { running } => tracing::debug!(
            target: "retry_kit",
            {
                "fn" = function,
                "attempt" = failure.attempt,
                "class" = class,
                "code" = code,
                "next" = "wait",
                "running" = running,
                "elapsed_ms" = elapsed_ms,
                "error" = error,
            },
            "attempt failed; waiting for the hedged attempts still running"
        ),
        Next::Stop(reason) => tracing::warn!(
            target: "retry_kit",
            {
                "fn" = function,
                "attempt" = failure.attempt,
                "class" = class,
                "code" = code,
                "next" = "stop",
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
