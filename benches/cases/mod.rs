//! The contenders and the cases, shared by `overhead.rs` (timing, criterion) and `tables.rs`
//! (allocations per call, future sizes, the summary of timing runs).
//!
//! Every contender retries the same operation under the same schedule: at most 3 attempts, a
//! fixed zero delay, no jitter, and only `BenchError::Reset` (transient) retried. Each is an
//! `#[inline(never)]` function, so what is timed is one real call of a retried function, as on a
//! hot path.
//!
//! - `hand`: the floor, the loop a careful engineer writes by hand. It skips zero-length sleeps
//!   (as `std::thread::sleep(ZERO)` does for sync code) and has no jitter, no context and no
//!   records.
//! - `hand+ctx`: the same loop publishing what the spec makes every retryable call publish (the
//!   attempt number, a key slot and the inherited deadline, behind a thread-local pointer set
//!   around each attempt): the floor of any implementation of `current_attempt()` and deadline
//!   inheritance.
//! - `macro`: `#[retryable]`.
//! - `fn`: the non-macro form, `RetryPolicy::call` / `call_async` and the `Retry` builder.
//! - `backon`, `tokio-retry2`, `retry`, `backoff`: the popular crates, each configured for the
//!   same schedule in its own idiom (see each function).
// Each bench binary uses a different subset of what is here.
#![allow(dead_code)]

use retry_kit::{
    CircuitBreaker, CircuitOpen, ErrorClass, Failure, Jitter, Retry, RetryPolicy, retryable,
};
use std::cell::Cell;
use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Total attempts, the first included.
pub const ATTEMPTS: u32 = 3;
/// The wait between attempts.
pub const DELAY: Duration = Duration::ZERO;
/// The deadline of the deadline cases: far enough never to be reached.
pub const DEADLINE: Duration = Duration::from_secs(3600);

/// The schedule of every contender, as a retry-kit policy.
pub const POLICY: RetryPolicy = RetryPolicy::fixed(DELAY)
    .attempts(ATTEMPTS)
    .jitter(Jitter::None);
/// The same with a deadline.
pub const POLICY_DEADLINE: RetryPolicy = POLICY.deadline(DEADLINE);

/// The operation's error: one transient and one permanent variant, and the breaker's refusal
/// (a unit variant, so that the error stays one byte in every case).
#[derive(Debug, retry_kit::Classify)]
pub enum BenchError {
    #[classify(transient)]
    Reset,
    #[classify(permanent)]
    Invalid,
    #[classify(permanent)]
    Open,
}

/// What `circuit = ...` needs of the error type: a refused first attempt becomes `Open`.
impl From<CircuitOpen> for BenchError {
    fn from(_: CircuitOpen) -> Self {
        BenchError::Open
    }
}

/// The breaker of the breaker cases, shared by hand, macro and fn. It opens after 5 consecutive
/// failures; a retry3 call fails twice and then succeeds (which resets the count), so it stays
/// closed and every case measures the closed breaker's hot path: one acquire and one record
/// per attempt.
pub static BREAKER: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(30));

pub fn transient(e: &BenchError) -> bool {
    retry_kit::Classify::class(e) == ErrorClass::Transient
}

// ---------------------------------------------------------------------------------------------
// The operations.

/// Succeeds at once.
#[inline]
pub fn succeed(x: u64) -> Result<u64, BenchError> {
    Ok(black_box(x))
}

/// Fails with `Reset` while `fails` is positive (counting it down), then succeeds.
#[inline]
pub fn flaky(fails: &Cell<u32>) -> Result<u64, BenchError> {
    let left = black_box(fails.get());
    if left > 0 {
        fails.set(left - 1);
        Err(BenchError::Reset)
    } else {
        Ok(7)
    }
}

