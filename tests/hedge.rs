//! `hedge`: a slow attempt gets company, the first success wins, the others are dropped; every
//! rule of `retry_kit::run::hedge`, on tokio's paused clock.
#![deny(warnings, unused_qualifications)]

use retry_kit::{
    CircuitBreaker, CircuitOpen, CircuitState, Classify, Failure, Next, Retry, RetryBudget,
    RetryPolicy, StopReason, TimedOut, current_attempt, retryable,
};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::{Instant, sleep};

#[derive(Debug, PartialEq, Classify)]
enum ReadError {
    #[classify(transient)]
    Unavailable,
    #[classify(transient)]
    Busy {
        #[classify(retry_after)]
        wait: Duration,
    },
    #[classify(permanent)]
    NotFound,
    #[classify(already_done)]
    Duplicate(u32),
    #[classify(delegate)]
    Timeout(TimedOut),
    #[classify(delegate)]
    Open(CircuitOpen),
}

impl From<TimedOut> for ReadError {
    fn from(t: TimedOut) -> Self {
        ReadError::Timeout(t)
    }
}

impl From<CircuitOpen> for ReadError {
    fn from(open: CircuitOpen) -> Self {
        ReadError::Open(open)
    }
}

const MS: Duration = Duration::from_millis(1);

/// A replica whose answer to each attempt (by number) is scripted: how long it takes and what it
/// says. It logs when each attempt starts, and which attempts were dropped before answering.
struct Replica {
    script: Vec<(u64, Result<u32, ReadError>)>,
    started: Mutex<Vec<(u32, Duration)>>,
    dropped: Mutex<Vec<u32>>,
    keys: Mutex<Vec<String>>,
    origin: Instant,
}

impl Replica {
    fn new(script: Vec<(u64, Result<u32, ReadError>)>) -> Self {
        Replica {
            script,
            started: Mutex::new(Vec::new()),
            dropped: Mutex::new(Vec::new()),
            keys: Mutex::new(Vec::new()),
            origin: Instant::now(),
        }
    }

    async fn read(&self) -> Result<u32, ReadError> {
        let attempt = current_attempt().expect("inside a retryable call");
        let n = attempt.number();
        self.started
            .lock()
            .unwrap()
            .push((n, self.origin.elapsed()));
        self.keys
            .lock()
            .unwrap()
            .push(attempt.idempotency_key().to_string());
        let (ms, answer) = match self.script.get(n as usize - 1) {
            Some((ms, Ok(v))) => (*ms, Ok(*v)),
            Some((ms, Err(e))) => (*ms, Err(copy(e))),
            None => (u64::MAX / 4, Err(ReadError::Unavailable)),
        };
        let dropped = OnDrop(n, &self.dropped);
        sleep(Duration::from_millis(ms)).await;
        std::mem::forget(dropped);
        // The attempt's own number is still visible after an await.
        assert_eq!(current_attempt().unwrap().number(), n);
        answer
    }

    fn started(&self) -> Vec<(u32, Duration)> {
        self.started.lock().unwrap().clone()
    }

    fn dropped(&self) -> Vec<u32> {
        let mut dropped = self.dropped.lock().unwrap().clone();
        dropped.sort();
        dropped
    }
}

fn copy(e: &ReadError) -> ReadError {
    match e {
        ReadError::Unavailable => ReadError::Unavailable,
        ReadError::Busy { wait } => ReadError::Busy { wait: *wait },
        ReadError::NotFound => ReadError::NotFound,
        ReadError::Duplicate(receipt) => ReadError::Duplicate(*receipt),
        _ => unreachable!("not scripted"),
    }
}

/// Logs its attempt's number when an attempt is dropped before it answers.
struct OnDrop<'a>(u32, &'a Mutex<Vec<u32>>);

impl Drop for OnDrop<'_> {
    fn drop(&mut self) {
        self.1.lock().unwrap().push(self.0);
    }
}

