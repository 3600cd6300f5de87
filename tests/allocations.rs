//! What a call allocates, counted by a global allocator on the test's own thread: a
//! `#[retryable]` success allocates nothing, with the `metrics` feature too (issue: one
//! allocation per call for its labels, with or without a recorder); a hedged call allocates
//! nothing until its hedge fires (issue: 2 allocations, the first attempt boxed in a `Vec`).

use retry_kit::{Retry, RetryPolicy, retryable};
use std::io;
use std::time::Duration;

mod counting;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

/// The allocations `future` makes on this thread while it runs to completion.
async fn allocations_of<T>(future: impl std::future::Future<Output = T>) -> (T, usize) {
    counting::start();
    let out = future.await;
    (out, counting::stop())
}

#[retryable(attempts = 3, idempotent, hedge = "50ms")]
async fn answers_at_once() -> Result<u32, io::Error> {
    Ok(7)
}

#[retryable(attempts = 3, idempotent)]
async fn answers_at_once_unhedged() -> Result<u32, io::Error> {
    Ok(7)
}

/// What the same call costs without hedging: nothing, with or without the `metrics` feature
/// (the attribute's labels are made once, in a `static` per function).
async fn unhedged() -> usize {
    let _ = answers_at_once_unhedged().await;
    let (out, allocations) = allocations_of(answers_at_once_unhedged()).await;
    assert_eq!(out.unwrap(), 7);
    assert_eq!(allocations, 0);
    allocations
}

#[retryable(attempts = 3, idempotent, hedge = "50ms")]
async fn answers_after(delay: Duration) -> Result<u32, io::Error> {
    let attempt = retry_kit::current_attempt().map_or(0, |a| a.number());
    if attempt == 1 {
        tokio::time::sleep(delay).await;
    }
    Ok(attempt)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_hedged_call_whose_attempt_answers_before_the_hedge_allocates_nothing() {
    // Warm up what tokio allocates once per runtime (the timer wheel's first use).
    let _ = answers_after(Duration::from_millis(10)).await;

    let unhedged = unhedged().await;

    let (out, allocations) = allocations_of(answers_at_once()).await;
    assert_eq!(out.unwrap(), 7);
    assert_eq!(allocations, unhedged, "answered at once");

    let (out, allocations) = allocations_of(answers_after(Duration::from_millis(10))).await;
    assert_eq!(out.unwrap(), 1);
    assert_eq!(
        allocations, unhedged,
        "answered after 10 ms, before the 50 ms hedge"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_builders_hedged_call_allocates_nothing_until_the_hedge_fires() {
    let policy = RetryPolicy::new().attempts(3).idempotent(true);
    let hedged = || {
        Retry::new(&policy)
            .hedge(Duration::from_millis(50))
            .expect("idempotent")
            .call_async(|| async {
                let attempt = retry_kit::current_attempt().map_or(0, |a| a.number());
                if attempt == 1 {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Ok::<_, io::Error>(attempt)
            })
    };
    let _ = hedged().await;
    // The same builder without `hedge`: nothing, or with `metrics` what a success of a builder
    // (whose labels are made per measurement) costs.
    let (_, unhedged) =
        allocations_of(Retry::new(&policy).call_async(|| async { Ok::<_, io::Error>(1) })).await;
    if cfg!(not(feature = "metrics")) {
        assert_eq!(unhedged, 0);
    }

    let (out, allocations) = allocations_of(
        Retry::new(&policy)
            .hedge(Duration::from_millis(50))
            .expect("idempotent")
            .call_async(|| async { Ok::<_, io::Error>(1) }),
    )
    .await;
    assert_eq!(out.unwrap(), 1);
    assert_eq!(allocations, unhedged);

    // Once the hedge fires, the attempt beside the slow one is boxed: the count sees it, so a
    // zero above is not a counter that never counts.
    let (out, allocations) = allocations_of(hedged()).await;
    assert_eq!(out.unwrap(), 2, "the hedge answered first");
    assert!(allocations > unhedged, "the hedge was boxed: {allocations}");
}

#[retryable(attempts = 3)]
fn loads() -> Result<u32, io::Error> {
    Ok(3)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_success_allocates_nothing_with_metrics_on_and_no_recorder() {
    let _ = loads();
    let (out, allocations) = allocations_of(async { loads() }).await;
    assert_eq!(out.unwrap(), 3);
    assert_eq!(allocations, 0, "sync");
    let (out, allocations) = allocations_of(answers_at_once_unhedged()).await;
    assert_eq!(out.unwrap(), 7);
    assert_eq!(allocations, 0, "async");
}

/// A layer keyed by host finds the request's entry in its `PerKey` without allocating: the
/// `host:port` text is written on the stack (issue: a `String` and a boxed copy per request).
#[cfg(all(feature = "tower", feature = "http"))]
mod per_host {
    use super::counting;
    use http::{Request, Response};
    use retry_kit::tower::{HttpRetryLayer, ReplayBody};
    use retry_kit::{CircuitBreaker, PerKey, RetryPolicy};
    use std::convert::Infallible;
    use std::future::{Ready, ready};
    use std::task::{Context, Poll};
    use std::time::Duration;
    use tower_layer::Layer;
    use tower_service::Service;

    static PER_HOST: PerKey<CircuitBreaker> =
        PerKey::new(CircuitBreaker::new(5, Duration::from_secs(30)));

    /// Answers 200 at once, allocating nothing.
    #[derive(Clone)]
    struct Answers;

    impl Service<Request<ReplayBody<String>>> for Answers {
        type Response = Response<()>;
        type Error = Infallible;
        type Future = Ready<Result<Response<()>, Infallible>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, _: Request<ReplayBody<String>>) -> Self::Future {
            ready(Ok(Response::new(())))
        }
    }

    /// What one request through `client` allocates, the request made beforehand.
    async fn allocations<S>(client: &mut S) -> usize
    where
        S: Service<Request<String>, Response = Response<()>>,
        S::Error: std::fmt::Debug,
    {
        let request = Request::get("http://api.example/")
            .body(String::new())
            .unwrap();
        counting::start();
        let response = client.call(request).await;
        let allocated = counting::stop();
        assert!(response.unwrap().status().is_success());
        allocated
    }

    #[tokio::test]
    async fn a_per_host_breaker_costs_a_request_no_allocation_once_its_host_has_an_entry() {
        let policy = RetryPolicy::new();
        let mut shared = HttpRetryLayer::new(policy).layer(Answers);
        let mut per_host = HttpRetryLayer::new(policy)
            .circuit(&PER_HOST)
            .layer(Answers);
        // The host's entry is made, and labelled, by the first request.
        allocations(&mut per_host).await;
        assert_eq!(
            PER_HOST.get("api.example:80").key().as_deref(),
            Some("api.example:80")
        );
        let without = allocations(&mut shared).await;
        assert_eq!(allocations(&mut per_host).await, without);
    }
}
