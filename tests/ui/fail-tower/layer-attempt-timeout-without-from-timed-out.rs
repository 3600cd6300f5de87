use retry_kit::tower::RetryLayer;
use retry_kit::{Classify, RetryPolicy};
use std::future::{Ready, ready};
use std::task::{Context, Poll};
use std::time::Duration;
use tower_layer::Layer;
use tower_service::Service;

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

#[derive(Clone)]
struct Backend;

impl Service<String> for Backend {
    type Response = usize;
    type Error = Busy;
    type Future = Ready<Result<usize, Busy>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Busy>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, request: String) -> Self::Future {
        ready(Ok(request.len()))
    }
}

async fn send() {
    let layer = RetryLayer::new(RetryPolicy::fixed(Duration::from_millis(100)).attempts(3))
        .attempt_timeout(Duration::from_secs(1));
    let mut service = layer.layer(Backend);
    let _ = service.call("hello".to_owned()).await;
}

fn main() {
    let _ = send();
}