thread_local! {
    // Each test runs its runtime on its own thread, and hooks run on the caller's.
    static RECORDS: std::cell::RefCell<Vec<(u32, Next)>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn record(f: &Failure<'_, ReadError>) {
    RECORDS.with(|r| r.borrow_mut().push((f.attempt, f.next)));
}

fn take_records() -> Vec<(u32, Next)> {
    RECORDS.with(|r| r.take())
}

#[retryable(attempts = 3, base = "1s", jitter = "none", idempotent, hedge = "50ms")]
async fn read(replica: &Replica) -> Result<u32, ReadError> {
    replica.read().await
}

#[tokio::test(start_paused = true)]
async fn a_slow_attempt_is_hedged_and_the_first_success_wins() {
    let replica = Replica::new(vec![(1000, Ok(1)), (20, Ok(2)), (5, Ok(3))]);
    let start = Instant::now();
    assert_eq!(read(&replica).await, Ok(2));
    // The hedge started at 50 ms and answered 20 ms later; the first attempt was dropped.
    assert_eq!(start.elapsed(), 70 * MS);
    assert_eq!(replica.started(), [(1, Duration::ZERO), (2, 50 * MS)]);
    assert_eq!(replica.dropped(), [1]);
}

#[tokio::test(start_paused = true)]
async fn an_attempt_that_answers_in_time_is_not_hedged() {
    let replica = Replica::new(vec![(49, Ok(1))]);
    assert_eq!(read(&replica).await, Ok(1));
    assert_eq!(replica.started(), [(1, Duration::ZERO)]);
    assert!(replica.dropped().is_empty());
}

#[tokio::test(start_paused = true)]
async fn no_more_than_attempts_start_and_the_earliest_answer_wins_even_from_the_first() {
    // Three start (0, 50, 100 ms); none a fourth, though the call is slow; the first attempt
    // answers first, at 120 ms.
    let replica = Replica::new(vec![(120, Ok(1)), (1000, Ok(2)), (1000, Ok(3))]);
    let start = Instant::now();
    assert_eq!(read(&replica).await, Ok(1));
    assert_eq!(start.elapsed(), 120 * MS);
    assert_eq!(
        replica.started(),
        [(1, Duration::ZERO), (2, 50 * MS), (3, 100 * MS)]
    );
    assert_eq!(replica.dropped(), [2, 3]);
}

#[retryable(attempts = 3, base = "1s", jitter = "none", idempotent, hedge = "50ms", on_failure = record)]
async fn read_recorded(replica: &Replica) -> Result<u32, ReadError> {
    replica.read().await
}

#[tokio::test(start_paused = true)]
async fn a_retryable_failure_starts_the_next_attempt_at_once_not_after_a_backoff() {
    take_records();
    // Attempt 1 fails at 10 ms: attempt 2 starts then (not after the 1 s backoff), and is
    // hedged at 60 ms by attempt 3, which wins.
    let replica = Replica::new(vec![
        (10, Err(ReadError::Unavailable)),
        (1000, Ok(2)),
        (5, Ok(3)),
    ]);
    assert_eq!(read_recorded(&replica).await, Ok(3));
    assert_eq!(
        replica.started(),
        [(1, Duration::ZERO), (2, 10 * MS), (3, 60 * MS)]
    );
    assert_eq!(take_records(), [(1, Next::Retry(Duration::ZERO))]);
}

#[tokio::test(start_paused = true)]
async fn a_failure_while_others_run_waits_for_them_and_the_last_one_says_why_it_stops() {
    take_records();
    let replica = Replica::new(vec![
        (300, Err(ReadError::Unavailable)),
        (200, Err(ReadError::Unavailable)),
        (100, Err(ReadError::Unavailable)),
    ]);
    let start = Instant::now();
    assert_eq!(read_recorded(&replica).await, Err(ReadError::Unavailable));
    // Attempts at 0, 50, 100 ms; they fail at 200 (3), 250 (2) and 300 ms (1).
    assert_eq!(start.elapsed(), 300 * MS);
    assert_eq!(
        take_records(),
        [
            (3, Next::Wait { running: 2 }),
            (2, Next::Wait { running: 1 }),
            (1, Next::Stop(StopReason::AttemptsExhausted)),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_permanent_failure_stops_the_call_and_drops_the_running_attempts() {
    take_records();
    let replica = Replica::new(vec![(1000, Ok(1)), (10, Err(ReadError::NotFound))]);
    let start = Instant::now();
    assert_eq!(read_recorded(&replica).await, Err(ReadError::NotFound));
    assert_eq!(start.elapsed(), 60 * MS);
    assert_eq!(replica.dropped(), [1]);
    assert_eq!(take_records(), [(2, Next::Stop(StopReason::Permanent))]);
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_delays_the_next_attempt_by_its_hint() {
    let replica = Replica::new(vec![
        (10, Err(ReadError::Busy { wait: 200 * MS })),
        (5, Ok(2)),
    ]);
    let start = Instant::now();
    assert_eq!(read(&replica).await, Ok(2));
    assert_eq!(replica.started(), [(1, Duration::ZERO), (2, 210 * MS)]);
    assert_eq!(start.elapsed(), 215 * MS);
}

#[tokio::test(start_paused = true)]
async fn every_attempt_sees_its_own_number_and_the_calls_one_key() {
    let replica = Replica::new(vec![(1000, Ok(1)), (1000, Ok(2)), (10, Ok(3))]);
    assert_eq!(read(&replica).await, Ok(3));
    let keys = replica.keys.lock().unwrap().clone();
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|k| k == &keys[0] && k.len() == 32));
    // Another call, another key.
    let again = Replica::new(vec![(1, Ok(1))]);
    read(&again).await.unwrap();
    assert_ne!(again.keys.lock().unwrap()[0], keys[0]);
}

#[retryable(attempts = 5, idempotent, hedge = "50ms", deadline = "120ms")]
async fn read_by_deadline(replica: &Replica) -> Result<u32, ReadError> {
    replica.read().await
}

#[tokio::test(start_paused = true)]
async fn no_hedge_starts_after_the_deadline() {
    let replica = Replica::new(vec![(1000, Ok(1)), (1000, Ok(2)), (1000, Ok(3))]);
    assert_eq!(read_by_deadline(&replica).await, Ok(1));
    // Hedges at 50 and 100 ms; the one due at 150 ms would start after the 120 ms deadline.
    assert_eq!(
        replica.started(),
        [(1, Duration::ZERO), (2, 50 * MS), (3, 100 * MS)]
    );
}

#[retryable(attempts = 3, idempotent, hedge = "30ms", attempt_timeout = "100ms")]
async fn read_timed(replica: &Replica) -> Result<u32, ReadError> {
    replica.read().await
}

#[tokio::test(start_paused = true)]
async fn attempts_that_time_out_end_the_call_with_the_last_timeout() {
    let replica = Replica::new(vec![]);
    let start = Instant::now();
    let Err(ReadError::Timeout(t)) = read_timed(&replica).await else {
        panic!("expected a timeout");
    };
    assert_eq!(t.limit(), 100 * MS);
    // Started at 0, 30 and 60 ms, each cut off 100 ms later.
    assert_eq!(start.elapsed(), 160 * MS);
    assert_eq!(replica.started().len(), 3);
}

static HALF_OPEN: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(10))
    .half_open_max(1)
    .success_threshold(1);

#[retryable(attempts = 3, idempotent, hedge = "50ms", circuit = HALF_OPEN)]
async fn read_half_open(replica: &Replica) -> Result<u32, ReadError> {
    replica.read().await
}

#[tokio::test(start_paused = true)]
async fn the_breaker_is_asked_for_every_hedge() {
    // Open the breaker, then let it cool down to half-open: one probe at a time.
    let permit = HALF_OPEN.try_acquire().unwrap();
    permit.failed();
    assert_eq!(HALF_OPEN.state(), CircuitState::Open);
    tokio::time::advance(Duration::from_secs(11)).await;
    let replica = Replica::new(vec![(200, Ok(1)), (10, Ok(2))]);
    // The probe is slow, and the breaker refuses a second probe beside it: no hedge.
    assert_eq!(read_half_open(&replica).await, Ok(1));
    assert_eq!(replica.started(), [(1, Duration::ZERO)]);
    assert_eq!(HALF_OPEN.state(), CircuitState::Closed);
}

static PROBES: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(10))
    .half_open_max(2)
    .success_threshold(3);

#[retryable(attempts = 2, idempotent, hedge = "50ms", circuit = PROBES)]
async fn read_probing(replica: &Replica) -> Result<u32, ReadError> {
    replica.read().await
}

#[tokio::test(start_paused = true)]
async fn a_dropped_hedge_releases_its_breaker_permit() {
    PROBES.try_acquire().unwrap().failed();
    tokio::time::advance(Duration::from_secs(11)).await;
    // Two probes: the slow first and its hedge, which wins; the first is dropped.
    let replica = Replica::new(vec![(1000, Ok(1)), (10, Ok(2))]);
    assert_eq!(read_probing(&replica).await, Ok(2));
    assert_eq!(replica.dropped(), [1]);
    assert_eq!(PROBES.state(), CircuitState::HalfOpen);
    // Had the dropped probe kept its permit, only one of two could start now.
    let a = PROBES.try_acquire().expect("first probe");
    let b = PROBES
        .try_acquire()
        .expect("second probe: the dropped one was released");
    a.succeeded();
    b.succeeded();
    assert_eq!(PROBES.state(), CircuitState::Closed);
}

/// Ten tokens; hedges and retries need more than five.
static TOKENS: RetryBudget = RetryBudget::new(10, 0.0);

#[retryable(attempts = 3, idempotent, hedge = "50ms", budget = TOKENS)]
async fn read_budgeted(replica: &Replica) -> Result<u32, ReadError> {
    replica.read().await
}

#[tokio::test(start_paused = true)]
async fn the_budget_is_asked_for_every_hedge() {
    // Spend five tokens: five left, not more than half.
    for _ in 0..5 {
        TOKENS.record_failure();
    }
    let replica = Replica::new(vec![(200, Ok(1)), (10, Ok(2))]);
    assert_eq!(read_budgeted(&replica).await, Ok(1));
    assert_eq!(replica.started(), [(1, Duration::ZERO)]);
}

#[tokio::test(start_paused = true)]
async fn a_hedged_future_is_send() {
    let replica: &'static Replica =
        Box::leak(Box::new(Replica::new(vec![(1000, Ok(1)), (1, Ok(2))])));
    let answer = tokio::spawn(read(replica)).await.unwrap();
    assert_eq!(answer, Ok(2));
}

static SPAWNED_BREAKER: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(10));
static SPAWNED_BUDGET: RetryBudget = RetryBudget::new(10, 0.5);
static SPAWNED_POLICY: RetryPolicy = RetryPolicy::new().attempts(3).idempotent(true);

