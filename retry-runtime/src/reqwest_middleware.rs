//! Retry inside a reqwest client (feature `reqwest-middleware`): [`RetryMiddleware`] for
//! [`reqwest_middleware::ClientWithMiddleware`], over the crate's one engine.
//!
//! What it retries, and when:
//!
//! - a response whose status the [`http`](crate::http) table calls retryable (408, 429, 503
//!   transient; 500, 502, 504 idempotent-only), waiting at least its `Retry-After`; any other
//!   response is returned as it is;
//! - a transport error, by [`Classify for reqwest::Error`](crate::reqwest) (connect failures
//!   transient, timeouts idempotent-only); errors of other middleware are permanent;
//! - idempotent-only outcomes only for idempotent methods (RFC 9110: GET, HEAD, OPTIONS, TRACE,
//!   PUT, DELETE) or requests carrying an `Idempotency-Key` header (or when the policy itself is
//!   declared idempotent);
//! - a request whose body `try_clone()` refuses (a stream) is sent once.
//!
//! When the loop stops on a response, that last response is returned (`Ok`), as without the
//! middleware; when it stops on an error, that error.
//!
//! # Under faults
//!
//! What [`RetryMiddleware`] in a `reqwest_middleware` client does when a server misbehaves as
//! networks do: the fault matrix of `tests/integration/tests/fault_matrix.rs`, which runs every
//! cell against a scripted HTTP/1.1 server on loopback with
//! `RetryPolicy::fixed(Duration::from_millis(10)).attempts(3)` and
//! `.attempt_timeout(Duration::from_secs(1))`. Streamed bodies are sent with
//! `reqwest::Body::wrap_stream`; the keyed POST carries its own `Idempotency-Key` header
//! (`.idempotency_keys()` is off).
//!
//! | server does · request is | GET | PUT | POST | POST + `Idempotency-Key` | PUT, 64 KiB + 1 B `Bytes` | streamed PUT | PUT, failing source |
//! |---|---|---|---|---|---|---|---|
//! | answer | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 0 → source's error (F) |
//! | 503 | 3 / 3 → 503 (T) | 3 / 3 → 503 (T) | 3 / 3 → 503 (T) | 3 / 3 → 503 (T) | 3 / 3 → 503 (N) | 1 / 1 → 503 (O) | 1 / 0 → source's error (F) |
//! | reset before reading the body | 3 / 3 → error (I) | 3 / 0 → error (I) | 1 / 0 → error (P) | 3 / 0 → error (I) | 3 / 0 → error (N) | 1 / 0 → error (O) | 1 / 0 → source's error (F) |
//! | reset after reading the body | 3 / 3 → error (I) | 3 / 3 → error (I) | 1 / 1 → error (P) | 3 / 3 → error (I) | 3 / 3 → error (N) | 1 / 1 → error (O) | 1 / 0 → source's error (F) |
//! | half a head, then reset | 3 / 3 → error (I) | 3 / 3 → error (I) | 1 / 1 → error (P) | 3 / 3 → error (I) | 3 / 3 → error (N) | 1 / 1 → error (O) | 1 / 0 → source's error (F) |
//! | close without answering | 3 / 3 → error (I) | 3 / 3 → error (I) | 1 / 1 → error (P) | 3 / 3 → error (I) | 3 / 3 → error (N) | 1 / 1 → error (O) | 1 / 0 → source's error (F) |
//! | hang past `attempt_timeout` | 3 / 3 → error (I) | 3 / 3 → error (I) | 1 / 1 → error (P) | 3 / 3 → error (I) | 3 / 3 → error (N) | 1 / 1 → error (O) | 1 / 0 → source's error (F) |
//! | answer before reading the body | 1 / 1 → 200 (E) | 1 / 0 → 200 (E) | 1 / 0 → 200 (E) | 1 / 0 → 200 (E) | 1 / 0 → 200 (E) | 1 / 0 → 200 (E) | 1 / 0 → source's error (F) |
//! | slow body | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 1 → 200 (A) | 1 / 0 → source's error (F) |
//! | refused (nothing listening) | 3 / 0 → error (R) | 3 / 0 → error (R) | 3 / 0 → error (R) | 3 / 0 → error (R) | 3 / 0 → error (R) | 1 / 0 → error (O) | 1 / 0 → error (O) |
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
//! - (N) reqwest has no replay bound: `try_clone()` copies a `Bytes` body of any size, so it is
//!   retried as a PUT is.
//! - (O) `try_clone()` refuses a streamed body: sent once (not retried, not even when refused), its
//!   one attempt still ended by `attempt_timeout`.
//! - (F) a body whose source fails (`amount=10`, then an `io::Error`) is never replayed: the call
//!   fails with the source's error, and the server never receives a complete request.

