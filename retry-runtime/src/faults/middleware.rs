//! [`FaultMiddleware`]: a script's faults in a reqwest client, after the retry middleware.

use super::double::delay;
use super::fault::whole_seconds;
use super::{Fault, Injected, Script};
use ::http::{Extensions, StatusCode, header};
use ::reqwest::{Client, Method, Request, Response, ResponseBuilderExt, Url};
use ::reqwest_middleware::{Middleware, Next};
use bytes::Bytes;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Duration;
use tower_layer::Layer;
use tower_service::Service;

/// What reqwest's connector layers fail with.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A reqwest middleware that gives each request the next fault of its [`Script`]: add it
/// *after* [`RetryMiddleware`](crate::reqwest_middleware::RetryMiddleware) in the
/// `ClientBuilder` chain, so each attempt of the retry loop is one request through the script.
///
/// An injected failure is what the real one looks like to the code under test, at the
/// request's URL (`url()`):
///
/// - `Status` and `RetryAfter` answer a `reqwest::Response` with an empty body; nothing is
///   sent on.
/// - `Timeout` and `Lost` fail with reqwest's own timeout error, the one a request's
///   `timeout(..)` gives: `is_timeout()` (and `is_request()`, as any error of sending is),
///   nothing else (not `is_connect()`, not `is_decode()`). `RetryMiddleware` classifies it
///   idempotent-only.
/// - `Reset` fails with reqwest's own connect error, as for a connection refused or reset
///   before anything was sent: `is_connect()` and `is_request()`, with the [`Injected`] error
///   in its source chain. `RetryMiddleware` classifies it transient, as under `FaultLayer`.
/// - `Lost` sends the request on through the rest of the chain, awaits the answer, drops it.
/// - `Delay` waits on the crate's clock (virtual under a paused tokio clock), then sends on.
///
/// reqwest's errors have no public constructor, so the middleware has reqwest make them: it
/// sends a request of the same method to the same URL through a client of its own whose
/// connector never reaches the network (it fails at once with the `Injected` error for a
/// reset, and never finishes for a timeout, which a timeout of zero then ends). Should that
/// client fail to build (a TLS backend that does not start), the error is the one of reading
/// a body that fails with the `Injected` error, still classified as above.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::faults::{Fault, FaultMiddleware, Script};
/// use retry_kit::reqwest_middleware::RetryMiddleware;
/// use retry_kit::RetryPolicy;
/// use std::time::Duration;
///
/// let script = Script::new([Fault::Status(503), Fault::Lost]);
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
///     .with(RetryMiddleware::new(RetryPolicy::fixed(Duration::from_millis(10))))
///     .with(FaultMiddleware::new(script.clone()))
///     .build();
/// # drop(client);
/// ```
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::faults::{Fault, FaultMiddleware, Script};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // No retry middleware here: the injected timeout itself, as the caller would see it.
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
///     .with(FaultMiddleware::new(Script::new([Fault::Timeout])))
///     .build();
/// let url = "http://orders.example/orders/17";
/// let Err(reqwest_middleware::Error::Reqwest(error)) = client.get(url).send().await else {
///     panic!("the timeout is a reqwest error");
/// };
/// assert!(error.is_timeout() && !error.is_decode() && !error.is_connect());
/// assert_eq!(error.url().map(|u| u.as_str()), Some(url));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct FaultMiddleware {
    script: Script,
}

impl FaultMiddleware {
    /// Give each request the next fault of `script` (shared with the caller's clones of it).
    pub fn new(script: Script) -> Self {
        FaultMiddleware { script }
    }
}