/// A builder's hedged call with a breaker and a budget can be spawned, as the same builder
/// without `hedge` can (regression: "implementation of `Protection` is not general enough",
/// from the attempts' holds the hedged loop keeps across its awaits).
#[tokio::test(start_paused = true)]
async fn a_builder_hedged_call_with_a_breaker_and_a_budget_can_be_spawned() {
    let replica: &'static Replica =
        Box::leak(Box::new(Replica::new(vec![(1000, Ok(1)), (1, Ok(2))])));
    let call = Retry::new(&SPAWNED_POLICY)
        .circuit(&SPAWNED_BREAKER)
        .budget(&SPAWNED_BUDGET)
        .hedge(50 * MS)
        .expect("the policy is idempotent")
        .call_async(|| replica.read());
    assert_eq!(tokio::spawn(call).await.unwrap(), Ok(2));
    assert_eq!(replica.started(), [(1, Duration::ZERO), (2, 50 * MS)]);
}

#[tokio::test(start_paused = true)]
async fn the_builder_hedges_the_same_way() {
    let replica = Replica::new(vec![(1000, Ok(1)), (20, Ok(2))]);
    let policy = RetryPolicy::new().attempts(3).idempotent(true);
    let answer = Retry::new(&policy)
        .hedge(50 * MS)
        .unwrap()
        .call_async(|| replica.read())
        .await;
    assert_eq!(answer, Ok(2));
    assert_eq!(replica.started(), [(1, Duration::ZERO), (2, 50 * MS)]);
    assert_eq!(replica.dropped(), [1]);
}

