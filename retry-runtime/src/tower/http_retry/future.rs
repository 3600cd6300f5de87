//! [`HttpRetryFuture`]: what an [`HttpRetryService`](super::HttpRetryService) call returns, the
//! crate's engine driven by hand, as tower's own `ResponseFuture`s are written, instead of an
//! `async` block in a box: no allocation, and no copy of a boxed state into place.
//!
//! The steps are the async loop's ([`retry_async!`](crate::retry_async)): start the [`Call`]
//! (and ask the breaker) at the first poll; begin each attempt; run each of its polls inside
//! the attempt ([`Call::in_attempt`]), under its timeout; [`settle`](Call::settle) and ask
//! [`after`](Call::after) what follows; sleep (or record the sleep, under
//! `testing::record_sleeps_async`); go again. The call owns its policy (made for each request),
//! so nothing in the future borrows from it.

use super::{BodyTooLong, HttpFailure, HttpRetryLayer, LayerClassifier, authority_of};
use crate::AdaptiveThrottle;
use crate::clock::{self, Sleep};
use crate::error::TimedOut;
use crate::observe::{self, span::KeptSpan};
use crate::per_key::Lease;
use crate::policy::RetryPolicy;
use crate::run::equip::Protections;
use crate::run::plumbing::{Conversion, TimeoutSlot};
use crate::run::protection::Protected;
use crate::run::timeout::{MaybeTimer, Timed, maybe_timed};
use crate::run::{Call, Equip, Hook, NoHook, NoTimeout};
use crate::tower::{BoxError, ReplayBody};
use crate::{CircuitBreaker, RetryBudget};

use ::http::request::Parts;
use ::http::{Request, Response};
use http_body::Body;
use pin_project_lite::pin_project;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tower_service::Service;

/// The engine of one request: it owns its policy, and holds the request's breaker and budget
/// (leased for the whole call).
type LayerCall = Call<'static, Protected<'static>, RetryPolicy>;

/// The outcome of one attempt: an answer, or a failure (a retryable status, an error).
type Attempted<RB> = Result<Response<RB>, HttpFailure<RB>>;

pin_project! {
    /// The future of an [`HttpRetryService`](super::HttpRetryService) call: the request retried
    /// by the layer's policy, resolving to the last answer (a retryable status that is still
    /// failing when the retries stop is returned as the response) or the last error.
    ///
    /// A named type rather than a boxed `async` block: a request answered at once allocates
    /// nothing for it (a wait between attempts, and an attempt's timer under
    /// `.attempt_timeout(..)`, are boxed when they are made). It is `Send` when the inner
    /// service, its future, the request body and the hook are; `Unpin` when the inner service's
    /// future is (hyper-util's client's is); for one that is not, pin it (`std::pin::pin!`,
    /// `Box::pin`) where a caller needs `Unpin`.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use http::{Request, Response};
    /// use retry_kit::tower::{HttpRetryFuture, HttpRetryLayer, ReplayBody};
    /// use retry_kit::RetryPolicy;
    /// use std::convert::Infallible;
    /// use std::future::{Ready, ready};
    /// use tower_layer::Layer;
    /// use tower_service::Service;
    ///
    /// #[derive(Clone)]
    /// struct Ok200;
    ///
    /// impl Service<Request<ReplayBody<String>>> for Ok200 {
    ///     type Response = Response<()>;
    ///     type Error = Infallible;
    ///     type Future = Ready<Result<Response<()>, Infallible>>;
    ///     fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Infallible>> {
    ///         std::task::Poll::Ready(Ok(()))
    ///     }
    ///     fn call(&mut self, _: Request<ReplayBody<String>>) -> Self::Future {
    ///         ready(Ok(Response::new(())))
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut client = HttpRetryLayer::new(RetryPolicy::new()).layer(Ok200);
    /// // The type can be named, in a struct field or another service's `Future`.
    /// let pending: HttpRetryFuture<Ok200, String> = client.call(Request::new(String::new()));
    /// assert!(pending.await.unwrap().status().is_success());
    /// # }
    /// ```
    #[must_use = "futures do nothing unless awaited"]
    pub struct HttpRetryFuture<Svc, B, H = NoHook, T = NoTimeout>
    where
        Svc: Service<Request<ReplayBody<B>>>,
    {
        #[pin]
        state: State<Svc::Future, B>,
        // `None` until the first poll starts it.
        call: Option<LayerCall>,
        hook: H,
        // The layer's `.named(..)`; without it, reports name the request by its authority.
        named: GivenName,
        // The span the current attempt runs in, if it is a resend (`tracing`): kept beside the
        // state, so that moving or dropping the state (every first attempt's) has no span to
        // see to.
        span: KeptSpan,
        timeout: T,
        // Ready for the first attempt; made ready again before each retry.
        inner: Svc,
        // The request without its body, copied into each attempt's request.
        parts: Parts,
        // The original body, which every attempt's copy replays.
        body: ReplayBody<B>,
    }
}