/// The failure hook of the hook cases: what a user's hook does at least, touch the record.
pub static HOOK_CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn hook_hand(attempt: u32, error: &BenchError, elapsed: Duration) {
    black_box((attempt, error, elapsed));
    HOOK_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

pub fn hook(f: &Failure<'_, BenchError>) {
    hook_hand(f.attempt, f.error, f.elapsed);
}

// ---------------------------------------------------------------------------------------------
// Hand-written loops: the floor.

#[inline(never)]
pub fn hand_sync<T>(mut op: impl FnMut() -> Result<T, BenchError>) -> Result<T, BenchError> {
    let mut attempt = 1;
    loop {
        match op() {
            Ok(v) => return Ok(v),
            Err(e) if attempt < ATTEMPTS && transient(&e) => {
                attempt += 1;
                std::thread::sleep(DELAY);
            }
            Err(e) => return Err(e),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The hand-written loop plus what the spec makes every retryable call publish: the floor of any
// implementation of `current_attempt()` and deadline inheritance.

/// The attempt context a hand-written loop would publish for `current_attempt()` and nested
/// calls: the attempt number, a slot for the idempotency key (drawn on first use, never here),
/// and the deadline inherited from an enclosing call.
pub struct HandCtx {
    attempt: Cell<u32>,
    key: Cell<[u64; 2]>,
    deadline: Option<Instant>,
}

thread_local! {
    static HAND_CURRENT: Cell<*const HandCtx> = const { Cell::new(std::ptr::null()) };
}

impl HandCtx {
    /// A context inheriting the enclosing one's deadline, as a nested call must.
    #[inline]
    fn inheriting() -> Self {
        let outer = HAND_CURRENT.with(Cell::get);
        // SAFETY: only `Entered` installs a pointer, for as long as the context it names lives.
        let deadline = unsafe { outer.as_ref() }.and_then(|ctx| ctx.deadline);
        HandCtx {
            attempt: Cell::new(0),
            key: Cell::new([0; 2]),
            deadline,
        }
    }

    /// Count an attempt and publish this context until the guard drops (also on unwind).
    #[inline]
    fn enter(&self) -> HandEntered {
        self.attempt.set(self.attempt.get() + 1);
        black_box(&self.key);
        HandEntered(HAND_CURRENT.with(|c| c.replace(self)))
    }
}

/// Restores the previously published context.
pub struct HandEntered(*const HandCtx);

impl Drop for HandEntered {
    #[inline]
    fn drop(&mut self) {
        HAND_CURRENT.with(|c| c.set(self.0));
    }
}

#[inline(never)]
pub fn hand_ctx_sync<T>(mut op: impl FnMut() -> Result<T, BenchError>) -> Result<T, BenchError> {
    let ctx = HandCtx::inheriting();
    loop {
        let out = {
            let _entered = ctx.enter();
            op()
        };
        match out {
            Ok(v) => return Ok(v),
            Err(e) if ctx.attempt.get() < ATTEMPTS && transient(&e) => {
                std::thread::sleep(DELAY);
            }
            Err(e) => return Err(e),
        }
    }
}

/// An attempt's future with `ctx` published around each of its polls.
struct HandInCtx<'c, F> {
    ctx: &'c HandCtx,
    body: F,
}

impl<F: Future> Future for HandInCtx<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `body` is never moved out of `self`, and there is no `Drop` impl.
        let this = unsafe { self.get_unchecked_mut() };
        let _entered = HandEntered(HAND_CURRENT.with(|c| c.replace(this.ctx)));
        unsafe { Pin::new_unchecked(&mut this.body) }.poll(cx)
    }
}

#[inline(never)]
pub async fn hand_ctx_async<T, Fut>(mut op: impl FnMut() -> Fut) -> Result<T, BenchError>
where
    Fut: Future<Output = Result<T, BenchError>>,
{
    let ctx = HandCtx::inheriting();
    loop {
        ctx.attempt.set(ctx.attempt.get() + 1);
        let out = HandInCtx {
            ctx: &ctx,
            body: op(),
        }
        .await;
        match out {
            Ok(v) => return Ok(v),
            Err(e) if ctx.attempt.get() < ATTEMPTS && transient(&e) => {
                if !DELAY.is_zero() {
                    tokio::time::sleep(DELAY).await;
                }
            }
            Err(e) => return Err(e),
        }
    }
}

#[inline(never)]
pub fn hand_sync_deadline<T>(
    mut op: impl FnMut() -> Result<T, BenchError>,
) -> Result<T, BenchError> {
    let start = Instant::now();
    let mut attempt = 1;
    loop {
        match op() {
            Ok(v) => return Ok(v),
            Err(e)
                if attempt < ATTEMPTS
                    && transient(&e)
                    && start.elapsed().saturating_add(DELAY) <= DEADLINE =>
            {
                attempt += 1;
                std::thread::sleep(DELAY);
            }
            Err(e) => return Err(e),
        }
    }
}

#[inline(never)]
pub fn hand_sync_hook<T>(mut op: impl FnMut() -> Result<T, BenchError>) -> Result<T, BenchError> {
    let start = Instant::now();
    let mut attempt = 1;
    loop {
        match op() {
            Ok(v) => return Ok(v),
            Err(e) => {
                hook_hand(attempt, &e, start.elapsed());
                if attempt < ATTEMPTS && transient(&e) {
                    attempt += 1;
                    std::thread::sleep(DELAY);
                } else {
                    return Err(e);
                }
            }
        }
    }
}

#[inline(never)]
pub async fn hand_async<T, Fut>(mut op: impl FnMut() -> Fut) -> Result<T, BenchError>
where
    Fut: Future<Output = Result<T, BenchError>>,
{
    let mut attempt = 1;
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if attempt < ATTEMPTS && transient(&e) => {
                attempt += 1;
                if !DELAY.is_zero() {
                    tokio::time::sleep(DELAY).await;
                }
            }
            Err(e) => return Err(e),
        }
    }
}

