//! Retry inside a tower stack (feature `tower`): [`RetryLayer`] wraps any
//! `Service<Req>` whose requests can be cloned, and retries its calls with the crate's engine,
//! under the same policy, classification, protection and hooks as `#[retryable]` and
//! [`crate::Retry`]. With the `http` feature, [`HttpRetryLayer`] does the same for HTTP client
//! services with HTTP's rules: the status table, `Retry-After`, idempotence by method or
//! `Idempotency-Key`, and request bodies replayed through [`ReplayBody`].
//!
//! ```
//! # extern crate retry_runtime as retry_kit;
//! use retry_kit::tower::RetryLayer;
//! use retry_kit::{CircuitBreaker, RetryPolicy};
//! use std::{io, time::Duration};
//! use tower_layer::Layer;
//! use tower_service::Service;
//!
//! static BACKEND: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(10));
//!
//! // A service that refuses its first two connections.
//! #[derive(Clone)]
//! struct Flaky(std::sync::Arc<std::sync::atomic::AtomicU32>);
//!
//! impl Service<String> for Flaky {
//!     type Response = usize;
//!     type Error = io::Error;
//!     type Future = std::future::Ready<io::Result<usize>>;
//!     fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<io::Result<()>> {
//!         std::task::Poll::Ready(Ok(()))
//!     }
//!     fn call(&mut self, req: String) -> Self::Future {
//!         let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
//!         std::future::ready(if n < 2 {
//!             Err(io::ErrorKind::ConnectionRefused.into())
//!         } else {
//!             Ok(req.len())
//!         })
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let layer = RetryLayer::new(RetryPolicy::fixed(Duration::from_millis(100)).attempts(3))
//!     .circuit(&BACKEND);
//! let mut service = layer.layer(Flaky(Default::default()));
//! assert_eq!(service.call("hello".to_owned()).await.unwrap(), 5);
//! # }
//! ```
//!
//! # Under faults
//!
//! What [`HttpRetryLayer`] over hyper-util's legacy `Client` does when a server misbehaves as
//! networks do: the fault matrix of `tests/integration/tests/fault_matrix.rs`, which runs every
//! cell against a scripted HTTP/1.1 server on loopback with
//! `RetryPolicy::fixed(Duration::from_millis(10)).attempts(3)`, `.body_limit(16)` and
//! `.attempt_timeout(Duration::from_secs(1))`. The keyed POST carries its own `Idempotency-Key`
//! header (`.idempotency_keys()` is off).
//!
//! | server does · request is | GET | PUT | POST | POST + `Idempotency-Key` | PUT, 40 B (bound 16 B) | streamed PUT | PUT, failing source |
//! |---|---|---|---|---|---|---|---|
//! | answer | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 0 → source's error (F) |
//! | 503 | 3 / 3 → 503 (T) | 3 / 3 → 503 (T) | 3 / 3 → 503 (T) | 3 / 3 → 503 (T) | 1 / 1 → 503 (B) | 3 / 3 → 503 (S) | 1 / 0 → source's error (F) |
//! | reset before reading the body | 3 / 3 → error (I) | 3 / 0 → error (I) | 1 / 0 → error (P) | 3 / 0 → error (I) | 1 / 0 → error (B) | 3 / 0 → error (S) | 1 / 0 → source's error (F) |
//! | reset after reading the body | 3 / 3 → error (I) | 3 / 3 → error (I) | 1 / 1 → error (P) | 3 / 3 → error (I) | 1 / 1 → error (B) | 3 / 3 → error (S) | 1 / 0 → source's error (F) |
//! | half a head, then reset | 3 / 3 → error (I) | 3 / 3 → error (I) | 1 / 1 → error (P) | 3 / 3 → error (I) | 1 / 1 → error (B) | 3 / 3 → error (S) | 1 / 0 → source's error (F) |
//! | close without answering | 3 / 3 → error (I) | 3 / 3 → error (I) | 1 / 1 → error (P) | 3 / 3 → error (I) | 1 / 1 → error (B) | 3 / 3 → error (S) | 1 / 0 → source's error (F) |
//! | hang past `attempt_timeout` | 3 / 3 → error (I) | 3 / 3 → error (I) | 1 / 1 → error (P) | 3 / 3 → error (I) | 1 / 1 → error (B) | 3 / 3 → error (S) | 1 / 0 → source's error (F) |
//! | answer before reading the body | 1 / 1 → 200 (E) | 1 / 0 → 200 (E) | 1 / 0 → 200 (E) | 1 / 0 → 200 (E) | 1 / 0 → 200 (E) | 1 / 0 → 200 (E) | 1 / 0 → source's error (F) |
//! | slow body | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 0 → source's error (F) |
//! | refused (nothing listening) | 3 / 0 → error (R) | 3 / 0 → error (R) | 3 / 0 → error (R) | 3 / 0 → error (R) | 3 / 0 → error (R) | 3 / 0 → error (R) | 3 / 0 → error (R) |
//!
//! Each cell: attempts made / requests the server received complete → what the caller gets (the
//! rule). Every request the server received complete carried the original body byte for byte,
//! framed as the original on every attempt (`content-length`, or chunked for a stream).
//!
//! - (A) an answer ends the call: sent once, and the caller reads the whole answer, also one that
//!   arrives in slow pieces.
//! - (E) an answer sent before the body was read is the answer: sent once; the server read the head
//!   only (the whole request for a GET).
//! - (T) a 503 is transient (not processed): retried for every request that can be sent again, 3
//!   attempts; the caller gets the last 503.
//! - (I) a reset, a close, half an answer or a timeout after the request may have been written is
//!   an unknown outcome: retried (3 attempts) for GET, PUT and a POST with an `Idempotency-Key`;
//!   the caller gets the error.
//! - (P) the same unknown outcome on a plain POST: sent exactly once; the caller gets the error.
//! - (R) a refused connection provably sent nothing: transient for every method and every body
//!   (none was read yet), 3 attempts, nothing received.
//! - (B) a body over the replay bound (`body_limit(16)`, 40 bytes sent) is sent once and never
//!   retried, whatever happens to it.
//! - (S) a streamed body (unknown length) within the bound replays whole, chunked on every attempt,
//!   and is retried as a PUT is.
//! - (F) a body whose source fails (`amount=10`, then an `io::Error`) is never replayed: the call
//!   fails with the source's error, and the server never receives a complete request.

