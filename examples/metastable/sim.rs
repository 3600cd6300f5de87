//! The core of the metastable-failure simulation, shared by the example (`main.rs`) and by
//! `tests/metastable.rs`, which runs a short version and asserts its shape.
//!
//! A server with a bounded FIFO queue serves requests at a fixed rate; clients send requests
//! at a steady rate below it, each one call through the crate's own retry loop (`Retry`, with
//! `attempt_timeout` and, per row, a `RetryBudget`, a `CircuitBreaker` or an `AdaptivePolicy`).
//! Everything runs on tokio's paused clock, on one thread, with seeded draws.

use retry_kit::adaptive::{AdaptivePolicy, Rule, Stats, Tuning};
use retry_kit::{
    CircuitBreaker, CircuitOpen, Classify, Jitter, Retry, RetryBudget, RetryPolicy, TimedOut,
    testing,
};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;
use tokio::time::{Instant, sleep_until};

/// The parameters of one simulation.
#[derive(Clone, Debug)]
pub struct Config {
    /// Requests the server completes per second, outside the trigger.
    pub capacity: u32,
    /// Requests that may wait for service; one more is rejected at once.
    pub queue: usize,
    /// Requests the clients start per second (Poisson arrivals).
    pub load: f64,
    /// Each attempt's `attempt_timeout`.
    pub timeout: Duration,
    /// Attempts per call in the rows that retry.
    pub attempts: u32,
    /// The trigger: capacity is halved from `trigger_start` for `trigger_len` seconds.
    pub trigger_start: u64,
    pub trigger_len: u64,
    /// The run ends here, in seconds of virtual time.
    pub run: u64,
    /// Seeds the arrivals and the retry jitter.
    pub seed: u64,
}

impl Config {
    /// The first second after the trigger.
    pub fn trigger_end(&self) -> u64 {
        self.trigger_start + self.trigger_len
    }
}

/// What protects the server in one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protection {
    /// One attempt per call.
    NoRetries,
    /// Retries with backoff and jitter, nothing else.
    Retries,
    /// The same, with a `RetryBudget`.
    Budget,
    /// The same, with a `CircuitBreaker`.
    Breaker,
    /// The same, with an `AdaptivePolicy` that retries less while attempts fail.
    Adaptive,
}

impl Protection {
    /// Every row, in the order of the table.
    pub const ALL: [Protection; 5] = [
        Protection::NoRetries,
        Protection::Retries,
        Protection::Budget,
        Protection::Breaker,
        Protection::Adaptive,
    ];

    /// The row's name in the table and the legend.
    pub fn label(self) -> &'static str {
        match self {
            Protection::NoRetries => "no retries (attempts 1)",
            Protection::Retries => "retries, unprotected",
            Protection::Budget => "retries + RetryBudget",
            Protection::Breaker => "retries + CircuitBreaker",
            Protection::Adaptive => "retries + AdaptivePolicy",
        }
    }
}

/// The retry budget of the budget row: gRPC's throttling, 100 tokens, 0.1 back per success.
pub const BUDGET: (u32, f64) = (100, 0.1);
/// The breaker of the breaker row: open after 10 consecutive failures, for 2 s, and close
/// after 5 probe successes (at most 5 at once).
pub const BREAKER: (u32, Duration, u32) = (10, Duration::from_secs(2), 5);
/// The adaptive row retries only while at most this share of recent attempts failed.
pub const ADAPTIVE_FAILURE_RATE: f64 = 0.1;

/// More than a tenth of recent attempts failing: the server is overloaded, and a retry would
/// add to what overloads it. Make one attempt.
fn single_attempt_when_failing(stats: &Stats, t: Tuning) -> Tuning {
    if stats.failure_rate > ADAPTIVE_FAILURE_RATE {
        Tuning { attempts: 1, ..t }
    } else {
        t
    }
}

const RULES: &[Rule] = &[single_attempt_when_failing];

/// What one row measured, per second of virtual time.
#[derive(Clone, Debug)]
pub struct Row {
    pub protection: Protection,
    /// Calls that succeeded (an attempt answered within its timeout), by the second they did.
    pub goodput: Vec<u32>,
    /// Attempts that reached the server (served or rejected), by the second they arrived.
    pub attempts: Vec<u32>,
    /// Calls started, by second.
    pub arrivals: Vec<u32>,
}

