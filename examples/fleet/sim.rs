//! Brooker's retry simulation ("Fixing retries with token buckets and circuit breakers", 2022),
//! with the crate's own protection types on the crate's virtual clock.
//!
//! The model is his: one service that fails each attempt with probability `f`, independently;
//! `clients` clients sharing a total of 1 000 calls per second, each with Poisson arrivals;
//! every request and every answer takes an exponential network time (mean 10 ms); a failed
//! attempt is retried at once (up to 3 retries) if the strategy allows. Load is attempts sent
//! per call made, success the share of calls that succeeded.
//!
//! The strategies are this crate's types, one per client (a client is one process of the
//! fleet): `RetryBudget`, `CircuitBreaker` (as Brooker's "retry circuit breaker": first tries
//! always go out, the breaker only decides retries), `AdaptiveThrottle` (which also refuses
//! first tries), and `FleetBudget` / `FleetBreaker`, each client a `fleet::Node` exchanging
//! every 50 ms with one store: a `MemoryStore` (the same rules as Redis, in this process), or a
//! real Redis through `RedisStore` for the smaller check run.

use retry_kit::fleet::{FleetBreaker, FleetBudget, MemoryStore, Node, RedisStore, Store};
use retry_kit::{AdaptiveThrottle, CircuitBreaker, CircuitPermit, RetryBudget, testing};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::time::Duration;

/// Calls per second, over all clients.
pub const TOTAL_RATE: f64 = 1000.0;
/// The retry budget's settings, per client and for the fleet alike.
pub const MAX_TOKENS: u32 = 20;
pub const TOKEN_RATIO: f64 = 0.1;
/// The fleet values' exchange interval.
pub const SYNC_EVERY: Duration = Duration::from_millis(50);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    None,
    Retries3,
    Budget,
    Breaker,
    FleetBudget,
    FleetBreaker,
    Throttle,
}

impl Strategy {
    pub const ALL: [Strategy; 7] = [
        Strategy::None,
        Strategy::Retries3,
        Strategy::Budget,
        Strategy::Breaker,
        Strategy::FleetBudget,
        Strategy::FleetBreaker,
        Strategy::Throttle,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Strategy::None => "none",
            Strategy::Retries3 => "retries3",
            Strategy::Budget => "budget",
            Strategy::Breaker => "breaker",
            Strategy::FleetBudget => "fleet_budget",
            Strategy::FleetBreaker => "fleet_breaker",
            Strategy::Throttle => "throttle",
        }
    }

    fn is_fleet(self) -> bool {
        matches!(self, Strategy::FleetBudget | Strategy::FleetBreaker)
    }
}

/// Where the fleet strategies keep their shared state.
pub enum Backing<'a> {
    /// The rules in this process.
    Memory,
    /// A real Redis (the store, and the runtime that drives its I/O).
    Redis(&'a RedisStore, &'a tokio::runtime::Runtime),
}

#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub clients: usize,
    pub failure_rate: f64,
    pub strategy: Strategy,
    /// Virtual seconds of arrivals (calls still under way then finish).
    pub seconds: f64,
    pub seed: u64,
}

#[derive(Clone, Debug)]
pub struct Row {
    pub clients: usize,
    pub failure_rate: f64,
    pub strategy: Strategy,
    pub calls: u64,
    pub attempts: u64,
    pub succeeded: u64,
    /// Exchanges the clients made (the fleet strategies only).
    pub exchanges: u64,
}

impl Row {
    pub fn load(&self) -> f64 {
        self.attempts as f64 / self.calls as f64
    }
    pub fn success(&self) -> f64 {
        self.succeeded as f64 / self.calls as f64
    }
}

/// A seeded generator (splitmix64): the runs are the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// An exponential draw with this mean, in nanoseconds.
    fn exp_ns(&mut self, mean_s: f64) -> u64 {
        (-(1.0 - self.unit()).ln() * mean_s * 1e9) as u64
    }
}

