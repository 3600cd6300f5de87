//! [`FaultLayer`]: a script's faults in a tower stack of `http::Request` clients, below the
//! retry layer.

use super::double::delay;
use super::fault::whole_seconds;
use super::{Fault, FaultBody, Injected, Script};
use crate::tower::BoxError;
use ::http::{Request, Response, StatusCode, header};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tower_layer::Layer;
use tower_service::Service;

/// A tower [`Layer`] that gives each `http::Request` the next fault of its [`Script`]: place it
/// *below* [`HttpRetryLayer`](crate::tower::HttpRetryLayer), so each attempt of the retry loop
/// is one request through the script and the real retry stack is what is tested.
///
/// - `Status` and `RetryAfter` answer with an empty body; nothing is sent on. The response
///   body is a [`FaultBody`]: the inner service's body when the request was sent on, the
///   empty one otherwise, with the inner body's `Data` and `Error`. So the inner service may
///   answer any body, hyper's `Incoming` included (a `hyper_util` legacy `Client` is the inner
///   service as it is), and `HttpRetryLayer` above reads it as it reads any body.
/// - `Reset`, `Timeout` and `Lost` fail with an [`Injected`] error (boxed): `HttpRetryLayer`
///   classifies a reset as transient (nothing was sent: retried for any method) and a timeout
///   or a lost answer as idempotent-only (retried only for idempotent methods or requests with
///   an `Idempotency-Key`).
/// - `Lost` sends the request on and awaits the inner service's answer (or error), then drops it.
/// - `Delay` waits on the crate's clock (virtual under a paused tokio clock), then sends on.
///
/// The service's response is `Response<FaultBody<RB>>` for an inner `Response<RB>`; its error
/// is [`BoxError`]: the inner service's error, or an [`Injected`].
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use http::{Request, Response, StatusCode};
/// use retry_kit::faults::{Fault, FaultLayer, Script};
/// use retry_kit::tower::{HttpRetryLayer, ReplayBody};
/// use retry_kit::RetryPolicy;
/// use std::convert::Infallible;
/// use std::time::Duration;
/// use tower_layer::Layer;
/// use tower_service::Service;
///
/// // The service under test: here one that always answers 200.
/// #[derive(Clone)]
/// struct Ok200;
///
/// impl Service<Request<ReplayBody<String>>> for Ok200 {
///     type Response = Response<String>;
///     type Error = Infallible;
///     type Future = std::future::Ready<Result<Response<String>, Infallible>>;
///     fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Infallible>> {
///         std::task::Poll::Ready(Ok(()))
///     }
///     fn call(&mut self, _: Request<ReplayBody<String>>) -> Self::Future {
///         std::future::ready(Ok(Response::new(String::from("ok"))))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let script = Script::new([Fault::Status(503), Fault::Reset]);
/// let policy = RetryPolicy::fixed(Duration::from_millis(50)).attempts(3);
/// let retry = HttpRetryLayer::new(policy);
/// let mut client = retry.layer(FaultLayer::new(script.clone()).layer(Ok200));
/// let post = Request::post("http://orders.example/").body(String::from("{}")).unwrap();
/// let response = client.call(post).await.unwrap();
/// assert_eq!(response.status(), StatusCode::OK);
/// assert!(!response.body().is_injected()); // the inner service's body
/// assert_eq!(script.seen(), 3); // the 503, the reset (a POST, retried: nothing was sent), the 200
/// # }
/// ```
///
/// With tower's `ServiceBuilder` the layer comes after the retry layer:
/// `ServiceBuilder::new().layer(HttpRetryLayer::new(policy)).layer(FaultLayer::new(script)).service(client)`.
#[derive(Clone, Debug)]
pub struct FaultLayer {
    script: Script,
}

impl FaultLayer {
    /// Give each request the next fault of `script` (shared with the caller's clones of it).
    pub fn new(script: Script) -> Self {
        FaultLayer { script }
    }
}

impl<Svc> Layer<Svc> for FaultLayer {
    type Service = FaultService<Svc>;

    fn layer(&self, inner: Svc) -> Self::Service {
        FaultService {
            inner,
            script: self.script.clone(),
        }
    }
}

/// The service a [`FaultLayer`] makes.
#[derive(Clone, Debug)]
pub struct FaultService<Svc> {
    inner: Svc,
    script: Script,
}

impl<Svc, B, RB> Service<Request<B>> for FaultService<Svc>
where
    Svc: Service<Request<B>, Response = Response<RB>> + Clone + Send + 'static,
    Svc::Future: Send,
    Svc::Error: Into<BoxError>,
    B: Send + 'static,
    RB: Send + 'static,
{
    type Response = Response<FaultBody<RB>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<FaultBody<RB>>, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The service made ready is the one that is called; a clone stays for the next request.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let fault = self.script.next();
        Box::pin(async move {
            let passed = |answer: Result<Response<RB>, Svc::Error>| match answer {
                Ok(response) => Ok(response.map(FaultBody::passed)),
                Err(error) => Err(error.into()),
            };
            match fault {
                Fault::Pass => passed(inner.call(request).await),
                Fault::Delay(wait) => {
                    delay(wait).await;
                    passed(inner.call(request).await)
                }
                Fault::Lost => {
                    drop(inner.call(request).await);
                    Err(Injected::new(Fault::Lost).into())
                }
                Fault::Status(status) => Ok(answer(status, None)),
                Fault::RetryAfter(status, wait) => Ok(answer(status, Some(whole_seconds(wait)))),
                fault => Err(Injected::new(fault).into()),
            }
        })
    }
}

/// The response of a `Status` or `RetryAfter` fault, with an empty body.
fn answer<RB>(status: u16, retry_after: Option<u64>) -> Response<FaultBody<RB>> {
    let mut response = Response::new(FaultBody::injected());
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
    }
    response
}