pin_project! {
    /// Where the call is.
    #[project = StateProj]
    enum State<F, B> {
        /// Not polled yet: what starting the call needs.
        Start {
            policy: RetryPolicy,
            circuit: Option<Lease<'static, CircuitBreaker>>,
            budget: Option<Lease<'static, RetryBudget>>,
            throttle: Option<&'static AdaptiveThrottle>,
        },
        /// An attempt under way, with its timer (boxed, made only under `.attempt_timeout(..)`).
        Attempt {
            #[pin]
            attempt: Timed<Step<F, B>, MaybeTimer<Pin<Box<Sleep>>>>,
        },
        /// The wait before the next attempt (boxed: the future is then `Unpin` whenever the
        /// inner service's future is, as the boxed future it replaced always was, and a request
        /// answered at once carries no room for a timer).
        Waiting {
            sleep: Pin<Box<Sleep>>,
        },
        /// The answer was returned.
        Done,
    }
}

pin_project! {
    /// Where an attempt's request is.
    #[project = StepProj]
    enum Step<F, B> {
        /// Not sent yet: `copy` is this attempt's copy of the body (`None` when the body
        /// cannot be sent again), sent once the inner service is `ready`.
        Unsent {
            copy: Option<ReplayBody<B>>,
            ready: bool,
        },
        /// Sent: the inner service's answer.
        Sent {
            #[pin]
            answer: F,
        },
    }
}

impl<Svc, B, H, T> HttpRetryFuture<Svc, B, H, T>
where
    Svc: Service<Request<ReplayBody<B>>>,
{
    /// The call of `request` through `layer`, to start at its first poll: `inner` is ready.
    /// The request's policy is made now (idempotent by its method or key, which may be added
    /// to its headers), and its breaker and budget chosen (its authority's, with a `PerKey`).
    // Always inlined: the future is then built where `call` returns it, not moved there.
    #[inline(always)]
    pub(super) fn new(inner: Svc, request: Request<B>, layer: &HttpRetryLayer<H, T>) -> Self
    where
        B: Body,
        H: Clone,
        T: Clone,
    {
        let settings = &layer.settings;
        let (mut parts, body) = request.into_parts();
        let policy = settings.policy_for(&parts.method, &mut parts.headers);
        let (circuit, budget, throttle) = settings.held_for(|| authority_of(&parts));
        HttpRetryFuture {
            state: State::Start {
                policy,
                circuit,
                budget,
                throttle,
            },
            call: None,
            hook: settings.retry.hook.clone(),
            named: GivenName::new(settings.name),
            span: KeptSpan::none(),
            timeout: settings.retry.timeout.clone(),
            inner,
            parts,
            body: ReplayBody::new(body, layer.body_limit),
        }
    }
}

