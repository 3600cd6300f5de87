//! `fleet` (feature `redis`): fleet budgets and breakers used by every front end, and their
//! exchange, driven here through the in-process [`MemoryStore`] (the same exchange code the
//! background task runs against Redis; `tests/integration/tests/fleet.rs` runs it against a
//! real server and several processes). Time-based cases run on tokio's paused clock.
#![deny(warnings, unused_qualifications)]

use retry_kit::fleet::{Exchanging, FleetBreaker, FleetBudget, MemoryStore, Node, Push, Store};
use retry_kit::tower::RetryLayer;
use retry_kit::{CircuitOpen, CircuitState, Classify, Retry, RetryPolicy, retryable};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tower_layer::Layer;
use tower_service::Service;

#[derive(Debug, PartialEq, Classify)]
enum ApiError {
    #[classify(transient)]
    Unavailable,
    #[classify(transient)]
    Open,
}

impl From<CircuitOpen> for ApiError {
    fn from(_: CircuitOpen) -> Self {
        ApiError::Open
    }
}

static ATTRIBUTE: FleetBudget = FleetBudget::new("attribute", 10, 0.1);

#[retryable(attempts = 3, base = "1ms", budget = ATTRIBUTE)]
async fn failing(attempts: &AtomicU32) -> Result<(), ApiError> {
    attempts.fetch_add(1, Ordering::Relaxed);
    Err(ApiError::Unavailable)
}

#[tokio::test(start_paused = true)]
async fn the_attribute_charges_a_fleet_budget_and_the_fleet_sees_it() {
    let attempts = AtomicU32::new(0);
    failing(&attempts).await.unwrap_err();
    // Three failed attempts, three tokens, on the local bucket at once.
    assert_eq!(attempts.load(Ordering::Relaxed), 3);
    assert_eq!(ATTRIBUTE.local().tokens(), 7.0);
    assert!(ATTRIBUTE.is_fallback(), "nothing exchanged yet");

    // The process's node pushes them: the fleet's bucket (new, so full) pays them.
    let store = MemoryStore::new();
    Node::global().exchange(&store).await.unwrap();
    assert_eq!(store.budget_tokens("attribute"), Some(7_000_000));
    assert_eq!(ATTRIBUTE.tokens(), 7.0);
    assert!(!ATTRIBUTE.is_fallback());

    // Another process spends 3 more; this one's next exchange takes the fleet's count.
    let other = Node::new();
    let there = FleetBudget::new("attribute", 10, 0.1);
    other.join(&there);
    for _ in 0..3 {
        there.local().record_failure();
    }
    other.exchange(&store).await.unwrap();
    Node::global().exchange(&store).await.unwrap();
    assert_eq!(ATTRIBUTE.local().tokens(), 4.0);
    // At or below half: this process's next call makes one attempt, though its own calls
    // spent only three tokens.
    attempts.store(0, Ordering::Relaxed);
    failing(&attempts).await.unwrap_err();
    assert_eq!(attempts.load(Ordering::Relaxed), 1);
}

#[tokio::test(start_paused = true)]
async fn the_builder_and_the_tower_layer_take_a_fleet_budget_and_breaker() {
    static BUILDER: FleetBudget = FleetBudget::new("builder", 4, 0.1);
    let policy = RetryPolicy::fixed(Duration::ZERO).attempts(5);
    let mut attempts = 0;
    let _: Result<(), ApiError> = Retry::new(&policy).budget(&BUILDER).call(|| {
        attempts += 1;
        Err(ApiError::Unavailable)
    });
    // 4 tokens: a retry while more than 2 are left.
    assert_eq!(attempts, 2);
    assert_eq!(BUILDER.local().tokens(), 2.0);

    static LAYER_BUDGET: FleetBudget = FleetBudget::new("layer", 4, 0.1);
    static LAYER_BREAKER: FleetBreaker = FleetBreaker::new("layer", 3, Duration::from_secs(5));
    let calls = std::sync::Arc::new(AtomicU32::new(0));
    let mut service = RetryLayer::new(RetryPolicy::fixed(Duration::ZERO).attempts(5))
        .budget(&LAYER_BUDGET)
        .circuit(&LAYER_BREAKER)
        .layer(Failing(std::sync::Arc::clone(&calls)));
    assert_eq!(service.call(()).await, Err(ApiError::Unavailable));
    assert_eq!(
        calls.load(Ordering::Relaxed),
        2,
        "the budget stopped the third"
    );
    assert_eq!(service.call(()).await, Err(ApiError::Unavailable));
    // The third failure tripped the local breaker: refused before any attempt.
    assert_eq!(LAYER_BREAKER.local().state(), CircuitState::Open);
    assert_eq!(service.call(()).await, Err(ApiError::Open));
    assert_eq!(calls.load(Ordering::Relaxed), 3);
}

