//! The inner service of an `HttpRetryLayer` receives each attempt's request with its body in a
//! `ReplayBody`: a service typed for the plain body is reported at the call as that unmet bound.
use http::{Request, Response};
use retry_kit::RetryPolicy;
use retry_kit::tower::HttpRetryLayer;
use std::convert::Infallible;
use std::future::{Ready, ready};
use std::task::{Context, Poll};
use tower_layer::Layer;
use tower_service::Service;

#[derive(Clone)]
struct Client;

impl Service<Request<String>> for Client {
    type Response = Response<()>;
    type Error = Infallible;
    type Future = Ready<Result<Response<()>, Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: Request<String>) -> Self::Future {
        ready(Ok(Response::new(())))
    }
}

async fn send() {
    let mut client = HttpRetryLayer::new(RetryPolicy::new()).layer(Client);
    let _ = client.call(Request::new(String::from("hello"))).await;
}

fn main() {
    let _ = send();
}