#[async_trait::async_trait]
impl Middleware for FaultMiddleware {
    async fn handle(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> ::reqwest_middleware::Result<Response> {
        match self.script.next() {
            Fault::Pass => next.run(req, extensions).await,
            Fault::Delay(wait) => {
                delay(wait).await;
                next.run(req, extensions).await
            }
            Fault::Lost => {
                let (method, url) = (req.method().clone(), req.url().clone());
                drop(next.run(req, extensions).await);
                Err(failed(Fault::Lost, method, url).await)
            }
            Fault::Status(status) => Ok(answer(req.url(), status, None)),
            Fault::RetryAfter(status, wait) => {
                Ok(answer(req.url(), status, Some(whole_seconds(wait))))
            }
            fault => Err(failed(fault, req.method().clone(), req.url().clone()).await),
        }
    }
}

/// The response of a `Status` or `RetryAfter` fault to a request for `url`, with an empty
/// body.
fn answer(url: &Url, status: u16, retry_after: Option<u64>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = ::http::Response::builder().status(status).url(url.clone());
    if let Some(seconds) = retry_after {
        response = response.header(header::RETRY_AFTER, seconds);
    }
    // A status code, a URL and a number, each valid: the builder has nothing to refuse.
    let response = response
        .body(::reqwest::Body::from(Vec::new()))
        .unwrap_or_else(|_| ::http::Response::new(::reqwest::Body::from(Vec::new())));
    Response::from(response)
}

/// The `reqwest::Error` a request to `url` meets under `fault` (a reset, a timeout or a lost
/// answer), made by reqwest itself: the request is sent through a client whose connector
/// never reaches the network.
async fn failed(fault: Fault, method: Method, url: Url) -> ::reqwest_middleware::Error {
    let reset = fault == Fault::Reset;
    if let Some(client) = unreachable_client(reset) {
        let mut request = Request::new(method, url);
        if !reset {
            // The connector never finishes: reqwest's own timeout ends the request.
            *request.timeout_mut() = Some(Duration::ZERO);
        }
        if let Err(error) = client.execute(request).await {
            return ::reqwest_middleware::Error::Reqwest(error);
        }
    }
    read_failing(fault).await
}

/// A client whose every connection fails at once with an injected reset (`reset`), or never
/// finishes. Built once per kind, with no proxy and no retries of its own; `None` if reqwest
/// cannot build a client here.
fn unreachable_client(reset: bool) -> Option<&'static Client> {
    static REFUSING: OnceLock<Option<Client>> = OnceLock::new();
    static HANGING: OnceLock<Option<Client>> = OnceLock::new();
    let cell = if reset { &REFUSING } else { &HANGING };
    cell.get_or_init(|| {
        Client::builder()
            .no_proxy()
            .retry(::reqwest::retry::never())
            .connector_layer(Unreachable { reset })
            .build()
            .ok()
    })
    .as_ref()
}

/// A connector layer that never calls the connector it wraps.
#[derive(Clone, Copy)]
struct Unreachable {
    reset: bool,
}

impl<S> Layer<S> for Unreachable {
    type Service = UnreachableService<S>;

    fn layer(&self, _: S) -> Self::Service {
        UnreachableService {
            reset: self.reset,
            connection: std::marker::PhantomData,
        }
    }
}

/// The connector of [`Unreachable`]: answers no connection of the type `S` would make.
struct UnreachableService<S> {
    reset: bool,
    connection: std::marker::PhantomData<fn() -> S>,
}

impl<S> Clone for UnreachableService<S> {
    fn clone(&self) -> Self {
        UnreachableService {
            reset: self.reset,
            connection: std::marker::PhantomData,
        }
    }
}

impl<S, R> Service<R> for UnreachableService<S>
where
    S: Service<R>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Connecting<S::Response>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: R) -> Self::Future {
        Connecting {
            refused: self
                .reset
                .then(|| Box::new(Injected::new(Fault::Reset)) as _),
            connection: std::marker::PhantomData,
        }
    }
}

/// A connection attempt that fails with `refused`, or never ends.
struct Connecting<C> {
    refused: Option<BoxError>,
    connection: std::marker::PhantomData<fn() -> C>,
}

impl<C> Future for Connecting<C> {
    type Output = Result<C, BoxError>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        // Never woken when pending: the request's timeout wakes the task and ends it.
        match self.get_mut().refused.take() {
            Some(error) => Poll::Ready(Err(error)),
            None => Poll::Pending,
        }
    }
}

/// A `reqwest::Error` caused by `fault`'s [`Injected`] error: the error of reading a body that
/// fails with it at once. Only when no client of [`unreachable_client`] could be built.
async fn read_failing(fault: Fault) -> ::reqwest_middleware::Error {
    let body = ::reqwest::Body::wrap(Failing(Some(Injected::new(fault))));
    match Response::from(::http::Response::new(body)).bytes().await {
        Err(error) => ::reqwest_middleware::Error::Reqwest(error),
        // `Failing` yields its error on the first poll, so reading it cannot succeed; should
        // reqwest ever swallow body errors, still fail, with the fault itself.
        Ok(_) => ::reqwest_middleware::Error::middleware(Injected::new(fault)),
    }
}

/// A body whose first frame is an error.
struct Failing(Option<Injected>);

impl http_body::Body for Failing {
    type Data = Bytes;
    type Error = Injected;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Injected>>> {
        Poll::Ready(self.0.take().map(Err))
    }
}