impl Row {
    /// Mean goodput per second over `[from, to)`.
    pub fn goodput_between(&self, from: u64, to: u64) -> f64 {
        mean(&self.goodput[from as usize..to as usize])
    }

    /// Attempts the server received per call started over `[from, to)`.
    pub fn amplification(&self, from: u64, to: u64) -> f64 {
        let range = from as usize..to as usize;
        let attempts: u32 = self.attempts[range.clone()].iter().sum();
        let calls: u32 = self.arrivals[range].iter().sum();
        f64::from(attempts) / f64::from(calls.max(1))
    }

    /// Goodput before the trigger: the mean over the 10 seconds before it.
    pub fn level_before(&self, config: &Config) -> f64 {
        self.goodput_between(
            config.trigger_start.saturating_sub(10),
            config.trigger_start,
        )
    }

    /// Seconds from the end of the trigger to the first second that starts `RECOVERY_WINDOW`
    /// seconds in a row in which goodput is within 5 % of the `steady` run's (the same arrivals
    /// without the trigger: the level before it, with the noise of the Poisson arrivals taken
    /// out). Goodput is compared over 2 s, so that a burst of arrivals answered a moment later
    /// does not count; `None` if there is no such second within the run.
    pub fn recovery(&self, config: &Config, steady: &Row) -> Option<u64> {
        let back = |t: u64| {
            let level = steady.goodput_between(t, t + 2);
            (self.goodput_between(t, t + 2) - level).abs() <= 0.05 * level
        };
        (config.trigger_end()..=config.run.saturating_sub(RECOVERY_WINDOW + 1))
            .find(|&s| (s..s + RECOVERY_WINDOW).all(back))
            .map(|s| s - config.trigger_end())
    }
}

/// How many seconds in a row goodput must be back for the row to count as recovered.
pub const RECOVERY_WINDOW: u64 = 5;

fn mean(values: &[u32]) -> f64 {
    values.iter().map(|v| f64::from(*v)).sum::<f64>() / values.len().max(1) as f64
}

/// What an attempt can fail with.
#[derive(Debug, Classify)]
pub enum SimError {
    /// The queue was full: rejected at once, worth retrying.
    #[classify(transient)]
    QueueFull,
    /// The attempt's timeout: idempotent-only, so retried by the idempotent policy.
    #[classify(delegate)]
    Timeout(TimedOut),
    /// The breaker refused the call.
    #[classify(delegate)]
    Open(CircuitOpen),
}

impl From<TimedOut> for SimError {
    fn from(t: TimedOut) -> Self {
        SimError::Timeout(t)
    }
}

impl From<CircuitOpen> for SimError {
    fn from(open: CircuitOpen) -> Self {
        SimError::Open(open)
    }
}

/// A small seeded generator (splitmix64) for the arrivals.
struct Draws(u64);

impl Draws {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// The gap to the next Poisson arrival at `rate` per second.
    fn gap(&mut self, rate: f64) -> Duration {
        Duration::from_secs_f64(-self.unit().ln() / rate)
    }
}

/// The server: one worker taking requests in arrival order from a bounded queue. Service is
/// deterministic, so an admitted request's completion time is known when it is admitted; the
/// worker serves it then whether or not its client is still waiting (a timed-out client's
/// request is wasted work, which is what sustains the overload).
struct Server {
    start: Instant,
    config: Config,
    /// When each admitted request still waiting will start being served, in order.
    waiting: VecDeque<Instant>,
    /// When the worker finishes what it has admitted so far.
    free_at: Instant,
    attempts: Vec<u32>,
}

impl Server {
    /// The service time of a request starting at `at`: one over the capacity, doubled during
    /// the trigger.
    fn service_time(&self, at: Instant) -> Duration {
        let second = (at - self.start).as_secs();
        let trigger = self.config.trigger_start..self.config.trigger_end();
        let rate = if trigger.contains(&second) {
            self.config.capacity / 2
        } else {
            self.config.capacity
        };
        Duration::from_secs(1) / rate
    }

    /// Admit a request arriving now: when it will be answered, or `QueueFull`.
    fn admit(&mut self, now: Instant) -> Result<Instant, SimError> {
        count(&mut self.attempts, self.start, now);
        while self.waiting.front().is_some_and(|begin| *begin <= now) {
            self.waiting.pop_front();
        }
        if self.waiting.len() >= self.config.queue {
            return Err(SimError::QueueFull);
        }
        let begin = self.free_at.max(now);
        self.free_at = begin + self.service_time(begin);
        self.waiting.push_back(begin);
        Ok(self.free_at)
    }
}

