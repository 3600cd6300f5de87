//! [`GrpcRetryService`]: one gRPC call through the engine. The call's method picks its plan
//! (one attempt, retries, or hedges); the deadline (`grpc-timeout`, the method's `timeout`,
//! the policy's, an enclosing call's) bounds every attempt together, and a per-attempt timeout
//! (`perAttemptRecvTimeout`, `.attempt_timeout`) each one until its response headers; each
//! attempt is the original request with a replay of its messages, `grpc-previous-rpc-attempts`
//! and the time left; its response headers say whether it is committed.

use super::call_metrics::CallTally;
use super::failure::{ByMethod, GrpcClassifier, GrpcFailure, Kind, code_name};
use super::layer::GrpcRetryLayer;
use super::rules::{Codes, Plan, Rule};
use super::wire::{self, Answer};
use crate::authority::Authority;
use crate::builder::begin;
use crate::clock;
use crate::error::TimedOut;
use crate::observe;
use crate::per_key::Lease;
use crate::per_request::held;
use crate::policy::RetryPolicy;
use crate::run::equip::Protections;
use crate::run::plumbing::{Conversion, Displayed};
use crate::run::{Hook, NoHook};
use crate::tower::{BoxError, ReplayBody};
use ::http::request::Parts;
use ::http::{HeaderName, HeaderValue, Request, Response};
use ::tonic::body::Body;
use ::tonic::{Code, Status};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tower_layer::Layer;
use tower_service::Service;

const PREVIOUS_ATTEMPTS: HeaderName = HeaderName::from_static(wire::PREVIOUS_ATTEMPTS_KEY);
const TIMEOUT: HeaderName = HeaderName::from_static(wire::TIMEOUT_KEY);

/// The service a [`GrpcRetryLayer`] makes: `Clone` when the inner service is, its futures
/// `Send`. Its error is the inner service's, boxed, or the [`Status`] the call ended with
/// when no answer came (tonic reports either as that status).
///
/// Over a stand-in for a channel, here a server that refuses its first two requests with a
/// Trailers-Only `UNAVAILABLE` and records each request's `grpc-previous-rpc-attempts`:
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::RetryPolicy;
/// use retry_kit::tonic::GrpcRetryLayer;
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
/// use tonic::body::Body;
/// use tower_layer::Layer;
/// use tower_service::Service;
///
/// #[derive(Clone, Default)]
/// struct Refusing(Arc<Mutex<Vec<Option<String>>>>);
///
/// impl Service<http::Request<Body>> for Refusing {
///     type Response = http::Response<Body>;
///     type Error = std::convert::Infallible;
///     type Future = std::future::Ready<Result<http::Response<Body>, Self::Error>>;
///     fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
///         std::task::Poll::Ready(Ok(()))
///     }
///     fn call(&mut self, request: http::Request<Body>) -> Self::Future {
///         let previous = request.headers().get("grpc-previous-rpc-attempts");
///         let mut seen = self.0.lock().unwrap();
///         seen.push(previous.map(|v| v.to_str().unwrap().to_owned()));
///         // 14 is UNAVAILABLE, 0 is OK: a status and nothing else.
///         let code = if seen.len() < 3 { "14" } else { "0" };
///         let response = http::Response::builder().header("grpc-status", code);
///         std::future::ready(Ok(response.body(Body::empty()).unwrap()))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let server = Refusing::default();
/// let layer = GrpcRetryLayer::new(RetryPolicy::fixed(Duration::from_millis(10)).attempts(3));
/// let mut client = layer.layer(server.clone());
/// let request = http::Request::builder().uri("/grpc.health.v1.Health/Check");
/// let response = client.call(request.body(Body::empty()).unwrap()).await.unwrap();
///
/// assert_eq!(response.headers()["grpc-status"], "0");
/// assert_eq!(*server.0.lock().unwrap(), [None, Some("1".into()), Some("2".into())]);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct GrpcRetryService<Svc, H = NoHook> {
    pub(crate) inner: Svc,
    pub(crate) layer: GrpcRetryLayer<H>,
}