#[cfg(feature = "http")]
mod http_retry;
#[cfg(feature = "http")]
mod replay;
mod service_error;

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use crate::per_request::{BudgetChoice, BudgetForEachRequest, Chosen, ForEachRequest};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use http_retry::{
    DEFAULT_BODY_LIMIT, HttpFailure, HttpRetryFuture, HttpRetryLayer, HttpRetryService,
    is_idempotent,
};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use replay::{BodyNotReplayable, BoxError, ReplayBody};
// The gRPC layer reads transport failures as the HTTP layer does.
#[cfg(feature = "tonic")]
pub(crate) use http_retry::chain_class;

pub use service_error::{ProtectionOf, TimeoutOf};

use crate::builder::Retry;
use crate::builder::begin;
use crate::clock;
use crate::error::{CircuitOpen, TimedOut};
use crate::policy::RetryPolicy;
use crate::policy_cell::{PolicySource, SharedCell};
use crate::run::equip::{CallState, IntoProtections, WithBudget, WithCircuit};
use crate::run::plumbing::{HoldsCircuitOpen, HoldsTimedOut};
use crate::run::protection::Unprotected;
use crate::run::slots::{Static, StaticBudget};
use crate::run::{AttemptTimeout, NoTimeout};
use crate::run::{ByTrait, Classifier};
use crate::run::{Hook, NoHook};
use crate::{CircuitBreaker, observe};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tower_layer::Layer;
use tower_service::Service;

/// What a [`RetryLayer`]'s builder starts from: a policy it does not own yet.
static NO_POLICY: RetryPolicy = RetryPolicy::new();

/// A tower [`Layer`] that retries the calls of the service it wraps: the requests are cloned
/// for each attempt, errors classified by `Classify` (or `.classify(f)`), and delays, deadlines,
/// the breaker, the budget, attempt timeouts and `on_failure` work as everywhere in the crate.
///
/// The breaker and budget are `&'static`, shared by every clone of the service.
#[derive(Clone, Debug)]
pub struct RetryLayer<C = ByTrait, H = NoHook, S = Unprotected, T = NoTimeout> {
    /// The layer's policy, or a cell read when each call starts.
    policy: PolicySource,
    /// The builder of every call, its policy reference a placeholder until the call.
    retry: Retry<'static, C, H, S, T>,
}

impl RetryLayer {
    /// Retry by `policy`, classifying errors through their `Classify` impl.
    pub const fn new(policy: RetryPolicy) -> Self {
        RetryLayer {
            policy: PolicySource::Own(policy),
            retry: Retry::new(&NO_POLICY),
        }
    }