/// The HTTP layers take a fleet budget and breaker as they take a `&'static` budget and breaker
/// (every request uses the local ones); compiled with `http`.
#[cfg(feature = "http")]
#[test]
fn the_http_layer_takes_a_fleet_budget_and_breaker() {
    use retry_kit::tower::HttpRetryLayer;
    static HTTP_BUDGET: FleetBudget = FleetBudget::new("http", 10, 0.1);
    static HTTP_BREAKER: FleetBreaker = FleetBreaker::new("http", 3, Duration::from_secs(5));
    let layer = HttpRetryLayer::new(RetryPolicy::fixed(Duration::ZERO).attempts(2))
        .budget(&HTTP_BUDGET)
        .circuit(&HTTP_BREAKER);
    let _ = layer;
    // Nothing exchanged yet: both decide by their local rule.
    assert!(HTTP_BUDGET.is_fallback() && HTTP_BREAKER.is_fallback());
}

#[derive(Clone)]
struct Failing(std::sync::Arc<AtomicU32>);

impl Service<()> for Failing {
    type Response = ();
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<(), ApiError>> + Send>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ApiError>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, (): ()) -> Self::Future {
        self.0.fetch_add(1, Ordering::Relaxed);
        Box::pin(async { Err(ApiError::Unavailable) })
    }
}

/// A process's view of one fleet budget: its node and its copy.
fn process(name: &'static str, max: u32, ratio: f64) -> (Node, FleetBudget) {
    let node = Node::new();
    let budget = FleetBudget::new(name, max, ratio);
    assert!(node.join(&budget));
    (node, budget)
}

/// A store that runs `during` between receiving the pushes and answering: a call made while
/// the round trip is under way.
struct During<'a, F>(&'a MemoryStore, F);

impl<F: Fn() + Send + Sync> Store for During<'_, F> {
    fn exchange<'a>(&'a self, pushes: &'a [Push]) -> Exchanging<'a> {
        (self.1)();
        self.0.exchange(pushes)
    }
}

#[tokio::test]
async fn calls_made_while_an_exchange_is_under_way_are_kept() {
    let store = MemoryStore::new();
    let (node, budget) = process("in-flight", 10, 0.5);
    budget.local().record_failure();
    // The push reads 9; a failure lands before the pull; the fleet answers 9.
    let during = During(&store, || budget.local().record_failure());
    node.exchange(&during).await.unwrap();
    assert_eq!(store.budget_tokens("in-flight"), Some(9_000_000));
    assert_eq!(
        budget.local().tokens(),
        8.0,
        "the failure during the exchange is kept"
    );
    node.exchange(&store).await.unwrap();
    assert_eq!(
        store.budget_tokens("in-flight"),
        Some(8_000_000),
        "and pushed next time"
    );
}

#[tokio::test]
async fn a_store_that_is_down_leaves_the_local_rule_deciding_and_is_counted_once() {
    let store = MemoryStore::new();
    let (node, budget) = process("down", 10, 0.5);
    node.exchange(&store).await.unwrap();
    assert!(!budget.is_fallback());

    store.set_down(true);
    for _ in 0..3 {
        assert!(node.exchange(&store).await.is_err());
    }
    assert!(budget.is_fallback());
    assert_eq!(node.stats().fallbacks, 1, "one episode");
    assert_eq!(node.stats().failed, 3);
    // The local rule, same settings: 10 tokens, retries while more than 5.
    for _ in 0..5 {
        budget.local().record_failure();
    }
    assert!(!budget.local().allows_retry());

    // Meanwhile the rest of the fleet refunded (another process, same store once it is back).
    store.set_down(false);
    let (other, there) = process("down", 10, 0.5);
    other.exchange(&store).await.unwrap();
    there.local().record_success();
    other.exchange(&store).await.unwrap();
    // One exchange after the store answers, the process is on the fleet's state again, with
    // its five failures counted: 10 - 5 (the full bucket refunds nothing) = 5.
    node.exchange(&store).await.unwrap();
    assert!(!budget.is_fallback());
    assert_eq!(budget.tokens(), 5.0);
    assert_eq!(node.stats().fallbacks, 1);
}