/// One client's protection.
enum Guard {
    None,
    Retries3,
    Budget(RetryBudget),
    Breaker(CircuitBreaker),
    FleetBudget(Node, FleetBudget),
    FleetBreaker(Node, FleetBreaker),
    Throttle(AdaptiveThrottle),
}

fn guard(strategy: Strategy) -> Guard {
    let open_for = Duration::from_secs(1);
    match strategy {
        Strategy::None => Guard::None,
        Strategy::Retries3 => Guard::Retries3,
        Strategy::Budget => Guard::Budget(RetryBudget::new(MAX_TOKENS, TOKEN_RATIO)),
        // Brooker's breaker: no retries while more than 10 % of recent outcomes failed.
        Strategy::Breaker => Guard::Breaker(CircuitBreaker::new(u32::MAX, open_for).failure_ratio(
            0.1,
            Duration::from_secs(10),
            1,
        )),
        Strategy::FleetBudget => {
            let node = Node::new();
            let budget = FleetBudget::new("sim", MAX_TOKENS, TOKEN_RATIO).sync_every(SYNC_EVERY);
            node.join(&budget);
            Guard::FleetBudget(node, budget)
        }
        Strategy::FleetBreaker => {
            let node = Node::new();
            let breaker = FleetBreaker::new("sim", 3, open_for).sync_every(SYNC_EVERY);
            node.join(&breaker);
            Guard::FleetBreaker(node, breaker)
        }
        Strategy::Throttle => Guard::Throttle(AdaptiveThrottle::new(2.0, Duration::from_secs(10))),
    }
}

struct Call<'a> {
    client: usize,
    attempts: u32,
    permit: Option<CircuitPermit<'a>>,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Arrival(usize),
    Answer(usize),
    Exchange(usize),
}

