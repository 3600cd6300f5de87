//! The circuit breakers of the peer crates, closed, admitting a call that succeeds: the same
//! work as a call through retry-kit's `static CircuitBreaker::new(5, 30 s)` (open after 5
//! consecutive failures, for 30 s), set up the same way. Timed by `protection.rs`, counted by
//! `tables --only protection/..` (`benches/instructions.sh protection`).
//!
//! Each breaker is a value shared through an `Arc`: a thread calls through a handle of its own
//! (`*_handle`), a clone onto the same state, as the threads of a server would.

use failsafe::CircuitBreaker as _;
use failsafe::backoff::{self, Constant};
use failsafe::failure_policy::{self, ConsecutiveFailures};
use std::convert::Infallible;
use std::future::{Future, Ready, ready};
use std::hint::black_box;
use std::pin::pin;
use std::sync::LazyLock;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tower_resilience_circuitbreaker::{CircuitBreaker, CircuitBreakerLayer, DefaultClassifier};
use tower_service::Service;

/// failsafe 1.3's breaker with the policy that matches `CLOSED`. (Its default policy also
/// keeps a success-rate window, which reads the clock on every record: more work than a
/// consecutive-failure count.) Its state sits behind a `parking_lot` mutex, taken once to
/// admit and once to record.
type Failsafe = failsafe::StateMachine<ConsecutiveFailures<Constant>, ()>;

static FAILSAFE: LazyLock<Failsafe> = LazyLock::new(|| {
    let policy =
        failure_policy::consecutive_failures(5, backoff::constant(Duration::from_secs(30)));
    failsafe::Config::new().failure_policy(policy).build()
});

/// A clone shares the state machine (an `Arc`), as clones handed to threads do.
pub fn failsafe_handle() -> Failsafe {
    FAILSAFE.clone()
}

/// `CircuitBreaker::call`: admission, the call, its success recorded.
pub fn failsafe_closed_call(breaker: &mut Failsafe) {
    let out = black_box(&*breaker).call(|| Ok::<u64, ()>(black_box(1)));
    black_box(out.is_ok());
}

/// The service behind tower-resilience's breaker: answers at once.
#[derive(Clone, Copy)]
pub struct Answer;

impl Service<u64> for Answer {
    type Response = u64;
    type Error = Infallible;
    type Future = Ready<Result<u64, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: u64) -> Self::Future {
        ready(Ok(req + 1))
    }
}

/// tower-resilience 0.14's breaker, through its tower service: its lowest public API (the
/// state, `Circuit`, is private to the crate). A call takes an async mutex (tokio's) to admit
/// and again to record, boxes its future, and reads the clock for slow-call detection.
type TowerResilience = CircuitBreaker<Answer, DefaultClassifier>;

static TOWER_RESILIENCE: LazyLock<TowerResilience> = LazyLock::new(|| {
    let layer = CircuitBreakerLayer::builder()
        .consecutive_failures(5)
        .wait_duration_in_open(Duration::from_secs(30))
        .build()
        .expect("a valid configuration");
    tower_layer::Layer::layer(&layer, Answer)
});

/// A clone shares the circuit (an `Arc` of the mutex), as the clones a server makes do.
pub fn tower_resilience_handle() -> TowerResilience {
    TOWER_RESILIENCE.clone()
}

/// `poll_ready` then `call`, the future driven to its end by polling with a no-op waker: the
/// least an executor can add. The mutex is uncontended alone; beside another thread, a poll
/// that finds it held returns `Pending` and the next poll finds the lock handed over.
pub fn tower_resilience_closed_call(service: &mut TowerResilience) {
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        match service.poll_ready(&mut cx) {
            Poll::Ready(ready) => break ready.expect("a closed breaker is ready"),
            Poll::Pending => std::hint::spin_loop(),
        }
    }
    let mut future = pin!(service.call(black_box(1)));
    let out = loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(out) => break out,
            Poll::Pending => std::hint::spin_loop(),
        }
    };
    black_box(out.expect("a closed breaker passes the answer on"));
}