use crate::authority::Authority;
use crate::breaker::CircuitBreaker;
use crate::class::{Classify, ErrorClass};
use crate::clock;
use crate::error::{CircuitOpen, TimedOut};
use crate::observe::{self, Borrowed};
use crate::per_request::ByAuthority;
use crate::per_request::HttpSettings;
pub use crate::per_request::{BudgetChoice, BudgetForEachRequest, Chosen, ForEachRequest};
use crate::policy::RetryPolicy;
use crate::policy_cell::{PolicySource, SharedCell};
use crate::run::Classifier;
use crate::run::equip::{Equip, Protections};
use crate::run::plumbing::{Displayed, TimeoutSlot};
use crate::run::{AttemptTimeout, NoTimeout};
use crate::run::{Hook, NoHook};
use ::http::Extensions;
use ::reqwest::{Request, Response};
use ::reqwest_middleware::{Middleware, Next};
use std::fmt;
use std::time::Duration;

/// A failed attempt as the loop sees it: a response with a retryable status, or an error.
#[derive(Debug)]
pub enum Attempted {
    /// The server answered with a retryable status (boxed: a response is large, and the loop
    /// keeps its outcome on the stack).
    Status(Box<Response>),
    /// The request did not get an answer.
    Error(::reqwest_middleware::Error),
}

impl Classify for Attempted {
    fn class(&self) -> ErrorClass {
        match self {
            Attempted::Status(response) => answer(response).0,
            Attempted::Error(::reqwest_middleware::Error::Reqwest(e)) => e.class(),
            Attempted::Error(::reqwest_middleware::Error::Middleware(_)) => ErrorClass::Permanent,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Attempted::Status(response) => answer(response).1,
            Attempted::Error(::reqwest_middleware::Error::Reqwest(e)) => Classify::retry_after(e),
            Attempted::Error(_) => None,
        }
    }
}

impl Attempted {
    /// Say in the attempt's span that it failed: `error.type` is the status, or the class of
    /// an error without one.
    fn in_span(&self, span: &observe::AttemptSpan) {
        let (error_type, status) = match self {
            Attempted::Status(response) => (
                crate::http::status_text(response.status()),
                Some(response.status().as_u16()),
            ),
            Attempted::Error(_) => (self.class().as_str(), None),
        };
        observe::span::failed(span, error_type, status);
    }
}

/// An answer's class and wait, by [`classify_response`](crate::http::classify_response).
fn answer(response: &Response) -> (ErrorClass, Option<Duration>) {
    crate::http::classify_response(response.status(), response.headers())
}

impl fmt::Display for Attempted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Attempted::Status(response) => write!(f, "HTTP status {}", response.status()),
            Attempted::Error(e) => e.fmt(f),
        }
    }
}

/// A failed attempt's status code, where the server answered: the `code` label and field.
impl<T> observe::Status<Attempted> for ByAuthority<'_, T> {
    #[inline]
    fn code(&self, attempted: &Attempted) -> Option<&'static str> {
        match attempted {
            Attempted::Status(response) => Some(crate::http::status_text(response.status())),
            Attempted::Error(_) => None,
        }
    }
}

impl From<CircuitOpen> for Attempted {
    fn from(open: CircuitOpen) -> Self {
        Attempted::Error(::reqwest_middleware::Error::middleware(open))
    }
}