#[inline(never)]
pub async fn hand_async_deadline<T, Fut>(mut op: impl FnMut() -> Fut) -> Result<T, BenchError>
where
    Fut: Future<Output = Result<T, BenchError>>,
{
    let start = tokio::time::Instant::now();
    let mut attempt = 1;
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e)
                if attempt < ATTEMPTS
                    && transient(&e)
                    && start.elapsed().saturating_add(DELAY) <= DEADLINE =>
            {
                attempt += 1;
                if !DELAY.is_zero() {
                    tokio::time::sleep(DELAY).await;
                }
            }
            Err(e) => return Err(e),
        }
    }
}

#[inline(never)]
pub async fn hand_async_hook<T, Fut>(mut op: impl FnMut() -> Fut) -> Result<T, BenchError>
where
    Fut: Future<Output = Result<T, BenchError>>,
{
    let start = tokio::time::Instant::now();
    let mut attempt = 1;
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) => {
                hook_hand(attempt, &e, start.elapsed());
                if attempt < ATTEMPTS && transient(&e) {
                    attempt += 1;
                    if !DELAY.is_zero() {
                        tokio::time::sleep(DELAY).await;
                    }
                } else {
                    return Err(e);
                }
            }
        }
    }
}

/// The hand loop with a breaker: a permit before every attempt, given the attempt's outcome
/// (a permanent error is an answer, so it counts as a success, as in the engine).
#[inline(never)]
pub fn hand_sync_breaker<T>(
    mut op: impl FnMut() -> Result<T, BenchError>,
) -> Result<T, BenchError> {
    let mut permit = BREAKER.try_acquire()?;
    let mut attempt = 1;
    loop {
        match op() {
            Ok(v) => {
                permit.succeeded();
                return Ok(v);
            }
            Err(e) => {
                let retry = transient(&e);
                if retry {
                    permit.failed();
                } else {
                    permit.succeeded();
                }
                if !(retry && attempt < ATTEMPTS) {
                    return Err(e);
                }
                match BREAKER.try_acquire() {
                    Ok(next) => permit = next,
                    Err(_) => return Err(e),
                }
                attempt += 1;
                std::thread::sleep(DELAY);
            }
        }
    }
}