impl<Svc, B, RB, H, T> Future for HttpRetryFuture<Svc, B, H, T>
where
    Svc: Service<Request<ReplayBody<B>>, Response = Response<RB>>,
    Svc::Error: Into<BoxError>,
    H: Hook<HttpFailure<RB>>,
    T: TimeoutSlot<HttpFailure<RB>>,
{
    type Output = Result<Response<RB>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let slot = this.timeout.slot();
        let named = this.named.get();
        let call = match this.call {
            Some(call) => call,
            None => {
                // The first poll starts the call, as the first poll of an async retry loop
                // does: it inherits the deadline of the attempt this poll runs in, and the
                // breaker is asked now, not when the request was made.
                let StateProj::Start {
                    policy,
                    circuit,
                    budget,
                    throttle,
                } = this.state.as_mut().project()
                else {
                    panic!("`HttpRetryFuture` polled after completion");
                };
                let protection = Protections::chosen(*circuit, *budget, *throttle);
                observing!(hook = &mut *this.hook, named, &*this.parts);
                let wants_clock = Hook::<HttpFailure<RB>>::wants_clock(hook);
                let call = Equip::<HttpFailure<RB>>::equip(
                    &protection,
                    Call::starting(*policy, wants_clock),
                );
                let call = this.call.insert(call);
                if let Err(refused) = Equip::<HttpFailure<RB>>::admit(&protection, call) {
                    observing!(hook = &mut *this.hook, named, &*this.parts);
                    observe::refused(hook);
                    this.state.set(State::Done);
                    return Poll::Ready(refused.into_answer());
                }
                this.state.set(next_attempt(call, &slot, this.body));
                call
            }
        };
        loop {
            match this.state.as_mut().project() {
                StateProj::Attempt { attempt } => {
                    let (span, inner) = (&*this.span, &mut *this.inner);
                    let (parts, body) = (&*this.parts, &*this.body);
                    let out = ready!(call.in_attempt(|| {
                        let _in_span = span.enter();
                        attempt.poll_with(cx, |step, cx| poll_step(step, cx, inner, parts, body))
                    }));
                    let out = call.settle::<Attempted<RB>, _>(&slot, out);
                    if let Err(failure) = &out {
                        // Said in its span, which ends with the attempt (not after the wait
                        // before the next one).
                        failure.in_span(this.span);
                        this.span.end();
                    }
                    observing!(hook = &mut *this.hook, named, parts);
                    match call.after(&out, &LayerClassifier(body), hook) {
                        None => {
                            this.state.set(State::Done);
                            return Poll::Ready(match out {
                                Ok(response) => Ok(response),
                                Err(failure) => failure.into_answer(),
                            });
                        }
                        Some(delay) => {
                            // As `retry_async!`: a recorded (virtual) or zero wait goes on at once.
                            if !clock::virtual_sleep(delay) && !delay.is_zero() {
                                let sleep = Box::pin(clock::tokio_sleep(delay));
                                this.state.set(State::Waiting { sleep });
                            } else {
                                this.state.set(next_attempt(call, &slot, body));
                                resend_span(this.span, call, parts);
                            }
                        }
                    }
                }
                StateProj::Waiting { sleep } => {
                    ready!(sleep.as_mut().poll(cx));
                    this.state.set(next_attempt(call, &slot, this.body));
                    resend_span(this.span, call, this.parts);
                }
                StateProj::Start { .. } | StateProj::Done => {
                    panic!("`HttpRetryFuture` polled after completion")
                }
            }
        }
    }
}

/// Bind `$hook` to what the engine is handed for one step: with the `tracing` or `metrics`
/// feature, the layer's hook [observed](observer) under the request's name; without them, the
/// layer's hook itself, so that the engine runs the code it ran before there were names.
macro_rules! observing {
    ($hook:ident = $layer_hook:expr, $named:expr, $parts:expr) => {
        #[cfg(any(feature = "tracing", feature = "metrics"))]
        let mut observed = observer($layer_hook, $named, $parts);
        #[cfg(any(feature = "tracing", feature = "metrics"))]
        let $hook = &mut observed;
        #[cfg(not(any(feature = "tracing", feature = "metrics")))]
        let $hook = {
            let _ = ($named, $parts);
            $layer_hook
        };
    };
}
use observing;

/// The hook the engine is handed for one step: the layer's, observed under the request's name
/// (written only if a report needs it), its failures shown with their `Display`.
#[cfg(any(feature = "tracing", feature = "metrics"))]
#[inline(always)]
fn observer<'a, H>(
    hook: &'a mut H,
    named: Option<&'static str>,
    parts: &'a Parts,
) -> observe::Observed<
    crate::run::plumbing::Displayed<observe::Borrowed<'a, H>>,
    crate::per_request::ByAuthority<'a, Parts>,
> {
    observe::observed_by(
        crate::run::plumbing::Displayed(observe::Borrowed(hook)),
        crate::per_request::ByAuthority {
            named,
            of: parts,
            authority: authority_of,
        },
    )
}

