//! `AdaptiveThrottle`: the SRE book's client-side throttling, used where a budget is, refusing
//! first attempts as a breaker does; and the book's own claim reproduced: in steady overload
//! the backend receives about `K ×` what it accepts. Time is the crate's virtual clock
//! (`testing::record_sleeps`) and the draws are seeded.
#![deny(warnings, unused_qualifications)]

use retry_kit::{
    AdaptiveThrottle, CircuitOpen, Classify, Failure, Next, Retry, RetryPolicy, StopReason,
    retryable, testing,
};
use std::cell::Cell;
use std::time::Duration;

#[derive(Debug, PartialEq, Classify)]
enum ApiError {
    #[classify(transient)]
    Overloaded,
    #[classify(permanent)]
    NotFound,
    #[classify(transient)]
    Throttled,
}

impl From<CircuitOpen> for ApiError {
    fn from(_: CircuitOpen) -> Self {
        ApiError::Throttled
    }
}

static REFUSING: AdaptiveThrottle = AdaptiveThrottle::new(2.0, Duration::from_secs(60));

#[retryable(attempts = 1, budget = REFUSING)]
fn overloaded(sent: &Cell<u32>) -> Result<(), ApiError> {
    sent.set(sent.get() + 1);
    Err(ApiError::Overloaded)
}

#[test]
fn a_refused_first_attempt_fails_as_a_refusing_breakers_does_without_running_the_body() {
    testing::seed_jitter(1);
    let sent = Cell::new(0);
    let mut throttled = 0;
    testing::record_sleeps(|| {
        for _ in 0..1000 {
            match overloaded(&sent) {
                Err(ApiError::Throttled) => throttled += 1,
                Err(ApiError::Overloaded) => {}
                other => panic!("{other:?}"),
            }
        }
    });
    // Nothing accepted: the probability climbs to requests / (requests + 1); the backend got
    // only the first few attempts.
    assert_eq!(sent.get() + throttled, 1000);
    assert!(sent.get() < 20, "{} sent", sent.get());
    assert!(REFUSING.reject_probability() > 0.99);
}

#[test]
fn answers_count_as_accepts_so_a_healthy_backend_is_never_throttled() {
    static HEALTHY: AdaptiveThrottle = AdaptiveThrottle::new(2.0, Duration::from_secs(60));
    let policy = RetryPolicy::fixed(Duration::ZERO).attempts(1);
    testing::seed_jitter(2);
    testing::record_sleeps(|| {
        for i in 0..1000 {
            let result: Result<(), ApiError> = Retry::new(&policy).budget(&HEALTHY).call(|| {
                // Half successes, half permanent errors: every request got an answer.
                if i % 2 == 0 {
                    Ok(())
                } else {
                    Err(ApiError::NotFound)
                }
            });
            assert_ne!(result, Err(ApiError::Throttled));
        }
    });
    assert_eq!(HEALTHY.counts_now(), (1000, 1000));
    assert_eq!(HEALTHY.reject_probability(), 0.0);
}

#[test]
fn a_refused_retry_stops_the_call_with_budget_exhausted() {
    static RETRIES: AdaptiveThrottle = AdaptiveThrottle::new(2.0, Duration::from_secs(60));
    // The backend accepted the last 10 requests: the first attempt goes through (p = 0), and
    // as its retries fail the probability climbs ((requests − 2 × 10) / (requests + 1)).
    for _ in 0..10 {
        RETRIES.record(true);
    }
    testing::seed_jitter(3);
    let policy = RetryPolicy::fixed(Duration::from_millis(1)).attempts(50);
    let stopped = Cell::new(None);
    let on_failure = |f: &Failure<'_, ApiError>| {
        if let Next::Stop(reason) = f.next {
            stopped.set(Some(reason));
        }
    };
    let (result, _) = testing::record_sleeps(|| {
        Retry::new(&policy)
            .budget(&RETRIES)
            .on_failure(on_failure)
            .call(|| Err::<(), _>(ApiError::Overloaded))
    });
    assert_eq!(result, Err(ApiError::Overloaded), "the last real error");
    assert_eq!(stopped.get(), Some(StopReason::BudgetExhausted));
}

/// The SRE book's claim ("Handling Overload", client-side throttling): a backend that accepts
/// 100 requests per second, behind clients that want 1 000, receives about `K` × 100 = 200
/// per second once the throttle's window has filled, the clients rejecting the rest locally.
/// Five minutes of tokio's paused clock, one request per millisecond; the backend accepts the
/// first 100 requests it receives in each second and rejects the rest (a retryable failure).
#[tokio::test(start_paused = true)]
async fn in_steady_overload_the_backend_receives_about_k_times_what_it_accepts() {
    for k in [2.0, 1.5] {
        let (received, accepted) = overload(k, 1000, 100).await;
        let ratio = received / accepted;
        assert!(
            (accepted - 100.0).abs() < 1.0,
            "k = {k}: {accepted} accepted/s"
        );
        assert!(
            (ratio - k).abs() < 0.1 * k,
            "k = {k}: the backend received {received}/s for {accepted}/s accepted"
        );
    }
}