impl From<TimedOut> for Attempted {
    fn from(timed_out: TimedOut) -> Self {
        Attempted::Error(::reqwest_middleware::Error::middleware(timed_out))
    }
}

/// A reqwest middleware that retries requests by a policy, the HTTP status table and the
/// request's idempotence, with the same engine, breaker, budget, attempt timeout and hooks as
/// `#[retryable]`.
///
/// `.circuit(..)` and `.budget(..)` take a `&'static` breaker or budget shared by every request,
/// or a `&'static PerKey<..>`: then each request uses the one of its authority (host and port),
/// so one failing host opens its own breaker, not everyone's.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::reqwest_middleware::RetryMiddleware;
/// use retry_kit::{CircuitBreaker, PerKey, RetryBudget, RetryPolicy};
/// use std::time::Duration;
///
/// static HOSTS: PerKey<CircuitBreaker> = PerKey::new(CircuitBreaker::new(5, Duration::from_secs(30)));
/// static RETRIES: RetryBudget = RetryBudget::new(100, 0.1);
///
/// let policy = RetryPolicy::exponential(Duration::from_millis(100)).attempts(4);
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
///     .with(RetryMiddleware::new(policy).circuit(&HOSTS).budget(&RETRIES))
///     .build();
/// # drop(client);
/// ```
#[derive(Clone, Debug)]
pub struct RetryMiddleware<H = NoHook, T = NoTimeout> {
    settings: HttpSettings<H, T>,
}

impl RetryMiddleware {
    /// Retry by `policy`.
    pub const fn new(policy: RetryPolicy) -> Self {
        RetryMiddleware {
            settings: HttpSettings::new(PolicySource::Own(policy)),
        }
    }

    /// Retry each request by the policy `cell` holds when the request starts (a policy
    /// replaced at run time, see [`PolicyCell`](crate::PolicyCell)).
    pub fn from_cell(cell: impl Into<SharedCell>) -> Self {
        RetryMiddleware {
            settings: HttpSettings::new(PolicySource::Cell(cell.into())),
        }
    }
}

impl<H, T> RetryMiddleware<H, T> {
    /// Call `hook` with every failed attempt's [`Failure`](crate::Failure) record.
    pub fn on_failure<H2>(self, hook: H2) -> RetryMiddleware<H2, T> {
        RetryMiddleware {
            settings: self.settings.on_failure(hook),
        }
    }

    /// Give every `POST` and `PATCH` without an `Idempotency-Key` header a fresh key, the same
    /// on each of its attempts. The server can then recognise a repeat, so such requests are
    /// retried like idempotent ones (a timeout or a 502 included). Off by default: only turn it
    /// on for servers that honour the header.
    pub const fn idempotency_keys(mut self) -> Self {
        self.settings.add_keys = true;
        self
    }

    /// Consult `breaker` (a `&'static CircuitBreaker`, or a `&'static PerKey<CircuitBreaker>`
    /// keyed by each request's authority written `host:port`, the host in lower case (an IPv6
    /// address in its canonical form) and the scheme's default port filled in:
    /// `PER_HOST.get("api.example:443")` finds the entry of `https://API.example/..`) before
    /// every attempt; a refused first attempt is an error.
    pub fn circuit(mut self, breaker: impl ForEachRequest<CircuitBreaker>) -> Self {
        self.settings.circuit = Some(breaker.chosen());
        self
    }

    /// Charge failures to `budget` (a `&'static RetryBudget`, or a `&'static PerKey<RetryBudget>`
    /// keyed by each request's authority written `host:port`, or, with `redis`, a fleet budget)
    /// and ask it before every retry. A `&'static AdaptiveThrottle` is taken too: it refuses
    /// first attempts as well, failing the request as a refusing breaker does.
    pub fn budget(mut self, budget: impl BudgetForEachRequest) -> Self {
        self.settings.budget = Some(budget.budget_choice());
        self
    }