    /// Retry each call by the policy `cell` holds when the call starts (a policy replaced at
    /// run time, see [`PolicyCell`](crate::PolicyCell)).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::tower::RetryLayer;
    /// use retry_kit::{PolicyCell, RetryPolicy};
    ///
    /// static POLICY: PolicyCell = PolicyCell::new(RetryPolicy::new().attempts(3));
    /// let layer = RetryLayer::from_cell(&POLICY);
    /// // A reload reaches every service the layer made, from their next call on.
    /// POLICY.set(RetryPolicy::new().attempts(5));
    /// # let _ = layer;
    /// ```
    pub fn from_cell(cell: impl Into<SharedCell>) -> Self {
        RetryLayer {
            policy: PolicySource::Cell(cell.into()),
            retry: Retry::new(&NO_POLICY),
        }
    }
}

impl<C, H, S, T> RetryLayer<C, H, S, T> {
    /// Classify errors with a function (or anything [`Classifier`]) instead of `Classify`.
    pub fn classify<C2>(self, classifier: C2) -> RetryLayer<C2, H, S, T> {
        RetryLayer {
            policy: self.policy,
            retry: self.retry.classify(classifier),
        }
    }

    /// Call `hook` with every failed attempt's [`Failure`](crate::Failure) record.
    pub fn on_failure<H2>(self, hook: H2) -> RetryLayer<C, H2, S, T> {
        RetryLayer {
            policy: self.policy,
            retry: self.retry.on_failure(hook),
        }
    }

    /// Consult `breaker` before every attempt; a refused first attempt returns
    /// `Err(E::from(CircuitOpen))`, so the service's error type `E` must implement
    /// `From<CircuitOpen>` ([`HoldsCircuitOpen`]).
    pub fn circuit(
        self,
        breaker: &'static CircuitBreaker,
    ) -> RetryLayer<C, H, WithCircuit<S, Static<CircuitBreaker>>, T>
    where
        S: IntoProtections,
    {
        RetryLayer {
            policy: self.policy,
            retry: (self.retry).map_protection(|s| s.into_protections().circuit(Static(breaker))),
        }
    }

    /// Charge failures to `budget` and ask it before every retry: a `&'static`
    /// [`RetryBudget`](crate::RetryBudget), a fleet budget (feature `redis`), or an
    /// [`AdaptiveThrottle`](crate::AdaptiveThrottle), which refuses first attempts too
    /// (`E::from(CircuitOpen)`, so the service's error type must implement
    /// `From<CircuitOpen>`).
    pub fn budget<B: StaticBudget + ?Sized>(
        self,
        budget: &'static B,
    ) -> RetryLayer<C, H, WithBudget<S, B::Slot>, T>
    where
        S: IntoProtections,
    {
        RetryLayer {
            policy: self.policy,
            retry: (self.retry)
                .map_protection(|s| s.into_protections().budget(budget.static_slot())),
        }
    }

    /// Cancel each attempt after `limit`: its error is `E::from(TimedOut)`, idempotent-only, so
    /// the service's error type `E` must implement `From<TimedOut>` ([`HoldsTimedOut`]).
    pub fn attempt_timeout(self, limit: Duration) -> RetryLayer<C, H, S, AttemptTimeout> {
        RetryLayer {
            policy: self.policy,
            retry: self.retry.attempt_timeout(limit),
        }
    }

    /// The name `tracing` events give in their `fn` field (default `"closure"`).
    pub fn named(self, name: &'static str) -> Self {
        RetryLayer {
            policy: self.policy,
            retry: self.retry.named(name),
        }
    }
}

impl<Svc, C: Clone, H: Clone, S: Clone, T: Clone> Layer<Svc> for RetryLayer<C, H, S, T> {
    type Service = RetryService<Svc, C, H, S, T>;

