//! gRFC A96's per-call retry metrics, recorded by the gRPC layer at the end of each call
//! (feature `metrics`; the names and labels are in [`crate::meter`]'s docs): a tally of the
//! call's retries, transparent retries, hedges and waits, kept beside the layer's hook.

use super::failure::GrpcFailure;
#[cfg(feature = "metrics")]
use super::failure::Kind;
use crate::run::Hook;
use crate::run::plumbing::FmtFn;
use crate::stop::Failure;
#[cfg(feature = "metrics")]
use crate::stop::Next;
#[cfg(feature = "metrics")]
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
#[cfg(feature = "metrics")]
use std::time::Duration;

/// One call's tally (nothing without the `metrics` feature). Atomics, so that the call's future
/// stays `Send` while its hook holds a reference: only failures and hedges touch them.
#[derive(Debug, Default)]
pub(crate) struct CallTally {
    /// The method's plan hedges: every attempt after the first is a hedge.
    #[cfg(feature = "metrics")]
    hedged: bool,
    #[cfg(feature = "metrics")]
    retries: AtomicU32,
    #[cfg(feature = "metrics")]
    transparent: AtomicU32,
    #[cfg(feature = "metrics")]
    hedges: AtomicU32,
    /// Nanoseconds waited with no attempt running.
    #[cfg(feature = "metrics")]
    delay: AtomicU64,
}

impl CallTally {
    /// The tally of a call whose method hedges (`hedged`) or retries.
    #[inline]
    pub(crate) fn new(hedged: bool) -> Self {
        #[cfg(feature = "metrics")]
        {
            CallTally {
                hedged,
                ..CallTally::default()
            }
        }
        #[cfg(not(feature = "metrics"))]
        {
            let _ = hedged;
            CallTally {}
        }
    }

    /// `hook`, with this tally kept beside it.
    #[inline]
    pub(crate) fn beside<H>(&self, hook: H) -> Tallied<'_, H> {
        let _ = self;
        Tallied {
            hook,
            #[cfg(feature = "metrics")]
            tally: self,
            #[cfg(not(feature = "metrics"))]
            tally: std::marker::PhantomData,
        }
    }

    /// Record the call's histograms (while a recorder is installed), labelled with its
    /// method (`/pkg.Service/Method`) and its server (`target`, written only now).
    #[inline]
    pub(crate) fn record(&self, path: &str, target: impl FnOnce() -> Option<String>) {
        #[cfg(feature = "metrics")]
        {
            let (retries, transparent, hedges) = (
                self.retries.load(Ordering::Relaxed),
                self.transparent.load(Ordering::Relaxed),
                self.hedges.load(Ordering::Relaxed),
            );
            if retries == 0 && transparent == 0 && hedges == 0 {
                return;
            }
            if crate::meter::recording() {
                let method = path.strip_prefix('/').unwrap_or(path);
                let target = target().unwrap_or_else(|| "other".to_owned());
                let delay = Duration::from_nanos(self.delay.load(Ordering::Relaxed));
                crate::meter::grpc_call(method, &target, [retries, transparent, hedges], delay);
            }
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (path, target);
    }
}

/// A hook with a [`CallTally`] beside it: every failure and hedge is tallied, then handed on.
#[derive(Debug)]
pub(crate) struct Tallied<'t, H> {
    hook: H,
    #[cfg(feature = "metrics")]
    tally: &'t CallTally,
    #[cfg(not(feature = "metrics"))]
    tally: std::marker::PhantomData<&'t CallTally>,
}

impl<H: Hook<GrpcFailure>> Hook<GrpcFailure> for Tallied<'_, H> {
    const ACTIVE: bool = H::ACTIVE || cfg!(feature = "metrics");

    #[inline]
    fn on_failure(&mut self, failure: &Failure<'_, GrpcFailure>) {
        #[cfg(feature = "metrics")]
        {
            let tally = self.tally;
            let next_attempt = match failure.next {
                Next::Retry(delay) => {
                    let nanos = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
                    tally.delay.fetch_add(nanos, Ordering::Relaxed);
                    true
                }
                _ => false,
            };
            if next_attempt {
                let counter = if tally.hedged {
                    &tally.hedges
                } else if failure.error.kind() == Kind::NotSent {
                    &tally.transparent
                } else {
                    &tally.retries
                };
                counter.fetch_add(1, Ordering::Relaxed);
            }
        }
        if H::ACTIVE {
            self.hook.on_failure(failure);
        }
    }

    #[inline]
    fn on_success(&mut self, attempt: u32) {
        if H::ACTIVE {
            self.hook.on_success(attempt);
        }
    }

    #[inline]
    fn on_hedge(&mut self, attempt: u32, running: u32) {
        #[cfg(feature = "metrics")]
        self.tally.hedges.fetch_add(1, Ordering::Relaxed);
        if H::ACTIVE {
            self.hook.on_hedge(attempt, running);
        }
    }

    #[inline]
    fn on_cancelled(&mut self, running: u32) {
        if H::ACTIVE {
            self.hook.on_cancelled(running);
        }
    }

    #[inline]
    fn display_fn(&self) -> Option<FmtFn<GrpcFailure>> {
        self.hook.display_fn()
    }

    #[inline]
    fn wants_clock(&self) -> bool {
        self.hook.wants_clock()
    }
}