fn count(bins: &mut [u32], start: Instant, now: Instant) {
    if let Some(bin) = bins.get_mut((now - start).as_secs() as usize) {
        *bin += 1;
    }
}

/// Everything the client tasks of one row share.
struct World {
    server: RefCell<Server>,
    policy: RetryPolicy,
    timeout: Duration,
    budget: RetryBudget,
    breaker: CircuitBreaker,
    adaptive: AdaptivePolicy,
    goodput: RefCell<Vec<u32>>,
    arrivals: RefCell<Vec<u32>>,
    start: Instant,
}

impl World {
    /// One attempt: queue at the server and wait for the answer.
    async fn attempt(&self) -> Result<(), SimError> {
        let answered = self.server.borrow_mut().admit(Instant::now())?;
        sleep_until(answered).await;
        Ok(())
    }

    /// One call, through the crate's retry loop with this row's protection.
    async fn call(&self, protection: Protection) {
        count(&mut self.arrivals.borrow_mut(), self.start, Instant::now());
        let retry = Retry::new(&self.policy);
        let op = || self.attempt();
        let result = match protection {
            Protection::NoRetries | Protection::Retries => {
                retry.attempt_timeout(self.timeout).call_async(op).await
            }
            Protection::Budget => {
                retry
                    .budget(&self.budget)
                    .attempt_timeout(self.timeout)
                    .call_async(op)
                    .await
            }
            Protection::Breaker => {
                retry
                    .circuit(&self.breaker)
                    .attempt_timeout(self.timeout)
                    .call_async(op)
                    .await
            }
            Protection::Adaptive => {
                retry
                    .adaptive(&self.adaptive)
                    .attempt_timeout(self.timeout)
                    .call_async(op)
                    .await
            }
        };
        if result.is_ok() {
            count(&mut self.goodput.borrow_mut(), self.start, Instant::now());
        }
    }
}

/// The same arrivals without the trigger, one attempt per call: the level goodput recovers to.
pub fn steady(config: &Config) -> Row {
    let config = Config {
        trigger_len: 0,
        ..config.clone()
    };
    run(&config, Protection::NoRetries)
}

/// Run one row on a fresh paused runtime, with fresh shared protection.
pub fn run(config: &Config, protection: Protection) -> Row {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        // The jitter generator is per thread, and every task of the row runs on this one.
        testing::seed_jitter(config.seed);
        let start = Instant::now();
        let seconds = config.run as usize;
        let attempts = match protection {
            Protection::NoRetries => 1,
            _ => config.attempts,
        };
        let world = Rc::new(World {
            server: RefCell::new(Server {
                start,
                config: config.clone(),
                waiting: VecDeque::new(),
                free_at: start,
                attempts: vec![0; seconds],
            }),
            // Timeouts are retried: the request is idempotent (the server may have done it).
            policy: RetryPolicy::exponential(Duration::from_millis(100))
                .attempts(attempts)
                .jitter(Jitter::Full)
                .max_delay(Duration::from_secs(2))
                .idempotent(true),
            timeout: config.timeout,
            budget: RetryBudget::new(BUDGET.0, BUDGET.1),
            breaker: CircuitBreaker::new(BREAKER.0, BREAKER.1)
                .half_open_max(BREAKER.2)
                .success_threshold(BREAKER.2),
            adaptive: AdaptivePolicy::new(RULES).max_age(Duration::from_secs(10)),
            goodput: RefCell::new(vec![0; seconds]),
            arrivals: RefCell::new(vec![0; seconds]),
            start,
        });
        let end = start + Duration::from_secs(config.run);
        let mut draws = Draws(config.seed);
        let mut next = start + draws.gap(config.load);
        while next < end {
            sleep_until(next).await;
            let world = Rc::clone(&world);
            tokio::task::spawn_local(async move { world.call(protection).await });
            next += draws.gap(config.load);
        }
        sleep_until(end).await;
        Row {
            protection,
            goodput: world.goodput.borrow().clone(),
            attempts: world.server.borrow().attempts.clone(),
            arrivals: world.arrivals.borrow().clone(),
        }
    })
}