    fn layer(&self, inner: Svc) -> Self::Service {
        RetryService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service a [`RetryLayer`] makes. `Clone` when the inner service is; its futures are
/// `Send` when the inner service's are.
///
/// Its error type is the inner service's, which must hold what the layer adds: a
/// [`TimedOut`] with `.attempt_timeout(..)` ([`HoldsTimedOut`]), a [`CircuitOpen`] with
/// `.circuit(..)` ([`HoldsCircuitOpen`]).
#[derive(Clone, Debug)]
pub struct RetryService<Svc, C = ByTrait, H = NoHook, S = Unprotected, T = NoTimeout> {
    inner: Svc,
    layer: RetryLayer<C, H, S, T>,
}

/// The future of a [`RetryService`]'s calls.
type ResponseFuture<R, E> = Pin<Box<dyn Future<Output = Result<R, E>> + Send>>;

// `call` is an inherent method too, with the `Service` impl's bounds written out again: a
// method call (`service.call(req)`) finds it first, and rustc reports an unmet bound of a
// method at the call, with that bound's own message ("a `RetryLayer` with
// `.attempt_timeout(..)` needs `impl From<TimedOut>` for the service's error type `Busy`").
// Through the impl alone it said "the method `call` exists for struct `RetryService<..>`, but
// its trait bounds were not satisfied", naming every parameter of the service's type.
impl<Svc, C, H, S, T> RetryService<Svc, C, H, S, T> {
    /// [`Service::call`], also callable without the trait in scope: send `req` (the service
    /// must be ready, as for `Service::call`) and retry it by the layer's policy.
    pub fn call<Req>(&mut self, req: Req) -> ResponseFuture<Svc::Response, Svc::Error>
    where
        Svc: Service<Req> + Clone + Send + 'static,
        <T as TimeoutOf<Svc::Error>>::Holder: HoldsTimedOut,
        <S as ProtectionOf<Svc::Error>>::Holder: HoldsCircuitOpen,
        Svc::Future: Send,
        Svc::Response: Send,
        Svc::Error: Send,
        Req: Clone + Send + 'static,
        C: Classifier<Svc::Error> + Clone + Send + Sync + 'static,
        H: Hook<Svc::Error> + Clone + Send + 'static,
        observe::Observed<H>: Hook<Svc::Error> + Send,
        S: ProtectionOf<Svc::Error> + Clone + Send + Sync + 'static,
        for<'p> <S::Equipped as CallState<'p>>::State: Send,
        T: TimeoutOf<Svc::Error> + Clone + Send + 'static,
    {
        // The service driven to readiness serves the first attempt; a clone takes its place
        // for the next call, and is made ready again before each retry.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let RetryLayer { policy, retry } = self.layer.clone();
        let policy = policy.current();
        Box::pin(async move {
            let timeout = &retry.timeout.limit(<_ as From<TimedOut>>::from);
            let protection = retry.protection.equipped(<_ as From<CircuitOpen>>::from);
            let retry = retry.with_policy(&policy).with_protection(protection);
            let sleep = clock::tokio_sleep;
            begin!(retry, Result<Svc::Response, Svc::Error> => call, classifier, hook else return);
            let mut ready = true;
            crate::retry_async!(call.after(&classifier, &mut hook) <-
                {
                    let out = call.attempt_timed(timeout, attempt(&mut inner, req.clone(), &mut ready), sleep).await;
                    call.settle::<Result<Svc::Response, Svc::Error>, _>(timeout, out)
                },
                sleep: sleep)
        })
    }
}

impl<Svc, Req, C, H, S, T> Service<Req> for RetryService<Svc, C, H, S, T>
where
    Svc: Service<Req> + Clone + Send + 'static,
    <T as TimeoutOf<Svc::Error>>::Holder: HoldsTimedOut,
    <S as ProtectionOf<Svc::Error>>::Holder: HoldsCircuitOpen,
    Svc::Future: Send,
    Svc::Response: Send,
    Svc::Error: Send,
    Req: Clone + Send + 'static,
    C: Classifier<Svc::Error> + Clone + Send + Sync + 'static,
    H: Hook<Svc::Error> + Clone + Send + 'static,
    observe::Observed<H>: Hook<Svc::Error> + Send,
    S: ProtectionOf<Svc::Error> + Clone + Send + Sync + 'static,
    for<'p> <S::Equipped as CallState<'p>>::State: Send,
    T: TimeoutOf<Svc::Error> + Clone + Send + 'static,
{
    type Response = Svc::Response;
    type Error = Svc::Error;
    type Future = ResponseFuture<Svc::Response, Svc::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        RetryService::call(self, req)
    }
}

/// One attempt with its own copy of the request: make the service ready (the first attempt's
/// already is), then call it.
async fn attempt<Svc: Service<Req>, Req>(
    inner: &mut Svc,
    req: Req,
    ready: &mut bool,
) -> Result<Svc::Response, Svc::Error> {
    if !std::mem::take(ready) {
        std::future::poll_fn(|cx| inner.poll_ready(cx)).await?;
    }
    inner.call(req).await
}