#[inline(never)]
pub async fn hand_async_breaker<T, Fut>(mut op: impl FnMut() -> Fut) -> Result<T, BenchError>
where
    Fut: Future<Output = Result<T, BenchError>>,
{
    let mut permit = BREAKER.try_acquire()?;
    let mut attempt = 1;
    loop {
        match op().await {
            Ok(v) => {
                permit.succeeded();
                return Ok(v);
            }
            Err(e) => {
                let retry = transient(&e);
                if retry {
                    permit.failed();
                } else {
                    permit.succeeded();
                }
                if !(retry && attempt < ATTEMPTS) {
                    return Err(e);
                }
                match BREAKER.try_acquire() {
                    Ok(next) => permit = next,
                    Err(_) => return Err(e),
                }
                attempt += 1;
                if !DELAY.is_zero() {
                    tokio::time::sleep(DELAY).await;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// #[retryable]

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none")]
#[inline(never)]
pub fn macro_sync_success(x: u64) -> Result<u64, BenchError> {
    succeed(x)
}

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none")]
#[inline(never)]
pub fn macro_sync_retry3(fails: &Cell<u32>) -> Result<u64, BenchError> {
    flaky(fails)
}

#[retryable(
    attempts = 3,
    backoff = "fixed",
    base = "0ms",
    jitter = "none",
    deadline = "1h"
)]
#[inline(never)]
pub fn macro_sync_success_deadline(x: u64) -> Result<u64, BenchError> {
    succeed(x)
}

#[retryable(
    attempts = 3,
    backoff = "fixed",
    base = "0ms",
    jitter = "none",
    deadline = "1h"
)]
#[inline(never)]
pub fn macro_sync_retry3_deadline(fails: &Cell<u32>) -> Result<u64, BenchError> {
    flaky(fails)
}

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none", on_failure = hook)]
#[inline(never)]
pub fn macro_sync_success_hook(x: u64) -> Result<u64, BenchError> {
    succeed(x)
}

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none", on_failure = hook)]
#[inline(never)]
pub fn macro_sync_retry3_hook(fails: &Cell<u32>) -> Result<u64, BenchError> {
    flaky(fails)
}

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none")]
#[inline(never)]
pub async fn macro_async_success(x: u64) -> Result<u64, BenchError> {
    ready(x).await
}

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none")]
#[inline(never)]
pub async fn macro_async_retry3(fails: &Cell<u32>) -> Result<u64, BenchError> {
    ready_flaky(fails).await
}

#[retryable(
    attempts = 3,
    backoff = "fixed",
    base = "0ms",
    jitter = "none",
    deadline = "1h"
)]
#[inline(never)]
pub async fn macro_async_success_deadline(x: u64) -> Result<u64, BenchError> {
    ready(x).await
}

#[retryable(
    attempts = 3,
    backoff = "fixed",
    base = "0ms",
    jitter = "none",
    deadline = "1h"
)]
#[inline(never)]
pub async fn macro_async_retry3_deadline(fails: &Cell<u32>) -> Result<u64, BenchError> {
    ready_flaky(fails).await
}

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none", on_failure = hook)]
#[inline(never)]
pub async fn macro_async_success_hook(x: u64) -> Result<u64, BenchError> {
    ready(x).await
}

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none", on_failure = hook)]
#[inline(never)]
pub async fn macro_async_retry3_hook(fails: &Cell<u32>) -> Result<u64, BenchError> {
    ready_flaky(fails).await
}

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none", circuit = BREAKER)]
#[inline(never)]
pub fn macro_sync_success_breaker(x: u64) -> Result<u64, BenchError> {
    succeed(x)
}

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none", circuit = BREAKER)]
#[inline(never)]
pub fn macro_sync_retry3_breaker(fails: &Cell<u32>) -> Result<u64, BenchError> {
    flaky(fails)
}

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none", circuit = BREAKER)]
#[inline(never)]
pub async fn macro_async_success_breaker(x: u64) -> Result<u64, BenchError> {
    ready(x).await
}