#[tokio::test(start_paused = true)]
async fn the_builder_refuses_to_hedge_an_operation_not_declared_idempotent() {
    // Before: the builder quietly retried one attempt at a time.
    let policy = RetryPolicy::new().attempts(3);
    let refused = Retry::new(&policy).hedge(50 * MS).unwrap_err();
    assert_eq!(refused, retry_kit::HedgeNotIdempotent);
    assert!(
        refused.to_string().contains("idempotent(true)"),
        "{refused}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_builder_times_out_hedged_attempts() {
    let replica = Replica::new(vec![]);
    let policy = RetryPolicy::new().attempts(2).idempotent(true);
    let answer = Retry::new(&policy)
        .attempt_timeout(100 * MS)
        .hedge(30 * MS)
        .unwrap()
        .call_async(|| replica.read())
        .await;
    assert!(matches!(answer, Err(ReadError::Timeout(_))));
    assert_eq!(replica.started(), [(1, Duration::ZERO), (2, 30 * MS)]);
}

static PANICS: RetryBudget = RetryBudget::new(10, 0.0);

#[retryable(attempts = 2, idempotent, hedge = "50ms", budget = PANICS)]
async fn read_panicking() -> Result<u32, ReadError> {
    if current_attempt().unwrap().number() == 2 {
        sleep(10 * MS).await;
        panic!("the hedge panics");
    }
    sleep(Duration::from_secs(1)).await;
    Ok(1)
}

#[tokio::test(start_paused = true)]
async fn a_panicking_hedge_is_charged_as_a_failure() {
    let joined = tokio::spawn(read_panicking()).await;
    assert!(joined.unwrap_err().is_panic());
    // The hedge's panic cost one token; the first attempt, dropped by the unwind, none.
    assert_eq!(PANICS.tokens(), 9.0);
}

fn receipt(e: ReadError) -> Result<u32, ReadError> {
    match e {
        ReadError::Duplicate(receipt) => Ok(receipt),
        other => Err(other),
    }
}

#[retryable(attempts = 3, idempotent, hedge = "50ms", already_done = receipt, on_failure = record)]
async fn pay(replica: &Replica) -> Result<u32, ReadError> {
    replica.read().await
}

#[tokio::test(start_paused = true)]
async fn a_hedge_that_finds_the_work_already_done_returns_its_receipt() {
    take_records();
    // The first attempt did the work but its answer is slow; the hedge is told it is a
    // duplicate of payment 42, which becomes the result at once.
    let replica = Replica::new(vec![(1000, Ok(42)), (10, Err(ReadError::Duplicate(42)))]);
    let start = Instant::now();
    assert_eq!(pay(&replica).await, Ok(42));
    assert_eq!(start.elapsed(), 60 * MS);
    assert_eq!(replica.dropped(), [1]);
    assert_eq!(take_records(), [(2, Next::Stop(StopReason::AlreadyDone))]);
}

#[tokio::test(start_paused = true)]
async fn the_builder_hedge_turns_an_already_done_answer_into_the_receipt() {
    take_records();
    let replica = Replica::new(vec![(1000, Ok(42)), (10, Err(ReadError::Duplicate(42)))]);
    let policy = RetryPolicy::new().attempts(3).idempotent(true);
    let start = Instant::now();
    let result = Retry::new(&policy)
        .on_failure(record)
        .hedge(50 * MS)
        .unwrap()
        .already_done(receipt)
        .call_async(|| replica.read())
        .await;
    assert_eq!(result, Ok(42));
    assert_eq!(start.elapsed(), 60 * MS);
    assert_eq!(replica.dropped(), [1]);
    assert_eq!(take_records(), [(2, Next::Stop(StopReason::AlreadyDone))]);
    // Other errors pass through `receipt` unchanged: a permanent one stops the call as is.
    let replica = Replica::new(vec![(10, Err(ReadError::NotFound))]);
    let result = Retry::new(&policy)
        .hedge(50 * MS)
        .unwrap()
        .already_done(receipt)
        .call_async(|| replica.read())
        .await;
    assert_eq!(result, Err(ReadError::NotFound));
}

#[retryable(
    attempts = 3,
    base = "0ms",
    idempotent,
    hedge = "10ms",
    nested = "once"
)]
async fn hedged_once(started: &Mutex<u32>) -> Result<u32, ReadError> {
    *started.lock().unwrap() += 1;
    sleep(50 * MS).await;
    Err(ReadError::Unavailable)
}

