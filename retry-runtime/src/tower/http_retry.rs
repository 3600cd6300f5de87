//! [`HttpRetryLayer`]: the tower layer for HTTP clients, with the semantics the SPEC gives
//! (status table, `Retry-After`, idempotence by method or `Idempotency-Key`, replayed bodies).

mod future;

pub use future::HttpRetryFuture;

use super::replay::{BodyNotReplayable, BoxError, ReplayBody};
use crate::CircuitBreaker;
use crate::authority::Authority;
use crate::chain::{self, Sending};
use crate::class::{Classify, ErrorClass};
use crate::error::{CircuitOpen, TimedOut};
use crate::per_request::{BudgetForEachRequest, ForEachRequest, HttpSettings};
use crate::policy::RetryPolicy;
use crate::policy_cell::{PolicySource, SharedCell};
use crate::run::Classifier;
use crate::run::plumbing::TimeoutSlot;
use crate::run::{AttemptTimeout, NoTimeout};
use crate::run::{Hook, NoHook};

use ::http::{Request, Response, StatusCode};
use http_body::Body;
use std::error::Error as StdError;
use std::fmt;
use std::task::{Context, Poll};
use std::time::Duration;
use tower_layer::Layer;
use tower_service::Service;

/// How many request-body bytes are kept for replay unless `.body_limit(..)` says otherwise.
pub const DEFAULT_BODY_LIMIT: usize = 64 * 1024;

/// A failed HTTP attempt, as hooks and `Failure` records see it: a response with a retryable
/// status, or an error from the inner service.
pub struct HttpFailure<RB> {
    outcome: Result<Box<Response<RB>>, BoxError>,
    /// The request body can be sent again (it fit the replay bound).
    repeatable: bool,
}

impl<RB> HttpFailure<RB> {
    /// The response's status, when the server answered.
    pub fn status(&self) -> Option<StatusCode> {
        self.outcome.as_ref().ok().map(|response| response.status())
    }

    /// The inner service's error, when there was no answer.
    pub fn error(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        self.outcome.as_ref().err().map(|e| &**e)
    }

    /// Whether the request could be sent again (its body fit the replay bound).
    pub fn is_repeatable(&self) -> bool {
        self.repeatable
    }

    /// Say in the attempt's span (see [`AttemptSpan`](crate::observe::AttemptSpan)) that it
    /// failed: `error.type` is the status, or the class of an error without one.
    pub(crate) fn in_span(&self, span: &crate::observe::span::KeptSpan) {
        let status = self.status();
        let error_type = match status {
            Some(status) => crate::http::status_text(status),
            None => self.class().as_str(),
        };
        span.failed(error_type, status.map(|s| s.as_u16()));
    }

    fn error_of(error: BoxError) -> Self {
        HttpFailure {
            outcome: Err(error),
            repeatable: true,
        }
    }

    /// What the caller gets when the loop stops on this failure: the response of a retryable
    /// status (it is still an answer), or the error.
    fn into_answer(self) -> Result<Response<RB>, BoxError> {
        match self.outcome {
            Ok(response) => Ok(*response),
            Err(error) => Err(error),
        }
    }
}

/// The class of what happened, whether or not the request can be sent again (the layer stops
/// a request whose body was not kept with `StopReason::NotRepeatable`, and the class still
/// tells the breaker and the budget whether the server is failing).
impl<RB> Classify for HttpFailure<RB> {
    fn class(&self) -> ErrorClass {
        self.read().0
    }

    fn retry_after(&self) -> Option<Duration> {
        self.read().1
    }
}

impl<RB> HttpFailure<RB> {
    /// Its class and wait: an answer's by [`classify_response`](crate::http::classify_response),
    /// an error's through its source chain.
    fn read(&self) -> (ErrorClass, Option<Duration>) {
        match &self.outcome {
            Ok(response) => crate::http::classify_response(response.status(), response.headers()),
            Err(error) => chain_class(&**error),
        }
    }
}