/// A hedged call whose attempt answers at once: the hedge never fires (issue 26, item 2).
#[retryable(
    attempts = 3,
    backoff = "fixed",
    base = "0ms",
    jitter = "none",
    idempotent,
    hedge = "50ms"
)]
#[inline(never)]
pub async fn macro_async_success_hedged(x: u64) -> Result<u64, BenchError> {
    ready(x).await
}

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none", circuit = BREAKER)]
#[inline(never)]
pub async fn macro_async_retry3_breaker(fails: &Cell<u32>) -> Result<u64, BenchError> {
    ready_flaky(fails).await
}

/// An async operation that is ready at once (it never returns `Pending`).
#[inline]
pub async fn ready(x: u64) -> Result<u64, BenchError> {
    succeed(x)
}

#[inline]
pub async fn ready_flaky(fails: &Cell<u32>) -> Result<u64, BenchError> {
    flaky(fails)
}

// ---------------------------------------------------------------------------------------------
// The non-macro form.

#[inline(never)]
pub fn fn_sync<T>(op: impl FnMut() -> Result<T, BenchError>) -> Result<T, BenchError> {
    POLICY.call(op)
}

#[inline(never)]
pub fn fn_sync_deadline<T>(op: impl FnMut() -> Result<T, BenchError>) -> Result<T, BenchError> {
    POLICY_DEADLINE.call(op)
}

#[inline(never)]
pub fn fn_sync_hook<T>(op: impl FnMut() -> Result<T, BenchError>) -> Result<T, BenchError> {
    Retry::new(&POLICY).on_failure(hook).call(op)
}

#[inline(never)]
pub fn fn_sync_breaker<T>(op: impl FnMut() -> Result<T, BenchError>) -> Result<T, BenchError> {
    Retry::new(&POLICY).circuit(&BREAKER).call(op)
}

#[inline(never)]
pub async fn fn_async<T, Fut>(op: impl FnMut() -> Fut) -> Result<T, BenchError>
where
    Fut: Future<Output = Result<T, BenchError>>,
{
    POLICY.call_async(op).await
}

#[inline(never)]
pub async fn fn_async_deadline<T, Fut>(op: impl FnMut() -> Fut) -> Result<T, BenchError>
where
    Fut: Future<Output = Result<T, BenchError>>,
{
    POLICY_DEADLINE.call_async(op).await
}

#[inline(never)]
pub async fn fn_async_hook<T, Fut>(op: impl FnMut() -> Fut) -> Result<T, BenchError>
where
    Fut: Future<Output = Result<T, BenchError>>,
{
    Retry::new(&POLICY).on_failure(hook).call_async(op).await
}

#[inline(never)]
pub async fn fn_async_breaker<T, Fut>(op: impl FnMut() -> Fut) -> Result<T, BenchError>
where
    Fut: Future<Output = Result<T, BenchError>>,
{
    Retry::new(&POLICY).circuit(&BREAKER).call_async(op).await
}

// ---------------------------------------------------------------------------------------------
// The popular crates.

pub fn backon_policy() -> backon::ConstantBuilder {
    // `max_times` counts retries, not attempts.
    backon::ConstantBuilder::new()
        .with_delay(DELAY)
        .with_max_times(ATTEMPTS as usize - 1)
}

#[inline(never)]
pub fn backon_sync<T>(op: impl FnMut() -> Result<T, BenchError>) -> Result<T, BenchError> {
    use backon::BlockingRetryable;
    op.retry(backon_policy())
        .sleep(std::thread::sleep)
        .when(transient)
        .call()
}

#[inline(never)]
pub async fn backon_async<T, Fut>(op: impl FnMut() -> Fut) -> Result<T, BenchError>
where
    Fut: Future<Output = Result<T, BenchError>>,
{
    use backon::Retryable;
    op.retry(backon_policy())
        .sleep(backon::TokioSleeper)
        .when(transient)
        .await
}