/// The staleness bound of the module docs, on a worst case: `P` processes each see one
/// failure per interval while the fleet's bucket drains; they retry on their own copies until
/// an exchange tells them it is at half. The retries stay within `⌈max/2⌉ − 1 + 2 × P × n`.
#[tokio::test]
async fn retries_over_the_fleet_stay_within_the_staleness_bound() {
    const P: usize = 8;
    const MAX: u32 = 20;
    let store = MemoryStore::new();
    let processes: Vec<_> = (0..P).map(|_| process("bound", MAX, 0.0)).collect();
    let mut retries = 0;
    for _ in 0..20 {
        for (_, budget) in &processes {
            // One failure per process per interval; a retry when the local rule allows it.
            budget.local().record_failure();
            if budget.local().allows_retry() {
                retries += 1;
                budget.local().record_failure();
            }
        }
        for (node, _) in &processes {
            node.exchange(&store).await.unwrap();
        }
    }
    let single = (MAX as usize).div_ceil(2) - 1;
    let n = 1;
    assert!(retries > single, "{retries}: staleness lets some through");
    assert!(
        retries <= single + 2 * P * n,
        "{retries} > {single} + 2 × {P} × {n}"
    );
    // Per-process budgets would have let each process retry `single` times.
    assert!(retries < P * single);
}

#[tokio::test(start_paused = true)]
async fn a_trip_in_one_process_opens_the_breaker_in_all_and_one_probe_closes_it() {
    let store = MemoryStore::new();
    let open_for = Duration::from_secs(10);
    let nodes: Vec<_> = (0..3)
        .map(|_| {
            let node = Node::new();
            let breaker =
                FleetBreaker::new("probe", 2, open_for).sync_every(Duration::from_millis(50));
            assert!(node.join(&breaker));
            (node, breaker)
        })
        .collect();
    let exchange_all = || async {
        for (node, _) in &nodes {
            node.exchange(&store).await.unwrap();
        }
    };
    exchange_all().await;
    nodes[0].1.local().try_acquire().unwrap().failed();
    nodes[0].1.local().try_acquire().unwrap().failed();
    exchange_all().await;
    for (_, breaker) in &nodes {
        assert_eq!(breaker.state(), CircuitState::Open);
        let refused = breaker.local().try_acquire().unwrap_err();
        assert!(refused.retry_after() <= open_for + Duration::from_millis(100));
    }
    tokio::time::advance(open_for).await;
    // The fleet turns half-open; every process had calls refused, so all three ask for a
    // probe lease, and one gets it: one probe in the whole fleet.
    exchange_all().await;
    assert_eq!(nodes[1].1.state(), CircuitState::HalfOpen);
    let permits: Vec<_> = nodes
        .iter()
        .filter_map(|(_, b)| b.local().try_acquire().ok())
        .collect();
    assert_eq!(permits.len(), 1, "one probe in the whole fleet");
    for permit in permits {
        assert!(permit.is_probe());
        permit.succeeded();
    }
    // Its verdict closes the fleet's breaker, and every process's, in one exchange.
    exchange_all().await;
    for (_, breaker) in &nodes {
        assert_eq!(breaker.state(), CircuitState::Closed);
        assert_eq!(breaker.local().state(), CircuitState::Closed);
    }
}

/// With `metrics`, a fallback episode is counted once in `retry_kit_fleet_fallbacks_total`,
/// however many exchanges fail in it; a second episode counts again.
#[cfg(feature = "metrics")]
#[test]
fn each_fallback_episode_is_counted_once_in_metrics() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        rt.block_on(async {
            let store = MemoryStore::new();
            let (node, _budget) = process("metered", 10, 0.1);
            node.exchange(&store).await.unwrap();
            for down in [true, false, true] {
                store.set_down(down);
                for _ in 0..3 {
                    let _ = node.exchange(&store).await;
                }
            }
        })
    });
    let counted: Vec<_> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == "retry_kit_fleet_fallbacks_total")
        .map(|(.., value)| value)
        .collect();
    assert_eq!(counted, [DebugValue::Counter(2)]);
}