/// Begin the next attempt (the first included): counted by the engine, timed by the layer's
/// limit (or the time left before the deadline, if less), with its own copy of the body. Its
/// span, if it is a resend, is made by [`resend_span`] once the state is in place.
#[inline]
fn next_attempt<F, B, E>(
    call: &mut LayerCall,
    slot: &Option<(Duration, Conversion<TimedOut, E>)>,
    body: &ReplayBody<B>,
) -> State<F, B> {
    let step = Step::Unsent {
        copy: body.replay(),
        // The service the call was given is ready for the first attempt.
        ready: call.attempt() == 0,
    };
    let attempt = maybe_timed(
        slot,
        step,
        |limit| Box::pin(clock::tokio_sleep(limit)),
        || call.time_left(),
    );
    call.begin_attempt();
    State::Attempt { attempt }
}

/// A resend runs in a span of its own (`tracing`): made here, once the attempt has begun,
/// so that building its state (every first attempt's) makes no call.
#[inline(always)]
fn resend_span(span: &mut KeptSpan, call: &LayerCall, parts: &Parts) {
    if KeptSpan::MADE && call.attempt() > 1 {
        *span = KeptSpan::resend(call.attempt() - 1, &parts.method, || authority_of(parts));
    }
}

/// One poll of an attempt's request: make the inner service ready (from the second attempt
/// on), send the request, rebuilt from its parts and the attempt's copy of the body, and read
/// the answer, a retryable status being a failure.
fn poll_step<Svc, B, RB>(
    mut step: Pin<&mut Step<Svc::Future, B>>,
    cx: &mut Context<'_>,
    inner: &mut Svc,
    parts: &Parts,
    body: &ReplayBody<B>,
) -> Poll<Attempted<RB>>
where
    Svc: Service<Request<ReplayBody<B>>, Response = Response<RB>>,
    Svc::Error: Into<BoxError>,
{
    if let StepProj::Unsent { copy, ready } = step.as_mut().project() {
        if copy.is_some() && !*ready {
            if let Err(e) = std::task::ready!(inner.poll_ready(cx)) {
                return Poll::Ready(Err(HttpFailure::error_of(e.into())));
            }
            *ready = true;
        }
        let Some(copy) = copy.take() else {
            return Poll::Ready(Err(HttpFailure {
                outcome: Err(Box::new(BodyTooLong)),
                repeatable: false,
            }));
        };
        let answer = inner.call(Request::from_parts(parts.clone(), copy));
        step.set(Step::Sent { answer });
    }
    let StepProj::Sent { answer } = step.project() else {
        unreachable!("an attempt's request is sent above");
    };
    // Whether the body can go again is asked only of a failure: a success takes no lock.
    let outcome = match ready!(answer.poll(cx)) {
        Ok(response) if crate::http::status_class(response.status()).is_failure() => {
            Ok(Box::new(response))
        }
        Ok(response) => return Poll::Ready(Ok(response)),
        Err(e) => Err(e.into()),
    };
    Poll::Ready(Err(HttpFailure {
        outcome,
        repeatable: body.is_replayable(),
    }))
}

impl<Svc, B, H, T> fmt::Debug for HttpRetryFuture<Svc, B, H, T>
where
    Svc: Service<Request<ReplayBody<B>>>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Start { .. } => "start",
            State::Attempt { .. } => "attempt",
            State::Waiting { .. } => "waiting",
            State::Done => "done",
        };
        f.debug_struct("HttpRetryFuture")
            .field("state", &state)
            .field("attempt", &self.call.as_ref().map_or(0, Call::attempt))
            .field("request", &self.parts)
            .finish_non_exhaustive()
    }
}

/// A front end's `.named(..)`, as a future keeps it: nothing (no room, no store) without the
/// `tracing` and `metrics` features, which alone report it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GivenName {
    #[cfg(any(feature = "tracing", feature = "metrics"))]
    name: Option<&'static str>,
}

impl GivenName {
    #[inline(always)]
    pub(crate) fn new(name: Option<&'static str>) -> Self {
        let _ = name;
        GivenName {
            #[cfg(any(feature = "tracing", feature = "metrics"))]
            name,
        }
    }

    #[inline(always)]
    pub(crate) fn get(self) -> Option<&'static str> {
        #[cfg(any(feature = "tracing", feature = "metrics"))]
        {
            self.name
        }
        #[cfg(not(any(feature = "tracing", feature = "metrics")))]
        None
    }
}