#[retryable(attempts = 2, base = "0ms")]
async fn outer_of_hedged(started: &Mutex<u32>) -> Result<u32, ReadError> {
    hedged_once(started).await
}

#[tokio::test(start_paused = true)]
async fn nested_once_makes_one_attempt_and_no_hedge_inside_an_outer_attempt() {
    let started = Mutex::new(0);
    assert_eq!(outer_of_hedged(&started).await, Err(ReadError::Unavailable));
    // One attempt for each of the outer call's two, though each was slow past the delay.
    assert_eq!(*started.lock().unwrap(), 2);
    // Outside any attempt the same function hedges: three attempts start.
    *started.lock().unwrap() = 0;
    assert_eq!(hedged_once(&started).await, Err(ReadError::Unavailable));
    assert_eq!(*started.lock().unwrap(), 3);
}

static PANIC_BREAKER: CircuitBreaker = CircuitBreaker::new(2, Duration::from_secs(30));

#[retryable(attempts = 3, idempotent, hedge = "50ms", circuit = PANIC_BREAKER)]
async fn read_panicking_beside_two() -> Result<u32, ReadError> {
    if current_attempt().unwrap().number() == 3 {
        panic!("the second hedge panics");
    }
    sleep(Duration::from_secs(1)).await;
    Ok(1)
}