/// The class of an inner service's error, found through its source chain. The question is
/// whether the server may have acted on the request: the layer's own body errors (a body it
/// will not send again) are permanent wherever they sit in the chain; the rest is
/// [`classify_chain`](crate::classify_chain)'s reading, for a request that was being sent (a
/// reset or a close that the chain does not show to have happened before sending is
/// idempotent-only).
pub(crate) fn chain_class(error: &(dyn StdError + 'static)) -> (ErrorClass, Option<Duration>) {
    let mut current = Some(error);
    while let Some(e) = current {
        if e.is::<BodyNotReplayable>() || e.is::<BodyTooLong>() {
            return (ErrorClass::Permanent, None);
        }
        current = e.source();
    }
    chain::read(error, Sending::Request)
}

/// The layer's classifier: the failure's own class and hint, and whether the request can go
/// again (its body fit the bound and its source did not fail; asked of the body itself, so a
/// timed-out attempt is known not to be repeatable too).
struct LayerClassifier<'b, B>(&'b ReplayBody<B>);

impl<RB, B> Classifier<HttpFailure<RB>> for LayerClassifier<'_, B> {
    #[inline]
    fn class(&self, failure: &HttpFailure<RB>) -> ErrorClass {
        failure.class()
    }
    #[inline]
    fn retry_after(&self, failure: &HttpFailure<RB>) -> Option<Duration> {
        Classify::retry_after(failure)
    }
    const LIMITS_REPEATS: bool = true;
    fn repeatable(&self, failure: &HttpFailure<RB>) -> bool {
        failure.repeatable && self.0.is_replayable()
    }
}

/// A failed attempt's status code, where the server answered: the `code` label and field.
impl<RB, T> crate::observe::Status<HttpFailure<RB>> for crate::per_request::ByAuthority<'_, T> {
    #[inline]
    fn code(&self, failure: &HttpFailure<RB>) -> Option<&'static str> {
        failure.status().map(crate::http::status_text)
    }
}

impl<RB> fmt::Display for HttpFailure<RB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.outcome {
            Ok(response) => write!(f, "HTTP status {}", response.status()),
            Err(e) => e.fmt(f),
        }
    }
}

impl<RB> fmt::Debug for HttpFailure<RB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpFailure")
            .field("status", &self.status())
            .field("error", &self.error())
            .field("repeatable", &self.repeatable)
            .finish()
    }
}

impl<RB> From<CircuitOpen> for HttpFailure<RB> {
    fn from(open: CircuitOpen) -> Self {
        HttpFailure::error_of(Box::new(open))
    }
}

impl<RB> From<TimedOut> for HttpFailure<RB> {
    fn from(timed_out: TimedOut) -> Self {
        HttpFailure::error_of(Box::new(timed_out))
    }
}

/// A tower [`Layer`] for HTTP client services: retries by the policy and the `http` status
/// table, honours `Retry-After`, classifies errors through their source chain, retries
/// idempotent-only outcomes only for idempotent requests (GET, HEAD, OPTIONS, TRACE, PUT,
/// DELETE, or an `Idempotency-Key` header), and replays request bodies from a bounded buffer.
///
/// The inner service receives `Request<ReplayBody<B>>`; its error is boxed. A response with a
/// retryable status that is still failing when the loop stops is returned as the response,
/// not turned into an error. Each call returns an [`HttpRetryFuture`], a named future that
/// allocates nothing of its own.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use http::{Request, Response, StatusCode};
/// use retry_kit::tower::{HttpRetryLayer, ReplayBody};
/// use retry_kit::RetryPolicy;
/// use std::sync::{Arc, atomic::{AtomicU32, Ordering}};
/// use std::{convert::Infallible, time::Duration};
/// use tower_layer::Layer;
/// use tower_service::Service;
///
/// // A server that answers 503 twice, then 200.
/// #[derive(Clone, Default)]
/// struct Busy(Arc<AtomicU32>);
///
/// impl Service<Request<ReplayBody<String>>> for Busy {
///     type Response = Response<()>;
///     type Error = Infallible;
///     type Future = std::future::Ready<Result<Response<()>, Infallible>>;
///     fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Infallible>> {
///         std::task::Poll::Ready(Ok(()))
///     }
///     fn call(&mut self, _: Request<ReplayBody<String>>) -> Self::Future {
///         let status = if self.0.fetch_add(1, Ordering::Relaxed) < 2 {
///             StatusCode::SERVICE_UNAVAILABLE
///         } else {
///             StatusCode::OK
///         };
///         std::future::ready(Ok(Response::builder().status(status).body(()).unwrap()))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let layer = HttpRetryLayer::new(RetryPolicy::fixed(Duration::from_millis(50)).attempts(4));
/// let mut client = layer.layer(Busy::default());
/// let response = client.call(Request::new(String::from("ping"))).await.unwrap();
/// assert_eq!(response.status(), StatusCode::OK);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct HttpRetryLayer<H = NoHook, T = NoTimeout> {
    settings: HttpSettings<H, T>,
    body_limit: usize,
}

