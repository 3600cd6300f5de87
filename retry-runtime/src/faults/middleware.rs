//! [`FaultMiddleware`]: a script's faults in a reqwest client, after the retry middleware.

use super::double::delay;
use super::fault::whole_seconds;
use super::{Fault, Injected, Script};
use ::http::{Extensions, StatusCode, header};
use ::reqwest::{Request, Response};
use ::reqwest_middleware::{Middleware, Next};
use bytes::Bytes;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A reqwest middleware that gives each request the next fault of its [`Script`]: add it
/// *after* [`RetryMiddleware`](crate::reqwest_middleware::RetryMiddleware) in the
/// `ClientBuilder` chain, so each attempt of the retry loop is one request through the script.
///
/// - `Status` and `RetryAfter` answer a `reqwest::Response` with an empty body, built from an
///   `http::Response` (so its `url()` is reqwest's placeholder, not the request's); nothing is
///   sent on.
/// - `Reset`, `Timeout` and `Lost` fail with a `reqwest::Error` whose source is the
///   [`Injected`] error. reqwest's errors cannot be built outside reqwest, so it is the error
///   of reading a body that fails with the `Injected`: for a timeout or a lost answer,
///   `is_timeout()` is true (the `Injected`'s source is an `io::Error` of kind `TimedOut`), so
///   `RetryMiddleware` classifies it idempotent-only, as a real timeout. For a reset, the
///   source is an `io::Error` of kind `ConnectionRefused`, which `Classify for reqwest::Error`
///   finds in the chain: transient, as under `FaultLayer` (nothing was sent).
/// - `Lost` sends the request on through the rest of the chain, awaits the answer, drops it.
/// - `Delay` waits on the crate's clock (virtual under a paused tokio clock), then sends on.
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
                drop(next.run(req, extensions).await);
                Err(failed(Fault::Lost).await)
            }
            Fault::Status(status) => Ok(answer(status, None)),
            Fault::RetryAfter(status, wait) => Ok(answer(status, Some(whole_seconds(wait)))),
            fault => Err(failed(fault).await),
        }
    }
}

/// The response of a `Status` or `RetryAfter` fault, with an empty body.
fn answer(status: u16, retry_after: Option<u64>) -> Response {
    let mut response = ::http::Response::new(::reqwest::Body::from(Vec::new()));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
    }
    Response::from(response)
}

/// A `reqwest::Error` caused by `fault`'s [`Injected`] error: the error of reading a body that
/// fails with it at once.
async fn failed(fault: Fault) -> ::reqwest_middleware::Error {
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