/// retry's own classification: `OperationResult::{Ok, Retry, Err}`.
fn retry_result<T>(r: Result<T, BenchError>) -> retry::OperationResult<T, BenchError> {
    match r {
        Ok(v) => retry::OperationResult::Ok(v),
        Err(e) if transient(&e) => retry::OperationResult::Retry(e),
        Err(e) => retry::OperationResult::Err(e),
    }
}

#[inline(never)]
pub fn retry_sync<T>(mut op: impl FnMut() -> Result<T, BenchError>) -> Result<T, BenchError> {
    // `take` counts retries, not attempts.
    retry::retry(retry::delay::NoDelay.take(ATTEMPTS as usize - 1), || {
        retry_result(op())
    })
    .map_err(|e| e.error)
}

pub fn backoff_policy() -> backoff::ExponentialBackoff {
    // backoff has no attempt limit; the operation here succeeds on its third attempt.
    backoff::ExponentialBackoffBuilder::new()
        .with_initial_interval(DELAY)
        .with_randomization_factor(0.0)
        .with_max_interval(DELAY)
        .with_max_elapsed_time(None)
        .build()
}

fn backoff_error(e: BenchError) -> backoff::Error<BenchError> {
    if transient(&e) {
        backoff::Error::transient(e)
    } else {
        backoff::Error::permanent(e)
    }
}

fn backoff_unwrap(e: backoff::Error<BenchError>) -> BenchError {
    match e {
        backoff::Error::Permanent(e) | backoff::Error::Transient { err: e, .. } => e,
    }
}

#[inline(never)]
pub fn backoff_sync<T>(mut op: impl FnMut() -> Result<T, BenchError>) -> Result<T, BenchError> {
    backoff::retry(backoff_policy(), || op().map_err(backoff_error)).map_err(backoff_unwrap)
}

#[inline(never)]
pub async fn backoff_async<T, Fut>(mut op: impl FnMut() -> Fut) -> Result<T, BenchError>
where
    Fut: Future<Output = Result<T, BenchError>>,
{
    let op = || {
        let fut = op();
        async move { fut.await.map_err(backoff_error) }
    };
    backoff::future::retry(backoff_policy(), op).await
}

fn tokio_retry_error(e: BenchError) -> tokio_retry2::RetryError<BenchError> {
    if transient(&e) {
        tokio_retry2::RetryError::transient(e)
    } else {
        tokio_retry2::RetryError::permanent(e)
    }
}

#[inline(never)]
pub async fn tokio_retry_async<T, Fut>(mut op: impl FnMut() -> Fut) -> Result<T, BenchError>
where
    Fut: Future<Output = Result<T, BenchError>>,
{
    // `take` counts retries, not attempts.
    let strategy = tokio_retry2::strategy::FixedInterval::new(DELAY).take(ATTEMPTS as usize - 1);
    let op = || {
        let fut = op();
        async move { fut.await.map_err(tokio_retry_error) }
    };
    tokio_retry2::Retry::spawn(strategy, op).await
}

// ---------------------------------------------------------------------------------------------
// Driving futures.

/// Poll a future that must complete on its first poll, without a runtime's `block_on` (whose
/// own cost would hide the few nanoseconds being measured). The harness enters the paused
/// runtime once around every case (entering costs more than some contenders), so futures that
/// would need its timer find it.
///
/// The future comes pinned where it was made (`poll_ready(std::pin::pin!(f(x)))`), as an `.await` makes
/// a callee's future in place in its caller's state. Taken by value, it was moved into this
/// function's frame: a copy whose cost (15 instructions for a 120-byte future) depended on
/// whether the compiler inlined this function for that future, not on the code measured.
#[inline]
pub fn poll_ready<F: Future>(fut: Pin<&mut F>) -> F::Output {
    match fut.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("the success case must complete on its first poll"),
    }
}