#[tokio::test(start_paused = true)]
async fn a_panicking_hedge_is_one_breaker_failure_not_one_per_sibling() {
    let joined = tokio::spawn(read_panicking_beside_two()).await;
    assert!(joined.unwrap_err().is_panic());
    // Attempts 1 and 2 were running when attempt 3 panicked: they were dropped, not failed.
    // Before the fix each sibling's permit counted the unwind as its own failure (3 failures
    // against a threshold of 2: open).
    assert_eq!(PANIC_BREAKER.state(), CircuitState::Closed);
    // One more failure reaches the threshold: the panic itself was counted.
    PANIC_BREAKER.try_acquire().unwrap().failed();
    assert_eq!(PANIC_BREAKER.state(), CircuitState::Open);
}

static JOINED_BREAKER: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(30));

#[retryable(attempts = 2, circuit = JOINED_BREAKER)]
async fn read_slowly() -> Result<u32, ReadError> {
    sleep(Duration::from_secs(1)).await;
    Ok(1)
}

#[tokio::test(start_paused = true)]
async fn calls_dropped_because_a_join_sibling_panicked_are_not_breaker_failures() {
    let joined = tokio::spawn(async {
        let panics = async {
            sleep(10 * MS).await;
            panic!("a sibling of the retryable calls panics");
        };
        tokio::join!(read_slowly(), read_slowly(), panics)
    })
    .await;
    assert!(joined.unwrap_err().is_panic());
    // Neither call failed: a threshold of 1 would have opened on the first.
    assert_eq!(JOINED_BREAKER.state(), CircuitState::Closed);
}