/// Run one configuration against `backing`.
pub fn run(config: &Config, backing: &Backing<'_>) -> Row {
    let mut rng = Rng(config.seed ^ (config.clients as u64).rotate_left(17));
    testing::seed_jitter(config.seed);
    let guards: Vec<Guard> = (0..config.clients)
        .map(|_| guard(config.strategy))
        .collect();
    let (row, _) = testing::record_sleeps(|| {
        // Made on the virtual clock, so that its times are the run's.
        let memory = MemoryStore::new();
        let mut queue: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::new();
        let mut seq = 0;
        let mut push = |q: &mut BinaryHeap<_>, at: u64, e: Event| {
            seq += 1;
            q.push(Reverse((at, seq, e)));
        };
        let per_client = TOTAL_RATE / config.clients as f64;
        let end = (config.seconds * 1e9) as u64;
        for c in 0..config.clients {
            let first = rng.exp_ns(1.0 / per_client);
            push(&mut queue, first, Event::Arrival(c));
            if config.strategy.is_fleet() {
                let phase = rng.next() % SYNC_EVERY.as_nanos() as u64;
                push(&mut queue, phase, Event::Exchange(c));
            }
        }
        let mut calls: Vec<Option<Call<'_>>> = Vec::new();
        let mut row = Row {
            clients: config.clients,
            failure_rate: config.failure_rate,
            strategy: config.strategy,
            calls: 0,
            attempts: 0,
            succeeded: 0,
            exchanges: 0,
        };
        let mut now = 0u64;
        let rtt = |rng: &mut Rng| rng.exp_ns(0.010) + rng.exp_ns(0.010);
        while let Some(Reverse((at, _, event))) = queue.pop() {
            if at > now {
                retry_runtime::clock::sleep_sync(Duration::from_nanos(at - now));
                now = at;
            }
            match event {
                Event::Arrival(c) => {
                    if now >= end {
                        continue;
                    }
                    let next = now + rng.exp_ns(1.0 / per_client);
                    push(&mut queue, next, Event::Arrival(c));
                    row.calls += 1;
                    let permit = match &guards[c] {
                        Guard::Throttle(t) if t.try_admit().is_err() => continue,
                        Guard::Breaker(b) => b.try_acquire().ok(),
                        Guard::FleetBreaker(_, b) => b.local().try_acquire().ok(),
                        _ => None,
                    };
                    row.attempts += 1;
                    calls.push(Some(Call {
                        client: c,
                        attempts: 1,
                        permit,
                    }));
                    push(
                        &mut queue,
                        now + rtt(&mut rng),
                        Event::Answer(calls.len() - 1),
                    );
                }
                Event::Answer(id) => {
                    let mut call = calls[id].take().expect("one answer per attempt");
                    let ok = rng.unit() >= config.failure_rate;
                    let guard = &guards[call.client];
                    match guard {
                        Guard::Budget(b) => outcome(b, ok),
                        Guard::FleetBudget(_, b) => outcome(b.local(), ok),
                        Guard::Throttle(t) if ok => t.accepted(),
                        _ => {}
                    }
                    if let Some(permit) = call.permit.take() {
                        if ok {
                            permit.succeeded()
                        } else {
                            permit.failed()
                        }
                    }
                    if ok {
                        row.succeeded += 1;
                        continue;
                    }
                    if call.attempts >= 4 {
                        continue;
                    }
                    let retry = match guard {
                        Guard::None => false,
                        Guard::Retries3 => true,
                        Guard::Budget(b) => b.allows_retry(),
                        Guard::FleetBudget(_, b) => b.local().allows_retry(),
                        Guard::Breaker(b) => match b.try_acquire() {
                            Ok(p) => {
                                call.permit = Some(p);
                                true
                            }
                            Err(_) => false,
                        },
                        Guard::FleetBreaker(_, b) => match b.local().try_acquire() {
                            Ok(p) => {
                                call.permit = Some(p);
                                true
                            }
                            Err(_) => false,
                        },
                        Guard::Throttle(t) => t.try_admit().is_ok(),
                    };
                    if retry {
                        call.attempts += 1;
                        row.attempts += 1;
                        calls[id] = Some(call);
                        push(&mut queue, now + rtt(&mut rng), Event::Answer(id));
                    }
                }
                Event::Exchange(c) => {
                    let node = match &guards[c] {
                        Guard::FleetBudget(node, _) | Guard::FleetBreaker(node, _) => node,
                        _ => unreachable!("only fleet clients exchange"),
                    };
                    let result = match backing {
                        Backing::Memory => at_once(node.exchange(&memory as &dyn Store)),
                        Backing::Redis(store, rt) => {
                            rt.block_on(node.exchange(*store as &dyn Store))
                        }
                    };
                    result.expect("the store answers");
                    row.exchanges += 1;
                    if now < end + 1_000_000_000 {
                        push(
                            &mut queue,
                            now + SYNC_EVERY.as_nanos() as u64,
                            Event::Exchange(c),
                        );
                    }
                }
            }
        }
        row
    });
    row
}

fn outcome(budget: &RetryBudget, ok: bool) {
    if ok {
        budget.record_success();
    } else {
        budget.record_failure();
    }
}

/// The output of a future that is ready at its first poll (an exchange with the
/// `MemoryStore`, which answers at once).
fn at_once<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => panic!("the memory store answers at once"),
    }
}

/// The strategies × failure rates × client counts of the published table.
pub const FAILURE_RATES: [f64; 6] = [0.0, 0.01, 0.1, 0.2, 0.5, 1.0];
pub const CLIENTS: [usize; 2] = [100, 1000];

/// Every row, on the in-process store. All on one virtual clock, continued from run to run:
/// the clock-reading types measure time from the first instant they read, so every run sees
/// the same instants relative to it, and writes the same numbers.
pub fn table(seconds: f64, seed: u64) -> Vec<Row> {
    testing::record_sleeps(|| rows(seconds, seed)).0
}

fn rows(seconds: f64, seed: u64) -> Vec<Row> {
    let mut rows = Vec::new();
    for clients in CLIENTS {
        for failure_rate in FAILURE_RATES {
            for strategy in Strategy::ALL {
                let config = Config {
                    clients,
                    failure_rate,
                    strategy,
                    seconds,
                    seed,
                };
                rows.push(run(&config, &Backing::Memory));
            }
        }
    }
    rows
}
