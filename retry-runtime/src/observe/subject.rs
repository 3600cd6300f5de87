//! [`Subject`]: what a call's reports name it by (the `fn` label and field), and what they say of
//! a failed attempt beyond its class (the status code, [`Status`]).
//!
//! `#[retryable]` functions and builders are named once, by a `&'static str` ([`Named`]). The
//! layers name each request by what a dashboard needs, which is known only per request: the
//! HTTP layers by its `host:port`, the gRPC layer by its method's path. Their subjects borrow
//! the request and write the name only when a report needs it, so that a request nobody
//! observes pays nothing for it.

use super::Meter;
use crate::run::Hook;
use crate::run::plumbing::FmtFn;
use crate::stop::Failure;

/// A call's name, as a report needs it.
#[derive(Clone, Copy, Debug)]
pub enum Name<'a> {
    /// A name in the binary (a builder's, a named layer's).
    Static(&'static str),
    /// A `#[retryable]` function's, with its kept measurement handles.
    Kept(&'static Meter),
    /// Written for this call (a request's `host:port`, a gRPC method's path).
    Text(&'a str),
}

impl Name<'_> {
    /// The name as text.
    pub fn as_str(&self) -> &str {
        match self {
            Name::Static(name) => name,
            Name::Kept(meter) => meter.name(),
            Name::Text(text) => text,
        }
    }
}

/// What names a call in its `tracing` events and measurements.
pub trait Subject {
    /// Call `f` with the call's name, written now if it must be.
    fn with_name<R>(&self, f: impl FnOnce(Name<'_>) -> R) -> R;

    /// Count a successful attempt (feature `metrics`): by default only while a recorder is
    /// installed, so that nothing is named for the facade's no-op one.
    #[cfg(feature = "metrics")]
    #[inline]
    fn succeeded(&self) {
        if crate::meter::recording() {
            self.with_name(|name| crate::meter::succeeded(super::resolve(&name)));
        }
    }
}

/// The status code of a failed attempt of error type `E`, where it has one: the `code` label and
/// field, and the attempt span's `error.type`.
pub trait Status<E> {
    /// The code as text (`"503"`, `"UNAVAILABLE"`), or `None`.
    #[inline]
    fn code(&self, error: &E) -> Option<&'static str> {
        let _ = error;
        None
    }
}

/// A name given once: a `#[retryable]` function's path, a builder's or a layer's `.named(..)`.
#[derive(Clone, Copy, Debug)]
pub struct Named {
    name: &'static str,
    /// Its kept measurement handles, if it has them.
    #[cfg(feature = "metrics")]
    meter: Option<&'static Meter>,
}

impl Named {
    /// The name `name`, given at run time (its measurement handles found by its address, see
    /// [`observed`](super::observed)).
    #[inline]
    pub fn new(name: &'static str) -> Self {
        Named {
            name,
            #[cfg(feature = "metrics")]
            meter: super::meter_named(name),
        }
    }

    /// A `#[retryable]` function's name, with its handles.
    #[inline]
    pub const fn kept(meter: &'static Meter) -> Self {
        Named {
            name: meter.name(),
            #[cfg(feature = "metrics")]
            meter: Some(meter),
        }
    }
}

impl Subject for Named {
    #[inline]
    fn with_name<R>(&self, f: impl FnOnce(Name<'_>) -> R) -> R {
        #[cfg(feature = "metrics")]
        if let Some(meter) = self.meter {
            return f(Name::Kept(meter));
        }
        f(Name::Static(self.name))
    }

    #[cfg(feature = "metrics")]
    #[inline]
    fn succeeded(&self) {
        match self.meter {
            Some(meter) => meter.succeeded(),
            None => crate::meter::succeeded(super::resolve(&Name::Static(self.name))),
        }
    }
}

/// A function or builder has no status codes: its errors are the user's.
impl<E> Status<E> for Named {}

/// A hook lent to a report for one step: what a hand-written future (a layer's), which keeps
/// its hook across polls, hands the engine together with the request that names it.
#[derive(Debug)]
pub struct Borrowed<'h, H>(pub &'h mut H);

impl<E, H: Hook<E>> Hook<E> for Borrowed<'_, H> {
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
        self.0.display_fn()
    }
    #[inline]
    fn wants_clock(&self) -> bool {
        self.0.wants_clock()
    }
}