impl HttpRetryLayer {
    /// Retry by `policy`, keeping up to [`DEFAULT_BODY_LIMIT`] bytes of each body for replay.
    pub const fn new(policy: RetryPolicy) -> Self {
        HttpRetryLayer {
            settings: HttpSettings::new(PolicySource::Own(policy)),
            body_limit: DEFAULT_BODY_LIMIT,
        }
    }

    /// Retry each request by the policy `cell` holds when the request starts (a policy
    /// replaced at run time, see [`PolicyCell`](crate::PolicyCell)).
    pub fn from_cell(cell: impl Into<SharedCell>) -> Self {
        HttpRetryLayer {
            settings: HttpSettings::new(PolicySource::Cell(cell.into())),
            body_limit: DEFAULT_BODY_LIMIT,
        }
    }
}

impl<H, T> HttpRetryLayer<H, T> {
    /// Keep at most `bytes` of each request body for replay; a longer body is sent once.
    pub const fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Call `hook` with every failed attempt's [`Failure`](crate::Failure) record. Its error is
    /// an [`HttpFailure`] of the inner service's response body type, which a closure names in
    /// its argument (the layer is made before the service it wraps, so it cannot be inferred):
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::tower::{HttpFailure, HttpRetryLayer};
    /// use retry_kit::{Failure, RetryPolicy};
    ///
    /// // For a hyper client the body type is `hyper::body::Incoming`.
    /// let layer = HttpRetryLayer::new(RetryPolicy::new()).on_failure(
    ///     |failed: &Failure<'_, HttpFailure<String>>| {
    ///         eprintln!("attempt {} failed: {}", failed.attempt, failed.error);
    ///     },
    /// );
    /// # let _ = layer;
    /// ```
    pub fn on_failure<H2>(self, hook: H2) -> HttpRetryLayer<H2, T> {
        HttpRetryLayer {
            settings: self.settings.on_failure(hook),
            body_limit: self.body_limit,
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
    /// `PER_HOST.get("api.example:443")` finds the entry of `https://API.example/..`; a URI
    /// without an authority is keyed by its `Host` header) before every attempt; a refused
    /// first attempt is an error.
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

    /// Cancel each attempt after `limit` (idempotent-only, like a client timeout).
    pub fn attempt_timeout(self, limit: Duration) -> HttpRetryLayer<H, AttemptTimeout> {
        HttpRetryLayer {
            settings: self.settings.attempt_timeout(limit),
            body_limit: self.body_limit,
        }
    }

    /// The name `tracing` events and measurements give every request (their `fn`), instead
    /// of the request's authority written `host:port` (as a `PerKey` is keyed: `"api.example:443"`).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::tower::HttpRetryLayer;
    /// use retry_kit::RetryPolicy;
    ///
    /// // Every request through this layer is `fn="billing_api"`, whatever host it goes to.
    /// let layer = HttpRetryLayer::new(RetryPolicy::new()).named("billing_api");
    /// # let _ = layer;
    /// ```
    pub fn named(mut self, name: &'static str) -> Self {
        self.settings.name = Some(name);
        self
    }
}

impl<Svc, H: Clone, T: Clone> Layer<Svc> for HttpRetryLayer<H, T> {
    type Service = HttpRetryService<Svc, H, T>;

    fn layer(&self, inner: Svc) -> Self::Service {
        HttpRetryService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service an [`HttpRetryLayer`] makes.
#[derive(Clone, Debug)]
pub struct HttpRetryService<Svc, H = NoHook, T = NoTimeout> {
    inner: Svc,
    layer: HttpRetryLayer<H, T>,
}

/// A request's authority (host and port, the scheme's default when the URI names none; the
/// `Host` header's when the URI has no authority) as a `PerKey` key: the same key reqwest's
/// middleware gives a URL naming the same host.
fn authority_of(parts: &::http::request::Parts) -> Authority {
    let uri = &parts.uri;
    let default_port = match uri.scheme_str() {
        Some("https") => 443,
        Some("http") => 80,
        _ => 0,
    };
    if let Some(host) = uri.host() {
        return Authority::new(host, uri.port_u16().unwrap_or(default_port));
    }
    // A URI with no authority (`/orders`, as a client sending on a connection of its own
    // writes it): the `Host` header names the server, as HTTP/1.1 requires; port 80 unless it
    // says otherwise.
    let host = parts
        .headers
        .get(::http::header::HOST)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<::http::uri::Authority>().ok());
    match host {
        Some(host) => Authority::new(host.host(), host.port_u16().unwrap_or(80)),
        None => Authority::new("", default_port),
    }
}

/// Whether a request may be repeated when its outcome is unknown: an idempotent method
/// (RFC 9110), or an `Idempotency-Key` header.
pub fn is_idempotent<B>(request: &Request<B>) -> bool {
    crate::http::may_repeat(request.method(), request.headers())
}

// `call` is an inherent method too, as `RetryService`'s is: a method call
// (`client.call(req)`) finds it without `tower_service::Service` in scope, and rustc reports
// an inner service that does not take `Request<ReplayBody<B>>` (a client typed for the plain
// body) as that unmet bound at the call, not as "the method `call` exists for struct
// `HttpRetryService<..>`, but its trait bounds were not satisfied".
impl<Svc, H, T> HttpRetryService<Svc, H, T> {
    /// [`Service::call`], also callable without the trait in scope: send `req` (the service
    /// must be ready, as for `Service::call`) and retry it by the layer's policy. The inner
    /// service receives each attempt's request with its body in a [`ReplayBody`].
    // In line, so that the future is built where the caller keeps it, not copied there.
    #[inline]
    pub fn call<B, RB>(&mut self, req: Request<B>) -> HttpRetryFuture<Svc, B, H, T>
    where
        Svc: Service<Request<ReplayBody<B>>, Response = Response<RB>> + Clone,
        Svc::Error: Into<BoxError>,
        B: Body,
        H: Hook<HttpFailure<RB>> + Clone,
        T: TimeoutSlot<HttpFailure<RB>> + Clone,
    {
        // The service driven to readiness serves the first attempt; a clone takes its place
        // for the next call.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        HttpRetryFuture::new(inner, req, &self.layer)
    }
}

impl<Svc, B, RB, H, T> Service<Request<B>> for HttpRetryService<Svc, H, T>
where
    Svc: Service<Request<ReplayBody<B>>, Response = Response<RB>> + Clone,
    Svc::Error: Into<BoxError>,
    B: Body,
    H: Hook<HttpFailure<RB>> + Clone,
    T: TimeoutSlot<HttpFailure<RB>> + Clone,
{
    type Response = Response<RB>;
    type Error = BoxError;
    type Future = HttpRetryFuture<Svc, B, H, T>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        HttpRetryService::call(self, req)
    }
}

/// A request body longer than the replay bound, which the layer will not send twice.
#[derive(Debug)]
struct BodyTooLong;

impl fmt::Display for BodyTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the request body is longer than the replay bound and was sent once")
    }
}