#[retryable(
    attempts = 3,
    base = "1ms",
    max_delay = "1s",
    idempotent,
    hedge = "50ms"
)]
async fn read_pushed_back(replica: &Replica) -> Result<u32, ReadError> {
    replica.read().await
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_over_max_delay_stops_a_hedged_call_from_starting_more() {
    // Attempt 1 answers after 400 ms; the hedge (attempt 2) is told to come back in 5 s, past
    // `max_delay`: a sequential call would stop, so no attempt 3 may start, hedge or retry.
    let replica = Replica::new(vec![
        (400, Ok(1)),
        (10, Err(ReadError::Busy { wait: 5000 * MS })),
        (10, Ok(3)),
    ]);
    assert_eq!(read_pushed_back(&replica).await, Ok(1));
    assert_eq!(replica.started(), [(1, Duration::ZERO), (2, 50 * MS)]);
}

#[retryable(attempts = 3, idempotent, hedge = "50ms")]
async fn busy_at_once_then_answer(
    starts: &Mutex<Vec<Duration>>,
    origin: Instant,
) -> Result<u32, ReadError> {
    starts.lock().unwrap().push(origin.elapsed());
    match current_attempt().unwrap().number() {
        1 => Err(ReadError::Busy { wait: 200 * MS }),
        n => Ok(n),
    }
}

/// The hedge timer is armed only once an attempt is pending; an attempt that fails on its first
/// poll with a retry-after leaves no hedge delay behind to cut that wait short.
#[tokio::test(start_paused = true)]
async fn an_attempt_that_fails_at_once_waits_its_retry_after_not_the_hedge_delay() {
    let starts = Mutex::new(Vec::new());
    let origin = Instant::now();
    assert_eq!(busy_at_once_then_answer(&starts, origin).await, Ok(2));
    assert_eq!(*starts.lock().unwrap(), [Duration::ZERO, 200 * MS]);
    assert_eq!(origin.elapsed(), 200 * MS);
}

/// The keys attempts of `ask_late` saw, by attempt number.
static LATE_KEYS: Mutex<Vec<(u32, String)>> = Mutex::new(Vec::new());

/// Attempts 1 and 2 ask for the key only after 100 ms (once a hedge is running beside them)
/// and fail; attempt 3, started when attempt 1 fails, asks after 60 ms (after attempt 2 failed)
/// and answers.
#[retryable(attempts = 3, idempotent, hedge = "50ms")]
async fn ask_late() -> Result<u32, ReadError> {
    let n = current_attempt().unwrap().number();
    sleep(Duration::from_millis(if n < 3 { 100 } else { 60 })).await;
    let key = current_attempt().unwrap().idempotency_key().to_string();
    LATE_KEYS.lock().unwrap().push((n, key));
    if n < 3 {
        Err(ReadError::Unavailable)
    } else {
        Ok(n)
    }
}

/// The key is drawn when a second attempt starts beside the first (not when the first starts,
/// which a call that never hedges never pays for), and every attempt sees that one.
#[tokio::test(start_paused = true)]
async fn attempts_that_ask_for_the_key_after_a_hedge_started_all_see_one() {
    LATE_KEYS.lock().unwrap().clear();
    assert_eq!(ask_late().await, Ok(3));
    let keys = LATE_KEYS.lock().unwrap().clone();
    assert_eq!(keys.iter().map(|k| k.0).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(keys.iter().all(|k| k.1 == keys[0].1 && k.1.len() == 32));
}

static EARLY_KEYS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Attempt 1 asks for the key and fails at once, alone; attempt 2 starts alone too.
#[retryable(attempts = 2, idempotent, hedge = "50ms", base = "0ms")]
async fn ask_then_fail() -> Result<u32, ReadError> {
    let attempt = current_attempt().unwrap();
    EARLY_KEYS
        .lock()
        .unwrap()
        .push(attempt.idempotency_key().to_string());
    if attempt.number() == 1 {
        Err(ReadError::Unavailable)
    } else {
        Ok(2)
    }
}

/// An attempt that ran alone and drew the key passes it on when it ends: the next attempt,
/// alone too, sends the same one.
#[tokio::test(start_paused = true)]
async fn a_key_drawn_by_an_attempt_that_ran_alone_is_the_next_attempts() {
    EARLY_KEYS.lock().unwrap().clear();
    assert_eq!(ask_then_fail().await, Ok(2));
    let keys = EARLY_KEYS.lock().unwrap().clone();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0], keys[1]);
}

/// The keys the calls of `step` saw, by the number of the `two_steps` attempt they ran in.
static STEP_KEYS: Mutex<Vec<(u32, String)>> = Mutex::new(Vec::new());

#[retryable(attempts = 1)]
async fn step(outer: u32) -> Result<(), ReadError> {
    let key = current_attempt().unwrap().idempotency_key().to_string();
    STEP_KEYS.lock().unwrap().push((outer, key));
    Ok(())
}

/// Two calls of `step` per attempt; attempt 1 makes its second after 100 ms, once the hedge
/// started at 50 ms runs beside it (attempt 2 makes its first and then hangs).
#[retryable(attempts = 2, idempotent, hedge = "50ms")]
async fn two_steps() -> Result<u32, ReadError> {
    let n = current_attempt().unwrap().number();
    step(n).await?;
    if n == 1 {
        sleep(Duration::from_millis(100)).await;
    } else {
        std::future::pending::<()>().await;
    }
    step(n).await?;
    Ok(n)
}

/// The first attempt runs on the call's own context until the hedge starts, then on one of its
/// own: the count of the calls made inside it moves with it, so its second `step` gets the
/// second ordinal's key, not the first's again (two different operations sharing a key, which a
/// receiver would deduplicate into one), and the hedge's first `step` sends the first's key.
#[tokio::test(start_paused = true)]
async fn calls_inside_a_first_attempt_keep_their_ordinals_when_a_hedge_starts_beside_it() {
    STEP_KEYS.lock().unwrap().clear();
    assert_eq!(two_steps().await, Ok(1));
    let keys = STEP_KEYS.lock().unwrap().clone();
    assert_eq!(keys.iter().map(|k| k.0).collect::<Vec<_>>(), [1, 2, 1]);
    assert_eq!(
        keys[0].1, keys[1].1,
        "the hedge's first step resends the first's key"
    );
    assert_ne!(
        keys[2].1, keys[0].1,
        "the second step of attempt 1 has a key of its own"
    );
}

