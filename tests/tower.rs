//! `tower::RetryLayer` (feature `tower`): a tower service retried by the crate's engine — the
//! request cloned for each attempt, the service made ready again before each retry, and the
//! policy, classification, breaker, attempt timeout and hook as everywhere else. Time-based
//! cases run on tokio's paused clock.
#![deny(warnings, unused_qualifications)]

use retry_kit::tower::RetryLayer;
use retry_kit::{
    CircuitBreaker, CircuitOpen, Classify, Failure, Next, RetryBudget, RetryPolicy, TimedOut,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tower_layer::Layer;
use tower_service::Service;

#[derive(Debug, PartialEq, Classify)]
enum ApiError {
    #[classify(transient)]
    Unavailable,
    #[classify(permanent)]
    BadRequest,
    #[classify(idempotent_only)]
    TimedOut,
    #[classify(transient)]
    Open,
}

impl From<TimedOut> for ApiError {
    fn from(_: TimedOut) -> Self {
        ApiError::TimedOut
    }
}

impl From<CircuitOpen> for ApiError {
    fn from(_: CircuitOpen) -> Self {
        ApiError::Open
    }
}

/// What a scripted service saw, shared by its clones.
#[derive(Default)]
struct Seen {
    requests: Mutex<Vec<String>>,
    readied: AtomicU32,
}

/// Answers each call with the next scripted outcome (the last one forever); a call made
/// without a `poll_ready` since the previous one is refused as a tower contract violation.
#[derive(Clone)]
struct Scripted {
    script: Arc<Mutex<Vec<Result<u32, ApiError>>>>,
    seen: Arc<Seen>,
    ready: bool,
    hang: bool,
}

impl Scripted {
    fn new(mut script: Vec<Result<u32, ApiError>>) -> Self {
        script.reverse();
        Scripted {
            script: Arc::new(Mutex::new(script)),
            seen: Arc::default(),
            ready: false,
            hang: false,
        }
    }
}

impl Service<String> for Scripted {
    type Response = u32;
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<u32, ApiError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ApiError>> {
        self.ready = true;
        self.seen.readied.fetch_add(1, Ordering::Relaxed);
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: String) -> Self::Future {
        assert!(std::mem::take(&mut self.ready), "called without poll_ready");
        self.seen.requests.lock().unwrap().push(req);
        if self.hang {
            return Box::pin(std::future::pending());
        }
        let mut script = self.script.lock().unwrap();
        let out = if script.len() > 1 {
            script.pop().unwrap()
        } else {
            match script.last().unwrap() {
                Ok(v) => Ok(*v),
                Err(ApiError::Unavailable) => Err(ApiError::Unavailable),
                Err(_) => Err(ApiError::BadRequest),
            }
        };
        Box::pin(std::future::ready(out))
    }
}

/// Drive a service the way tower callers do: ready, then call.
async fn ready_call<S: Service<String>>(
    service: &mut S,
    req: &str,
) -> Result<S::Response, S::Error> {
    std::future::poll_fn(|cx| service.poll_ready(cx)).await?;
    service.call(req.to_owned()).await
}

fn fixed(ms: u64, attempts: u32) -> RetryPolicy {
    RetryPolicy::fixed(Duration::from_millis(ms)).attempts(attempts)
}

#[tokio::test(start_paused = true)]
async fn transient_errors_are_retried_with_the_request_cloned_and_the_service_readied() {
    let inner = Scripted::new(vec![
        Err(ApiError::Unavailable),
        Err(ApiError::Unavailable),
        Ok(7),
    ]);
    let seen = inner.seen.clone();
    let mut service = RetryLayer::new(fixed(100, 5).jitter(retry_kit::Jitter::None)).layer(inner);
    let start = tokio::time::Instant::now();
    assert_eq!(ready_call(&mut service, "GET /a").await, Ok(7));
    assert_eq!(
        *seen.requests.lock().unwrap(),
        ["GET /a", "GET /a", "GET /a"]
    );
    // Readied once by the caller, then once before each of the two retries.
    assert_eq!(seen.readied.load(Ordering::Relaxed), 3);
    assert_eq!(start.elapsed(), Duration::from_millis(200));
}

#[tokio::test(start_paused = true)]
async fn a_permanent_error_is_answered_once() {
    let inner = Scripted::new(vec![Err(ApiError::BadRequest)]);
    let seen = inner.seen.clone();
    let mut service = RetryLayer::new(fixed(100, 5)).layer(inner);
    assert_eq!(
        ready_call(&mut service, "POST /x").await,
        Err(ApiError::BadRequest)
    );
    assert_eq!(seen.requests.lock().unwrap().len(), 1);
}

static RECORDS: Mutex<Vec<(u32, Next)>> = Mutex::new(Vec::new());

fn record(f: &Failure<'_, ApiError>) {
    RECORDS.lock().unwrap().push((f.attempt, f.next));
}

#[tokio::test(start_paused = true)]
async fn attempts_time_out_and_the_hook_sees_every_failure() {
    let mut inner = Scripted::new(vec![Ok(1)]);
    inner.hang = true;
    let seen = inner.seen.clone();
    let layer = RetryLayer::new(fixed(0, 3).idempotent(true))
        .attempt_timeout(Duration::from_secs(2))
        .on_failure(record as fn(&Failure<'_, ApiError>));
    let mut service = layer.layer(inner);
    let start = tokio::time::Instant::now();
    assert_eq!(
        ready_call(&mut service, "GET /slow").await,
        Err(ApiError::TimedOut)
    );
    assert_eq!(seen.requests.lock().unwrap().len(), 3);
    assert_eq!(start.elapsed(), Duration::from_secs(6));
    let records = RECORDS.lock().unwrap();
    assert_eq!(records.len(), 3);
    assert_eq!(
        records[2],
        (3, Next::Stop(retry_kit::StopReason::AttemptsExhausted))
    );
}

static BREAKER: CircuitBreaker = CircuitBreaker::new(2, Duration::from_secs(30));

#[tokio::test(start_paused = true)]
async fn the_breaker_opens_and_then_refuses_calls_without_reaching_the_service() {
    let inner = Scripted::new(vec![Err(ApiError::Unavailable)]);
    let seen = inner.seen.clone();
    let mut service = RetryLayer::new(fixed(0, 5)).circuit(&BREAKER).layer(inner);
    // Two failures open the breaker, which refuses the third attempt: the last error returns.
    assert_eq!(
        ready_call(&mut service, "a").await,
        Err(ApiError::Unavailable)
    );
    assert_eq!(seen.requests.lock().unwrap().len(), 2);
    // The next call makes no attempt: the breaker's refusal, through `From<CircuitOpen>`.
    assert_eq!(ready_call(&mut service, "b").await, Err(ApiError::Open));
    assert_eq!(seen.requests.lock().unwrap().len(), 2);
}

/// An error type that holds neither a `TimedOut` nor a `CircuitOpen`.
#[derive(Debug, PartialEq, Classify)]
#[classify(transient)]
struct Refused;

/// Refuses every call, with an error that has no `From` impls.
#[derive(Clone)]
struct Refusing(Arc<AtomicU32>);

impl Service<String> for Refusing {
    type Response = ();
    type Error = Refused;
    type Future = std::future::Ready<Result<(), Refused>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Refused>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: String) -> Self::Future {
        self.0.fetch_add(1, Ordering::Relaxed);
        std::future::ready(Err(Refused))
    }
}

static SPARE_BUDGET: RetryBudget = RetryBudget::new(10, 0.1);

#[tokio::test(start_paused = true)]
async fn without_a_timeout_or_a_breaker_the_error_type_needs_no_from_impls() {
    let calls = Arc::new(AtomicU32::new(0));
    let mut service = RetryLayer::new(fixed(0, 3))
        .budget(&SPARE_BUDGET)
        .layer(Refusing(calls.clone()));
    assert_eq!(ready_call(&mut service, "a").await, Err(Refused));
    // The inherent `call`, found by a method call, retries the same way.
    assert_eq!(service.call("b".to_owned()).await, Err(Refused));
    // The budget is asked too: each failed attempt costs a token, and a retry starts only while
    // more than half of the 10 are left, so the second call stops after its second attempt.
    assert_eq!(calls.load(Ordering::Relaxed), 5);
    assert_eq!(SPARE_BUDGET.tokens(), 5.0);
}

#[test]
fn the_service_is_clone_and_its_future_send_when_the_inner_ones_are() {
    fn clone_and_send<S: Clone + Service<String, Future = F>, F: Send>(_: &S) {}
    let service = RetryLayer::new(fixed(0, 2))
        .classify(|_: &ApiError| retry_kit::ErrorClass::Transient)
        .layer(Scripted::new(vec![Ok(1)]));
    clone_and_send(&service);
}

#[tokio::test(start_paused = true)]
async fn a_layer_made_from_a_cell_retries_each_call_by_the_policy_it_holds_then() {
    static POLICY: retry_kit::PolicyCell =
        retry_kit::PolicyCell::new(RetryPolicy::fixed(Duration::from_millis(10)).attempts(2));
    let inner = Scripted::new(vec![Err(ApiError::Unavailable)]);
    let seen = inner.seen.clone();
    let mut service = RetryLayer::from_cell(&POLICY).layer(inner);
    assert_eq!(
        ready_call(&mut service, "GET /a").await,
        Err(ApiError::Unavailable)
    );
    assert_eq!(seen.requests.lock().unwrap().len(), 2);

    // Reloaded: the service the layer already made reads the new policy at its next call.
    POLICY.set(RetryPolicy::fixed(Duration::from_millis(10)).attempts(4));
    assert_eq!(
        ready_call(&mut service, "GET /b").await,
        Err(ApiError::Unavailable)
    );
    assert_eq!(seen.requests.lock().unwrap().len(), 2 + 4);
}

/// Regression: `from_cell` took only a `&'static PolicyCell`, so one cell per downstream
/// read from a configuration map at run time needed `Box::leak`. An `Arc<PolicyCell>` is
/// taken too, and a reload through the `Arc` reaches the services the layer made.
#[tokio::test(start_paused = true)]
async fn a_layer_made_from_a_shared_cell_follows_its_reloads() {
    let cell = Arc::new(retry_kit::PolicyCell::new(
        RetryPolicy::fixed(Duration::from_millis(10)).attempts(2),
    ));
    let inner = Scripted::new(vec![Err(ApiError::Unavailable)]);
    let seen = inner.seen.clone();
    let mut service = RetryLayer::from_cell(Arc::clone(&cell)).layer(inner);
    assert_eq!(
        ready_call(&mut service, "GET /a").await,
        Err(ApiError::Unavailable)
    );
    assert_eq!(seen.requests.lock().unwrap().len(), 2);
    cell.set(RetryPolicy::fixed(Duration::from_millis(10)).attempts(3));
    assert_eq!(
        ready_call(&mut service, "GET /b").await,
        Err(ApiError::Unavailable)
    );
    assert_eq!(seen.requests.lock().unwrap().len(), 2 + 3);
    drop(service);
    assert_eq!(
        Arc::strong_count(&cell),
        1,
        "the layer held it, nothing leaked"
    );
}

static SPAWNED_BREAKER: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(10));
static SPAWNED_BUDGET: RetryBudget = RetryBudget::new(10, 0.5);

/// A service layered with a `'static` breaker and budget, called inside an `async` block that
/// is spawned (regression: "implementation of `ProtectionOf` is not general enough": the
/// service's impls held for `&'static` only, and proving the block `Send` asks for any
/// lifetime).
#[tokio::test(start_paused = true)]
async fn a_service_with_a_breaker_and_a_budget_can_be_called_in_a_spawned_async_block() {
    let inner = Scripted::new(vec![Err(ApiError::Unavailable), Ok(4)]);
    let seen = inner.seen.clone();
    let mut service = RetryLayer::new(fixed(0, 3))
        .circuit(&SPAWNED_BREAKER)
        .budget(&SPAWNED_BUDGET)
        .layer(inner);
    let task = tokio::spawn(async move { ready_call(&mut service, "a").await });
    assert_eq!(task.await.unwrap(), Ok(4));
    assert_eq!(*seen.requests.lock().unwrap(), ["a", "a"]);
}
