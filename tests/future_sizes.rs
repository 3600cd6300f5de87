//! The async futures' sizes, pinned: every retryable future carries its body's future, the
//! loop's state and the attempt context, and nothing more (the SPEC's cost rule; what each word
//! is for is in benches/README.md, "future sizes"). The bounds are the sizes with every feature
//! on (`tracing` and `metrics` add the call's start time and its meter); a change that grows a future
//! fails here and says by how much.
#![deny(warnings, unused_qualifications)]

use retry_kit::{CircuitBreaker, Classify, RetryPolicy, retryable};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

impl From<retry_kit::CircuitOpen> for Busy {
    fn from(_: retry_kit::CircuitOpen) -> Self {
        Busy
    }
}

/// A future of exactly `N` bytes that is ready at once.
struct Inner<const N: usize> {
    data: [u8; N],
    out: PhantomData<fn() -> Result<u64, Busy>>,
}

impl<const N: usize> Inner<N> {
    fn new() -> Self {
        Inner {
            data: [1; N],
            out: PhantomData,
        }
    }
}

impl<const N: usize> Future for Inner<N> {
    type Output = Result<u64, Busy>;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(Ok(u64::from(self.data[N - 1])))
    }
}

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none")]
async fn macro_16() -> Result<u64, Busy> {
    Inner::<16>::new().await
}

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none")]
async fn macro_1k() -> Result<u64, Busy> {
    Inner::<1024>::new().await
}

static BREAKER: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(10));

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none", circuit = BREAKER)]
async fn macro_16_breaker() -> Result<u64, Busy> {
    Inner::<16>::new().await
}

#[retryable(
    attempts = 3,
    backoff = "fixed",
    base = "0ms",
    jitter = "none",
    idempotent,
    hedge = "50ms"
)]
async fn macro_16_hedged() -> Result<u64, Busy> {
    Inner::<16>::new().await
}

static POLICY: RetryPolicy = RetryPolicy::fixed(Duration::ZERO).attempts(3);

/// Each future's size over its body's `N` bytes is at most
/// what it is today.
#[test]
fn retryable_futures_carry_nothing_beyond_their_state() {
    let over = |size: usize, n: usize| size.saturating_sub(n);
    let cases = [
        (
            "macro, 16 B body",
            over(size_of_val(&macro_16()), 16),
            PIN_MACRO,
        ),
        (
            "macro, 1 KiB body",
            over(size_of_val(&macro_1k()), 1024),
            PIN_MACRO_1K,
        ),
        (
            "macro with a breaker",
            over(size_of_val(&macro_16_breaker()), 16),
            PIN_BREAKER,
        ),
        (
            "hedged macro",
            over(size_of_val(&macro_16_hedged()), 16),
            PIN_HEDGED,
        ),
        (
            "fn form",
            over(size_of_val(&POLICY.call_async(Inner::<16>::new)), 16),
            PIN_FN,
        ),
    ];
    for (name, over, pinned) in cases {
        eprintln!("{name}: {over} bytes over the body");
        assert!(
            over <= pinned,
            "{name}: {over} bytes over the body, pinned at {pinned}"
        );
    }
}

// With every feature on (CI's build); with the default features each is 40 bytes less (no
// meter and no start time for the events).
const PIN_MACRO: usize = 120;
const PIN_MACRO_1K: usize = 120;
const PIN_BREAKER: usize = 184;
// 256 before the cancelled hedges were reported (issue 40): see the closing note of session 11.
const PIN_HEDGED: usize = 272;
const PIN_FN: usize = 160;