/// Polled until its value is non-zero: every attempt answers `Ok(0)` at once.
fn not_ready(value: &u32) -> bool {
    *value == 0
}

#[retryable(
    attempts = 3,
    backoff = "fixed",
    base = "100ms",
    idempotent,
    hedge = "1s",
    retry_if = not_ready
)]
async fn poll_hedged(replica: &Replica) -> Result<u32, ReadError> {
    replica.read().await
}

/// A value `retry_if` flags is an answer, not a failure a second attempt could outrun: a hedged
/// poller waits its backoff between polls, as a sequential one does, instead of polling again
/// at once (regression: polls started at 0, 10 and 20 ms).
#[tokio::test(start_paused = true)]
async fn a_hedged_poller_waits_its_backoff_between_polls() {
    let replica = Replica::new(vec![(10, Ok(0)), (10, Ok(0)), (10, Ok(0))]);
    assert_eq!(poll_hedged(&replica).await, Ok(0));
    assert_eq!(
        replica.started(),
        [(1, Duration::ZERO), (2, 110 * MS), (3, 220 * MS)]
    );
}

/// Attempt 1 fails after 70 ms; its hedge, started at 50 ms, is told at 60 ms to come back in
/// 30 ms. The failure at 70 ms does not cut that wait short: attempt 3 starts at 90 ms, not at
/// 70 (regression: the pending retry-after and its breaker permit were dropped).
#[tokio::test(start_paused = true)]
async fn a_failure_while_a_retry_after_is_pending_does_not_cut_the_wait_short() {
    let replica = Replica::new(vec![
        (70, Err(ReadError::Unavailable)),
        (10, Err(ReadError::Busy { wait: 30 * MS })),
        (10, Ok(3)),
    ]);
    assert_eq!(read(&replica).await, Ok(3));
    assert_eq!(
        replica.started(),
        [(1, Duration::ZERO), (2, 50 * MS), (3, 90 * MS)]
    );
}

/// A longer retry-after given while a shorter one is pending is honoured too: the next attempt
/// waits for the later of the two.
#[tokio::test(start_paused = true)]
async fn of_two_pending_retry_afters_the_later_one_decides() {
    // Attempt 2 (the hedge, at 50 ms) says at 60 ms "in 30 ms" (until 90); attempt 1 says at
    // 70 ms "in 100 ms" (until 170).
    let replica = Replica::new(vec![
        (70, Err(ReadError::Busy { wait: 100 * MS })),
        (10, Err(ReadError::Busy { wait: 30 * MS })),
        (10, Ok(3)),
    ]);
    assert_eq!(read(&replica).await, Ok(3));
    assert_eq!(
        replica.started(),
        [(1, Duration::ZERO), (2, 50 * MS), (3, 170 * MS)]
    );
}

/// Opens on the fourth consecutive failure.
static FOUR_FAILURES: CircuitBreaker = CircuitBreaker::new(4, Duration::from_secs(10));

#[retryable(attempts = 3, idempotent, hedge = "50ms", circuit = FOUR_FAILURES)]
async fn read_counted(replica: &Replica) -> Result<u32, ReadError> {
    replica.read().await
}

/// The admission a pending retry-after covers is released as neither success nor failure (no
/// request went out with it): three failed attempts leave a four-failure breaker closed.
#[tokio::test(start_paused = true)]
async fn an_admission_a_pending_retry_after_covers_is_not_counted_by_the_breaker() {
    let replica = Replica::new(vec![
        (70, Err(ReadError::Unavailable)),
        (10, Err(ReadError::Busy { wait: 30 * MS })),
        (10, Err(ReadError::Unavailable)),
    ]);
    assert_eq!(read_counted(&replica).await, Err(ReadError::Unavailable));
    assert_eq!(
        replica.started(),
        [(1, Duration::ZERO), (2, 50 * MS), (3, 90 * MS)]
    );
    assert_eq!(FOUR_FAILURES.state(), CircuitState::Closed);
    // One more failure opens it: exactly three were counted.
    FOUR_FAILURES.try_acquire().unwrap().failed();
    assert_eq!(FOUR_FAILURES.state(), CircuitState::Open);
}