impl StdError for BodyTooLong {}

#[cfg(test)]
mod tests {
    use super::chain_class;
    use crate::class::ErrorClass;
    use std::error::Error;
    use std::fmt;
    use std::io;

    /// An error with a message and a source, as hyper-util's client errors are.
    #[derive(Debug)]
    struct Wrapped(&'static str, Box<dyn Error + Send + Sync>);

    impl fmt::Display for Wrapped {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl Error for Wrapped {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&*self.1)
        }
    }

    #[test]
    fn a_failed_dns_lookup_through_hyper_util_is_transient() {
        // What hyper-util's legacy client returns for an unknown host: std's resolver error is
        // an `io::Error` of a kind it leaves uncategorized (`Other` is the nearest stable one).
        let lookup =
            io::Error::other("failed to lookup address information: Name or service not known");
        let dns = Wrapped("dns error", Box::new(lookup));
        let connect = Wrapped("client error (Connect)", Box::new(dns));
        assert_eq!(chain_class(&connect).0, ErrorClass::Transient);
    }

    #[test]
    fn the_same_io_error_after_the_request_was_sent_is_permanent() {
        let other = io::Error::other("something the client could not say");
        let sending = Wrapped("client error (SendRequest)", Box::new(other));
        assert_eq!(chain_class(&sending).0, ErrorClass::Permanent);
    }
}