/// The layer makes the service, here beside it: the service holds the layer's settings, so
/// the layer's own file need not know the service.
impl<Svc, H: Clone> Layer<Svc> for GrpcRetryLayer<H> {
    type Service = GrpcRetryService<Svc, H>;

    fn layer(&self, inner: Svc) -> Self::Service {
        GrpcRetryService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The outcome of one attempt, and of the call before it is handed to tonic.
type Outcome<RB> = Result<Response<RB>, GrpcFailure>;

impl<Svc, RB, H> Service<Request<Body>> for GrpcRetryService<Svc, H>
where
    Svc: Service<Request<Body>, Response = Response<RB>> + Clone + Send + 'static,
    Svc::Future: Send,
    Svc::Error: Into<BoxError>,
    RB: Send + 'static,
    H: Hook<GrpcFailure> + Clone + Send + 'static,
{
    type Response = Response<RB>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<RB>, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // The service driven to readiness serves the first attempt; a clone takes its place.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let layer = &self.layer;
        let (parts, body) = request.into_parts();
        let method = layer.rules.for_path(parts.uri.path());
        let timeout = match parts.headers.get(TIMEOUT) {
            None => None,
            Some(value) => match wire::parse_timeout(value) {
                Some(timeout) => Some(timeout),
                None => return Box::pin(std::future::ready(Err(malformed_timeout(value)))),
            },
        };
        let deadline = earliest(timeout, method.timeout);
        let (circuit, budget, throttle) = held(layer.circuit, layer.budget, || {
            match (parts.uri.host(), &layer.origin) {
                (None, Some(origin)) => Authority::text(origin),
                _ => Authority::of_uri(&parts.uri),
            }
        });
        // The service config's `retryThrottling`, unless `.budget(..)` replaced it: the call
        // keeps the layer's budget alive, and leases it for the call.
        let throttling = match (budget, throttle) {
            (None, None) => layer.throttling.clone(),
            _ => None,
        };
        let (policy, rule, hedge, recv_timeout) = match &method.plan {
            // No code is retryable for a method without a policy: A6 charges the throttling
            // tokens for none of its failures (and refunds its successes).
            Plan::Once => (
                RetryPolicy::new().attempts(1),
                Rule::Listed(Codes::default()),
                None,
                None,
            ),
            Plan::Retry {
                policy,
                rule,
                recv_timeout,
            } => (policy.current(), *rule, None, *recv_timeout),
            Plan::Hedge {
                policy,
                delay,
                rule,
            } => (*policy, *rule, Some(*delay), None),
        };
        let per_attempt = earliest(recv_timeout, layer.attempt_timeout);
        let policy = match earliest(deadline, policy.settings().deadline) {
            Some(deadline) => policy.deadline(deadline),
            None => policy,
        };
        // Hedges run side by side, each on its own clone of the service.
        let spare = hedge.map(|delay| (delay, self.inner.clone()));
        let retry = layer.retry.clone();
        let named = layer.name;
        // A96's `grpc.target`, kept for the call only while a recorder is installed.
        #[cfg(feature = "metrics")]
        let origin = layer.origin.clone().filter(|_| crate::meter::recording());
        #[cfg(not(feature = "metrics"))]
        let origin: Option<std::sync::Arc<str>> = None;
        let max_pushback = layer.max_pushback;
        let body = ReplayBody::new(body, layer.buffer_limit);
        Box::pin(async move {
            let budget = budget.or_else(|| throttling.as_deref().map(Lease::of));
            let protection = Protections::chosen(circuit, budget, throttle);
            let retry = retry
                .with_policy(&policy)
                .with_protection(protection)
                .classify(GrpcClassifier {
                    rule,
                    body: &body,
                    max_pushback,
                });
            let (parts, body) = (&parts, &body);
            let method = parts.uri.path_and_query();
            let sleep = clock::tokio_sleep;
            // gRFC A96's tally of the call's retries, hedges and waits.
            let tally = CallTally::new(spare.is_some());
            // Reports name the call by its method (or the layer's name), with each failure's
            // code; failures are shown with their `Display`, and tallied.
            let observed = |hook| {
                let path = parts.uri.path();
                observe::observed_by(Displayed(tally.beside(hook)), ByMethod { named, path })
            };
            let outcome: Outcome<RB> = match spare {
                None => {
                    async move {
                        begin!(retry, Outcome<RB> => call, classifier,
                            hook = observed(retry.hook); else return);
                        let timeout = attempt_limit(call.time_left(), per_attempt);
                        let deadline = call.deadline();
                        let mut inner = inner;
                        let mut ready = true;
                        crate::retry_async!(call.after(&classifier, &mut hook) <- {
                            let (previous, left) = (call.attempt(), call.time_left());
                            let attempt = attempt(&mut inner, &mut ready, parts, body, previous, left);
                            let out = call.attempt_timed(&timeout, attempt, sleep).await;
                            // Not `call.settle`, which makes every cut attempt idempotent-only:
                            // under a service config one cut by the per-attempt timeout is
                            // retried as the C core retries it (the classifier's rule).
                            let out = out.unwrap_or_else(|cut| Err(GrpcFailure::from(cut)));
                            at_deadline(out, deadline, method)
                        }, sleep: sleep)
                    }
                    .await
                }
                Some((delay, spare)) => {
                    // Owns the spare service: the attempts borrow nothing that is not `Sync`.
                    async move {
                        begin!(retry, Outcome<RB> => call, classifier,
                            hook = observed(retry.hook); else return);
                        let timeout = attempt_limit(call.time_left(), per_attempt);
                        let deadline = call.deadline();
                        let mut first = Some(inner);
                        crate::retry_hedged!(call.after_hedged(&classifier, &mut hook) <- {
                            let (service, ready) = match first.take() {
                                Some(ready) => (ready, true),
                                None => (spare.clone(), false),
                            };
                            let (previous, left) = (call.attempt(), call.time_left());
                            owned_attempt(service, ready, parts, body, previous, left)
                        }, outcome: Outcome<RB>, timeout: &timeout,
                           then: |out| at_deadline(out, deadline, method),
                           sleep: &sleep, hedge: delay)
                    }
                    .await
                }
            };
            tally.record(parts.uri.path(), || {
                let authority = match (parts.uri.host(), &origin) {
                    (None, Some(origin)) => Authority::text(origin),
                    (None, None) => return None,
                    _ => Authority::of_uri(&parts.uri),
                };
                Some(authority.as_str().to_owned())
            });
            outcome.or_else(GrpcFailure::into_result)
        })
    }
}

/// Each attempt's limit: the per-attempt timeout (`perAttemptRecvTimeout`, `.attempt_timeout`),
/// if any, and the deadline, which bounds every attempt (the engine takes the smaller of the
/// limit and the time left). Without either, nothing is timed.
fn attempt_limit(
    left: Option<Duration>,
    per_attempt: Option<Duration>,
) -> Option<(Duration, Conversion<TimedOut, GrpcFailure>)> {
    match (left, per_attempt) {
        (None, None) => None,
        (_, limit) => Some((
            limit.unwrap_or(Duration::MAX),
            GrpcFailure::from as Conversion<TimedOut, GrpcFailure>,
        )),
    }
}

/// An attempt's outcome, once the call's `deadline` has passed: the deadline's; a failure
/// says which `method` it was of. The clock is read only for a failure, so a success costs
/// nothing more.
#[inline]
fn at_deadline<RB>(
    out: Outcome<RB>,
    deadline: Option<Instant>,
    method: Option<&::http::uri::PathAndQuery>,
) -> Outcome<RB> {
    match (out, deadline) {
        (Err(failure), Some(deadline)) if clock::now() >= deadline => {
            Err(failure.past_deadline().of_method(method))
        }
        (Err(failure), _) => Err(failure.of_method(method)),
        (out, _) => out,
    }
}

/// A caller's `grpc-timeout` that gRPC over HTTP/2 does not allow (at most 8 digits and a
/// unit) is a protocol error, which a server would refuse: grpc-go's answers INTERNAL
/// ("malformed grpc-timeout"), the C core resets the stream. Forwarded as it is, it would bound
/// nothing here and be refused (or ignored, as tonic's server does, leaving the call without a
/// deadline) there; taken as no deadline, the caller's bound would vanish without a word. So
/// the call fails before any attempt, with the status grpc-go's server gives it and a message
/// saying what to fix.
#[cold]
fn malformed_timeout(value: &HeaderValue) -> BoxError {
    Box::new(Status::internal(format!(
        "the request's grpc-timeout {value:?} is malformed and was not sent: gRPC allows at most \
         8 digits and a unit (H, M, S, m, u or n), such as \"250m\"; set it with \
         tonic::Request::set_timeout"
    )))
}

/// The sooner of two optional deadlines.
fn earliest(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A hedged attempt: it owns its service, since attempts run side by side.
async fn owned_attempt<Svc, RB>(
    mut inner: Svc,
    mut ready: bool,
    parts: &Parts,
    body: &ReplayBody<Body>,
    previous: u32,
    left: Option<Duration>,
) -> Outcome<RB>
where
    Svc: Service<Request<Body>, Response = Response<RB>>,
    Svc::Error: Into<BoxError>,
    RB: Send + 'static,
{
    attempt(&mut inner, &mut ready, parts, body, previous, left).await
}

/// One attempt: the original request with a replay of its messages, the number of attempts
/// before it and the time left; its response headers decide between a committed answer (the
/// call's result, whatever its trailers say later) and a status the engine may retry.
async fn attempt<Svc, RB>(
    inner: &mut Svc,
    ready: &mut bool,
    parts: &Parts,
    body: &ReplayBody<Body>,
    previous: u32,
    left: Option<Duration>,
) -> Outcome<RB>
where
    Svc: Service<Request<Body>, Response = Response<RB>>,
    Svc::Error: Into<BoxError>,
    RB: Send + 'static,
{
    // Every attempt after the first runs in a span of its own (`tracing`), which says how it
    // failed.
    let span = observe::span::grpc_attempt(previous, parts.uri.path());
    let out = observe::span::in_span(
        send(inner, ready, parts, body, previous, left),
        span.clone(),
    )
    .await;
    if let Err(failure) = &out {
        observe::span::failed(&span, code_name(failure.code()), None);
    }
    out
}

/// One attempt's request, sent and answered (see [`attempt`]).
async fn send<Svc, RB>(
    inner: &mut Svc,
    ready: &mut bool,
    parts: &Parts,
    body: &ReplayBody<Body>,
    previous: u32,
    left: Option<Duration>,
) -> Outcome<RB>
where
    Svc: Service<Request<Body>, Response = Response<RB>>,
    Svc::Error: Into<BoxError>,
    RB: Send + 'static,
{
    if left == Some(Duration::ZERO) {
        return Err(GrpcFailure::not_sent(Status::deadline_exceeded(
            "the call's deadline passed before this attempt could start",
        )));
    }
    let Some(copy) = body.replay() else {
        return Err(GrpcFailure::not_sent(Status::unavailable(
            "the request messages outgrew the retry buffer: the call is committed to an \
             earlier attempt",
        )));
    };
    let mut request = Request::new(Body::new(copy));
    *request.method_mut() = parts.method.clone();
    *request.uri_mut() = parts.uri.clone();
    *request.version_mut() = parts.version;
    *request.headers_mut() = parts.headers.clone();
    *request.extensions_mut() = parts.extensions.clone();
    if previous > 0 {
        request
            .headers_mut()
            .insert(PREVIOUS_ATTEMPTS, HeaderValue::from(previous));
    }
    if let Some(left) = left {
        request
            .headers_mut()
            .insert(TIMEOUT, wire::timeout_value(left));
    }
    if !std::mem::take(ready) {
        if let Err(e) = std::future::poll_fn(|cx| inner.poll_ready(cx)).await {
            return Err(GrpcFailure::transport(e.into()));
        }
    }
    let response = match inner.call(request).await {
        Ok(response) => response,
        Err(e) => return Err(GrpcFailure::transport(e.into())),
    };
    match wire::answer_of(&response) {
        Answer::Committed | Answer::Status(Code::Ok) => Ok(response),
        Answer::Status(code) => Err(GrpcFailure::answered(response, code, Kind::Answered)),
        Answer::MaybeProcessed(code) => {
            Err(GrpcFailure::answered(response, code, Kind::MaybeProcessed))
        }
    }
}