    /// Cancel each attempt after `limit` (idempotent-only, like a timeout of the client).
    pub fn attempt_timeout(self, limit: Duration) -> RetryMiddleware<H, AttemptTimeout> {
        RetryMiddleware {
            settings: self.settings.attempt_timeout(limit),
        }
    }

    /// The name `tracing` events and measurements give every request (their `fn`), instead
    /// of the request's authority written `host:port` (as a `PerKey` is keyed:
    /// `"api.example:443"`).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::reqwest_middleware::RetryMiddleware;
    /// use retry_kit::RetryPolicy;
    ///
    /// let middleware = RetryMiddleware::new(RetryPolicy::new()).named("billing_api");
    /// # let _ = middleware;
    /// ```
    pub fn named(mut self, name: &'static str) -> Self {
        self.settings.name = Some(name);
        self
    }
}

/// A request's authority (host and port), hashed as `PerKey` keys are.
fn authority_of(request: &Request) -> Authority {
    let url = request.url();
    Authority::new(
        url.host_str().unwrap_or_default(),
        url.port_or_known_default().unwrap_or_default(),
    )
}

/// Whether a request may be repeated when its outcome is unknown: an idempotent method, or an
/// `Idempotency-Key` header.
pub fn is_idempotent(request: &Request) -> bool {
    crate::http::may_repeat(request.method(), request.headers())
}