/// The overload run: per-second rates received and accepted by the backend over the last
/// three minutes of five.
async fn overload(k: f64, wanted: u32, capacity: u64) -> (f64, f64) {
    let throttle = AdaptiveThrottle::new(k, Duration::from_secs(120));
    testing::seed_jitter(4);
    let (mut received, mut accepted) = (0u64, 0u64);
    for second in 0..300u64 {
        let mut served = 0;
        for _ in 0..wanted {
            if throttle.try_admit().is_ok() {
                let ok = served < capacity;
                served += u64::from(ok);
                if ok {
                    throttle.accepted();
                }
                if second >= 120 {
                    received += 1;
                    accepted += u64::from(ok);
                }
            }
            tokio::time::advance(Duration::from_secs(1) / wanted).await;
        }
    }
    (received as f64 / 180.0, accepted as f64 / 180.0)
}

/// A tower `RetryLayer` takes a throttle as it takes a budget; a refused first attempt is the
/// service's `E::from(CircuitOpen)`, and the inner service never sees it.
#[cfg(feature = "tower")]
#[tokio::test(start_paused = true)]
async fn the_tower_layer_takes_a_throttle_and_refuses_first_attempts() {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::task::{Context, Poll};
    use tower_layer::Layer;
    use tower_service::Service;

    #[derive(Clone)]
    struct Overloaded(Arc<AtomicU32>);
    impl Service<()> for Overloaded {
        type Response = ();
        type Error = ApiError;
        type Future = Pin<Box<dyn Future<Output = Result<(), ApiError>> + Send>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ApiError>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, (): ()) -> Self::Future {
            self.0.fetch_add(1, Ordering::Relaxed);
            Box::pin(async { Err(ApiError::Overloaded) })
        }
    }

    static LAYER: AdaptiveThrottle = AdaptiveThrottle::new(2.0, Duration::from_secs(60));
    testing::seed_jitter(5);
    let sent = Arc::new(AtomicU32::new(0));
    let mut service =
        retry_kit::tower::RetryLayer::new(RetryPolicy::fixed(Duration::ZERO).attempts(1))
            .budget(&LAYER)
            .layer(Overloaded(Arc::clone(&sent)));
    let mut throttled = 0;
    for _ in 0..200 {
        if service.call(()).await == Err(ApiError::Throttled) {
            throttled += 1;
        }
    }
    assert_eq!(sent.load(Ordering::Relaxed) + throttled, 200);
    assert!(throttled > 150, "{throttled} refused locally");
}

/// The HTTP layer takes a throttle where it takes a budget: a request refused locally is an
/// error without a request sent (the server's count shows it).
#[cfg(all(feature = "tower", feature = "http"))]
#[tokio::test(start_paused = true)]
async fn the_http_layer_takes_a_throttle_and_refuses_requests_locally() {
    use retry_kit::tower::{BoxError, HttpRetryLayer, ReplayBody};
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::task::{Context, Poll};
    use tower_layer::Layer;
    use tower_service::Service;

    /// Answers every request with a 503.
    #[derive(Clone)]
    struct Unavailable(Arc<AtomicU32>);
    impl Service<http::Request<ReplayBody<String>>> for Unavailable {
        type Response = http::Response<&'static str>;
        type Error = BoxError;
        type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, _: http::Request<ReplayBody<String>>) -> Self::Future {
            self.0.fetch_add(1, Ordering::Relaxed);
            let answer = http::Response::builder().status(503).body("").unwrap();
            Box::pin(async move { Ok(answer) })
        }
    }

    static HTTP: AdaptiveThrottle = AdaptiveThrottle::new(2.0, Duration::from_secs(60));
    testing::seed_jitter(6);
    let received = Arc::new(AtomicU32::new(0));
    let mut client = HttpRetryLayer::new(RetryPolicy::fixed(Duration::ZERO).attempts(1))
        .budget(&HTTP)
        .layer(Unavailable(Arc::clone(&received)));
    let mut refused = 0;
    for _ in 0..200 {
        let request = http::Request::get("http://api.test/x")
            .body(String::new())
            .unwrap();
        match client.call(request).await {
            Ok(answer) => assert_eq!(answer.status(), 503),
            Err(_) => refused += 1,
        }
    }
    assert_eq!(received.load(Ordering::Relaxed) + refused, 200);
    assert!(refused > 150, "{refused} refused locally");
}