/// The runtime of the success cases under callgrind (`tables --only`): current-thread, on the
/// real clock, as in production. Once a runtime in the process has paused its clock, every
/// `tokio::time::Instant::now()` for the rest of the process goes through the paused clock's lock
/// (tokio's `test-util`, which [`paused_runtime`] needs): some 70 instructions a read that no
/// production build pays. A success never sleeps, so it does not need the paused clock.
pub fn real_clock_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime builds")
}

/// The runtime of the async cases: current-thread, with tokio's clock paused. On a real clock
/// tokio rounds a zero-length sleep up to its 1 ms timer tick, so a peer that sleeps for zero
/// would measure the tick; paused, the runtime advances the clock instead of waiting.
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime builds")
}

// ---------------------------------------------------------------------------------------------
// The case table.

/// A cell for the retry3 cases: two failures to go.
pub fn fails() -> Cell<u32> {
    Cell::new(2)
}

/// Calls `$each!(group, contender, run)` for every case, where `run` is `sync(closure)` (a
/// `Fn() -> u64` making one call) or `async(closure)` (a `Fn(&Runtime) -> u64` making one call
/// on the paused runtime). A macro rather than a table of function pointers, so that the timed
/// loop calls each contender directly, as user code would.
///
/// Groups are `{sync,async}_{success,retry3}`, then the same with a `_deadline`, `_hook` or
/// `_breaker` suffix for the option cases, which compare hand, macro and fn only.
macro_rules! for_each_case {
    ($each:ident) => {
        for_each_case!(@main $each, hand_sync, hand_async, macro_sync_success,
            macro_sync_retry3, macro_async_success, macro_async_retry3, fn_sync, fn_async, "");
        for_each_case!(@peers $each);
        for_each_case!(@main $each, hand_sync_deadline, hand_async_deadline,
            macro_sync_success_deadline, macro_sync_retry3_deadline, macro_async_success_deadline,
            macro_async_retry3_deadline, fn_sync_deadline, fn_async_deadline, "_deadline");
        for_each_case!(@main $each, hand_sync_hook, hand_async_hook,
            macro_sync_success_hook, macro_sync_retry3_hook, macro_async_success_hook,
            macro_async_retry3_hook, fn_sync_hook, fn_async_hook, "_hook");
        for_each_case!(@main $each, hand_sync_breaker, hand_async_breaker,
            macro_sync_success_breaker, macro_sync_retry3_breaker, macro_async_success_breaker,
            macro_async_retry3_breaker, fn_sync_breaker, fn_async_breaker, "_breaker");
    };
    (@main $each:ident, $hs:ident, $ha:ident, $mss:ident, $msr:ident, $mas:ident, $mar:ident,
        $fs:ident, $fa:ident, $suffix:literal) => {
        $each!(concat!("sync_success", $suffix), "hand",
            sync(|| $hs(|| succeed(black_box(1))).unwrap_or(0)));
        $each!(concat!("sync_success", $suffix), "macro",
            sync(|| $mss(black_box(1)).unwrap_or(0)));
        $each!(concat!("sync_success", $suffix), "fn",
            sync(|| $fs(|| succeed(black_box(1))).unwrap_or(0)));
        $each!(concat!("sync_retry3", $suffix), "hand",
            sync(|| { let f = fails(); $hs(|| flaky(&f)).unwrap_or(0) }));
        $each!(concat!("sync_retry3", $suffix), "macro",
            sync(|| $msr(&fails()).unwrap_or(0)));
        $each!(concat!("sync_retry3", $suffix), "fn",
            sync(|| { let f = fails(); $fs(|| flaky(&f)).unwrap_or(0) }));
        $each!(concat!("async_success", $suffix), "hand",
            async(|_rt: &tokio::runtime::Runtime| poll_ready(std::pin::pin!($ha(|| ready(black_box(1))))).unwrap_or(0)));
        $each!(concat!("async_success", $suffix), "macro",
            async(|_rt: &tokio::runtime::Runtime| poll_ready(std::pin::pin!($mas(black_box(1)))).unwrap_or(0)));
        $each!(concat!("async_success", $suffix), "fn",
            async(|_rt: &tokio::runtime::Runtime| poll_ready(std::pin::pin!($fa(|| ready(black_box(1))))).unwrap_or(0)));
        $each!(concat!("async_retry3", $suffix), "hand",
            async(|rt: &tokio::runtime::Runtime| { let f = fails(); rt.block_on($ha(|| ready_flaky(&f))).unwrap_or(0) }));
        $each!(concat!("async_retry3", $suffix), "macro",
            async(|rt: &tokio::runtime::Runtime| rt.block_on($mar(&fails())).unwrap_or(0)));
        $each!(concat!("async_retry3", $suffix), "fn",
            async(|rt: &tokio::runtime::Runtime| { let f = fails(); rt.block_on($fa(|| ready_flaky(&f))).unwrap_or(0) }));
    };
    (@peers $each:ident) => {
        $each!("sync_success", "hand+ctx", sync(|| hand_ctx_sync(|| succeed(black_box(1))).unwrap_or(0)));
        $each!("sync_retry3", "hand+ctx",
            sync(|| { let f = fails(); hand_ctx_sync(|| flaky(&f)).unwrap_or(0) }));
        $each!("async_success", "hand+ctx",
            async(|_rt: &tokio::runtime::Runtime| poll_ready(std::pin::pin!(hand_ctx_async(|| ready(black_box(1))))).unwrap_or(0)));
        $each!("async_retry3", "hand+ctx",
            async(|rt: &tokio::runtime::Runtime| { let f = fails(); rt.block_on(hand_ctx_async(|| ready_flaky(&f))).unwrap_or(0) }));
        $each!("async_success_hedged", "macro",
            async(|_rt: &tokio::runtime::Runtime| poll_ready(std::pin::pin!(macro_async_success_hedged(black_box(1)))).unwrap_or(0)));
        $each!("sync_success", "backon", sync(|| backon_sync(|| succeed(black_box(1))).unwrap_or(0)));
        $each!("sync_success", "retry", sync(|| retry_sync(|| succeed(black_box(1))).unwrap_or(0)));
        $each!("sync_success", "backoff", sync(|| backoff_sync(|| succeed(black_box(1))).unwrap_or(0)));
        $each!("sync_retry3", "backon",
            sync(|| { let f = fails(); backon_sync(|| flaky(&f)).unwrap_or(0) }));
        $each!("sync_retry3", "retry",
            sync(|| { let f = fails(); retry_sync(|| flaky(&f)).unwrap_or(0) }));
        $each!("sync_retry3", "backoff",
            sync(|| { let f = fails(); backoff_sync(|| flaky(&f)).unwrap_or(0) }));
        $each!("async_success", "backon",
            async(|_rt: &tokio::runtime::Runtime| poll_ready(std::pin::pin!(backon_async(|| ready(black_box(1))))).unwrap_or(0)));
        $each!("async_success", "tokio-retry2",
            async(|_rt: &tokio::runtime::Runtime| poll_ready(std::pin::pin!(tokio_retry_async(|| ready(black_box(1))))).unwrap_or(0)));
        $each!("async_success", "backoff",
            async(|_rt: &tokio::runtime::Runtime| poll_ready(std::pin::pin!(backoff_async(|| ready(black_box(1))))).unwrap_or(0)));
        $each!("async_retry3", "backon",
            async(|rt: &tokio::runtime::Runtime| { let f = fails(); rt.block_on(backon_async(|| ready_flaky(&f))).unwrap_or(0) }));
        $each!("async_retry3", "tokio-retry2",
            async(|rt: &tokio::runtime::Runtime| { let f = fails(); rt.block_on(tokio_retry_async(|| ready_flaky(&f))).unwrap_or(0) }));
        $each!("async_retry3", "backoff",
            async(|rt: &tokio::runtime::Runtime| { let f = fails(); rt.block_on(backoff_async(|| ready_flaky(&f))).unwrap_or(0) }));
    };
}