#[async_trait::async_trait]
impl<H, T> Middleware for RetryMiddleware<H, T>
where
    H: Hook<Attempted> + Clone + Send + Sync + 'static,
    T: TimeoutSlot<Attempted> + Clone + Send + Sync + 'static,
{
    async fn handle(
        &self,
        mut req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> ::reqwest_middleware::Result<Response> {
        // A streamed body cannot be replayed (`try_clone()` refuses it): sent once, still through
        // the loop, so its one attempt has the timeout, the breaker, the budget and the hook.
        let repeatable = req.body().is_none_or(|body| body.as_bytes().is_some());
        let policy = self
            .settings
            .policy_for(&req.method().clone(), req.headers_mut());
        // The breaker and budget of this request (its authority's, with a `PerKey`).
        let (circuit, budget, throttle) = self.settings.held_for(|| authority_of(&req));
        // An async block, so that a breaker's refusal of the first attempt (`begin!` returns
        // it) ends the loop, not `handle`.
        // Each attempt sends a copy of a request that can go again; a streamed one is taken by
        // its one attempt. One slot for both (two `Option<Request>`s made the future larger,
        // and it is copied whole: benches/README.md, "RetryMiddleware against reqwest-retry").
        // A streamed request is taken by its one attempt: its authority, for reports that name
        // it, is written beforehand (a repeatable one's is read from the request kept here).
        let taken_from = (!repeatable).then(|| Box::<str>::from(authority_of(&req).as_str()));
        let mut slot = Slot {
            request: Some(req),
            taken_from,
        };
        // Pinned in place and awaited through the pin: a future awaited by value is kept twice
        // in this one (where it is made and where it is awaited), and this one is boxed for
        // every request.
        // What the loop alone uses is made inside it, so that this future does not keep it too.
        let outcome: Result<Response, Attempted> = std::pin::pin!(async {
            let retry = self
                .settings
                .retry
                .clone()
                .with_policy(&policy)
                .with_protection(Protections::chosen(circuit, budget, throttle))
                .classify(MiddlewareClassifier { repeatable });
            let timeout = &retry.timeout.slot();
            let sleep = clock::tokio_sleep;
            let named = self.settings.name;
            let mut hook = retry.hook;
            // The hook as the engine is handed it for one step: observed under the request's
            // name, written only if a report needs it.
            macro_rules! observer {
                () => {
                    observe::observed_by(
                        Displayed(Borrowed(&mut hook)),
                        ByAuthority {
                            named,
                            of: &slot,
                            authority: Slot::authority,
                        },
                    )
                };
            }
            let wants_clock = Hook::<Attempted>::wants_clock(&observer!());
            let call = crate::run::Call::starting(retry.policy, wants_clock);
            let mut call = Equip::<Attempted>::equip(&retry.protection, call);
            if let Err(refused) = Equip::<Attempted>::admit(&retry.protection, &mut call) {
                observe::refused(&mut observer!());
                return Err(refused);
            }
            let classifier = retry.classifier;
            crate::retry_async!(call.after(&classifier, &mut observer!()) <-
                {
                    // A resend runs in a span of its own (`tracing`; none for the first).
                    let span = observe::span::http_resend(
                        call.attempt(),
                        slot.request.as_ref().map(Request::method),
                        || slot.authority(),
                    );
                    let attempt = attempt(&mut slot.request, repeatable, &mut *extensions, next.clone());
                    let attempt = observe::span::in_span(attempt, span.clone());
                    let out = call.attempt_timed(timeout, attempt, sleep).await;
                    let out = call.settle::<Result<Response, Attempted>, _>(timeout, out);
                    if let Err(attempted) = &out {
                        attempted.in_span(&span);
                    }
                    out
                },
                sleep: sleep)
        })
        .await;
        match outcome {
            Ok(response) => Ok(response),
            Err(Attempted::Status(response)) => Ok(*response),
            Err(Attempted::Error(e)) => Err(e),
        }
    }
}

/// Where the request is kept between attempts: a repeatable one is copied for each; a streamed
/// one is taken by its one attempt, its authority written beforehand for reports that name it.
struct Slot {
    request: Option<Request>,
    taken_from: Option<Box<str>>,
}

impl Slot {
    /// The request's authority, `host:port`.
    fn authority(&self) -> Authority {
        match (&self.request, &self.taken_from) {
            (Some(request), _) => authority_of(request),
            (None, Some(text)) => Authority::text(text),
            (None, None) => Authority::text(""),
        }
    }
}

/// One attempt with a copy of the request when it can go again (`repeatable`), or with the
/// request itself when it cannot (taken by the first attempt): a retryable status is a failed
/// attempt.
async fn attempt(
    slot: &mut Option<Request>,
    repeatable: bool,
    extensions: &mut Extensions,
    next: Next<'_>,
) -> Result<Response, Attempted> {
    // In a block of its own, so that the request (moved into `run`) is not kept in this future
    // across the await: only the answer's future is.
    let answer = {
        let request = if repeatable {
            slot.as_ref().and_then(Request::try_clone)
        } else {
            slot.take()
        };
        let Some(request) = request else {
            // A copyable request was copied once already, and a streamed one makes one
            // attempt (`MiddlewareClassifier`), so this cannot happen; say so rather than
            // panic.
            return Err(Attempted::Error(::reqwest_middleware::Error::middleware(
                NotReplayable,
            )));
        };
        next.run(request, extensions)
    };
    match answer.await {
        Ok(response) if crate::http::status_class(response.status()).is_failure() => {
            Err(Attempted::Status(Box::new(response)))
        }
        Ok(response) => Ok(response),
        Err(e) => Err(Attempted::Error(e)),
    }
}

/// The middleware's classifier: an attempt's own class and hint, and whether the request can
/// go again (a streamed body cannot: one attempt, then `StopReason::NotRepeatable`).
struct MiddlewareClassifier {
    repeatable: bool,
}

impl Classifier<Attempted> for MiddlewareClassifier {
    #[inline]
    fn class(&self, attempted: &Attempted) -> ErrorClass {
        attempted.class()
    }
    #[inline]
    fn retry_after(&self, attempted: &Attempted) -> Option<Duration> {
        Classify::retry_after(attempted)
    }
    const LIMITS_REPEATS: bool = true;
    #[inline]
    fn repeatable(&self, _: &Attempted) -> bool {
        self.repeatable
    }
}

/// A request whose body could not be copied for another attempt.
#[derive(Debug)]
struct NotReplayable;

impl fmt::Display for NotReplayable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the request body cannot be copied for another attempt")
    }
}

impl std::error::Error for NotReplayable {}
