//! The contention simulation behind the jitter study: a discrete-event rerun of Marc Brooker's
//! "Exponential Backoff And Jitter" experiment (AWS Architecture Blog, 2015), with every wait
//! computed by retry-kit's own policy code.
//!
//! `N` clients each make one optimistic-concurrency write to a single row. A client reads the
//! row's version, then writes with that version; the server accepts the write only if the version
//! is still current (and then bumps it), otherwise the client backs off and starts again with a
//! fresh read. A client stops after its one successful write. Every network hop takes
//! `|Normal(10 ms, 2 ms)|`; the server itself takes no time.
//!
//! Time is virtual: an event queue ordered by (time, insertion order) drives the run, so nothing
//! sleeps, nothing runs on another thread, and a run is a pure function of its seed.
//!
//! Included both by the example (`benches/examples/contention/main.rs`) and by
//! `benches/tests/contention.rs`.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};
use retry_kit::{Jitter, RetryPolicy};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// The cap on any one wait, as in the original study.
pub const CAP: Duration = Duration::from_millis(2000);

/// Mean and standard deviation of one network hop.
pub const HOP_MEAN: Duration = Duration::from_millis(10);
pub const HOP_SD: Duration = Duration::from_millis(2);

/// The backoff algorithms compared, in the study's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Retry at once after every conflict.
    NoBackoff,
    /// `min(2000, 5 * 2^k)` ms after the k-th consecutive failure, no randomisation.
    Exponential,
    /// Full jitter on the exponential schedule: uniform in `[0, d]`.
    FullJitter,
    /// Equal jitter on the exponential schedule: `d/2 + uniform[0, d/2]`.
    EqualJitter,
    /// `min(2000, uniform[5, 3 * previous])` ms, previous starting at 5 ms.
    Decorrelated,
}

impl Algorithm {
    /// Every algorithm, in the order the CSV and the chart list them.
    pub const ALL: [Algorithm; 5] = [
        Algorithm::NoBackoff,
        Algorithm::Exponential,
        Algorithm::FullJitter,
        Algorithm::EqualJitter,
        Algorithm::Decorrelated,
    ];

    /// The name used in the CSV's `algorithm` column and the chart's legend.
    pub const fn name(self) -> &'static str {
        match self {
            Algorithm::NoBackoff => "no_backoff",
            Algorithm::Exponential => "exponential",
            Algorithm::FullJitter => "full_jitter",
            Algorithm::EqualJitter => "equal_jitter",
            Algorithm::Decorrelated => "decorrelated_jitter",
        }
    }

    /// The retry-kit policy whose delays this algorithm uses.
    ///
    /// The study's nominal wait after the k-th consecutive failure is `min(2000, 5 * 2^k)` ms,
    /// i.e. 10, 20, 40, ... ms. Our exponential shape is `base * multiplier^(k-1)`, so
    /// `base = 10 ms`, `multiplier = 2`, `max_delay = 2000 ms` gives exactly that schedule.
    ///
    /// Decorrelated jitter ignores the attempt number: our policy waits
    /// `min(max_delay, uniform[base, 3 * previous])` with `previous` starting at `base`, so
    /// `base` is both the lower bound and the seed of the chain. The study's decorrelated wait is
    /// `min(2000, uniform(5, 3 * previous))` with previous starting at 5 ms, hence base 5 ms
    /// for that mode (10 ms would raise the floor of every wait and change the experiment).
    ///
    /// "No backoff" is a fixed zero delay, still asked of the policy so every wait in the
    /// simulation, even a zero one, comes from the runtime.
    ///
    /// Attempts are unbounded (`u32::MAX`): in the study every client keeps trying until its
    /// write succeeds.
    pub const fn policy(self) -> RetryPolicy {
        const EXPONENTIAL: RetryPolicy = RetryPolicy::exponential(Duration::from_millis(10))
            .multiplier(2.0)
            .max_delay(CAP)
            .attempts(u32::MAX);
        match self {
            Algorithm::NoBackoff => RetryPolicy::fixed(Duration::ZERO)
                .max_delay(CAP)
                .jitter(Jitter::None)
                .attempts(u32::MAX),
            Algorithm::Exponential => EXPONENTIAL.jitter(Jitter::None),
            Algorithm::FullJitter => EXPONENTIAL.jitter(Jitter::Full),
            Algorithm::EqualJitter => EXPONENTIAL.jitter(Jitter::Equal),
            Algorithm::Decorrelated => RetryPolicy::exponential(Duration::from_millis(5))
                .max_delay(CAP)
                .jitter(Jitter::Decorrelated)
                .attempts(u32::MAX),
        }
    }
}

/// What one run of one group of clients produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOutcome {
    /// When the last client learned that its write succeeded, from the common start.
    pub completion: Duration,
    /// Write calls that reached the server, successful ones included (at least `clients`).
    pub write_calls: u64,
}

/// The mean over the runs of one grid point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub clients: u32,
    pub algorithm: Algorithm,
    /// Mean completion time of the whole group, in milliseconds.
    pub completion_ms: f64,
    /// Mean number of write calls.
    pub write_calls: f64,
}

/// Means over `runs` runs of `clients` clients under `algorithm`.
///
/// Run `r` of a point is seeded from `(seed, clients, algorithm, r)` alone, so a point's numbers
/// do not depend on which other points are computed: a test on a reduced grid sees exactly the
/// numbers of the full grid at the same points.
pub fn point(algorithm: Algorithm, clients: u32, runs: u32, seed: u64) -> Point {
    let runs = runs.max(1);
    let (mut completion_ns, mut calls) = (0u128, 0u128);
    for run in 0..runs {
        let outcome = simulate(
            algorithm,
            clients,
            stream_seed(seed, algorithm, clients, run),
        );
        completion_ns += outcome.completion.as_nanos();
        calls += u128::from(outcome.write_calls);
    }
    Point {
        clients,
        algorithm,
        completion_ms: completion_ns as f64 / f64::from(runs) / 1e6,
        write_calls: calls as f64 / f64::from(runs),
    }
}

/// One run: `clients` clients start together at time zero and contend until every one has
/// written once.
pub fn simulate(algorithm: Algorithm, clients: u32, seed: u64) -> RunOutcome {
    let policy = algorithm.policy();
    let mut rng = Rng64::new(seed);
    let mut queue = Queue::default();
    let mut state = vec![
        Client {
            failures: 0,
            previous: policy.settings().base,
        };
        clients as usize
    ];
    let mut version = 0u64;
    let mut write_calls = 0u64;
    let mut completion = 0u64;

    for client in 0..clients {
        let arrives = rng.hop();
        queue.push(arrives, client, Event::ReadAtServer);
    }

    while let Some((now, client, event)) = queue.pop() {
        match event {
            Event::ReadAtServer => {
                // The reply travels back and the client writes at once: two hops.
                let arrives = now.saturating_add(rng.hop()).saturating_add(rng.hop());
                queue.push(arrives, client, Event::WriteAtServer { read: version });
            }
            Event::WriteAtServer { read } => {
                write_calls += 1;
                let accepted = read == version;
                if accepted {
                    version += 1;
                }
                let arrives = now.saturating_add(rng.hop());
                queue.push(arrives, client, Event::ReplyAtClient { accepted });
            }
            Event::ReplyAtClient { accepted: true } => completion = completion.max(now),
            Event::ReplyAtClient { accepted: false } => {
                let c = &mut state[client as usize];
                c.failures = c.failures.saturating_add(1);
                // As the runtime's own loop does: draw only when the mode needs a draw.
                let draw = if policy.settings().jitter.needs_draw() {
                    rng.next_u64()
                } else {
                    0
                };
                let wait = policy.jittered_delay(c.failures, c.previous, draw);
                c.previous = wait;
                let arrives = now.saturating_add(nanos(wait)).saturating_add(rng.hop());
                queue.push(arrives, client, Event::ReadAtServer);
            }
        }
    }

    RunOutcome {
        completion: Duration::from_nanos(completion),
        write_calls,
    }
}

#[derive(Clone, Copy)]
struct Client {
    /// Consecutive failed writes so far: the policy's attempt number `k` for the next wait.
    failures: u32,
    /// The previous actual wait (the policy's base before the first), for decorrelated jitter.
    previous: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// The client's read reaches the server, which answers with the current version.
    ReadAtServer,
    /// The client's write, made with the version it `read`, reaches the server.
    WriteAtServer { read: u64 },
    /// The server's answer to a write reaches the client.
    ReplyAtClient { accepted: bool },
}

/// A min-queue of events by virtual time (nanoseconds), ties broken by insertion order so that
/// a run never depends on how the heap happens to order equal keys.
#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Reverse<(u64, u64, u32, Event)>>,
    next_seq: u64,
}

impl Queue {
    fn push(&mut self, at: u64, client: u32, event: Event) {
        self.heap.push(Reverse((at, self.next_seq, client, event)));
        self.next_seq += 1;
    }

    fn pop(&mut self) -> Option<(u64, u32, Event)> {
        self.heap
            .pop()
            .map(|Reverse((at, _, client, event))| (at, client, event))
    }
}

/// The run's one random stream: jitter draws and network hops, from a named generator
/// (xoshiro256++) rather than `StdRng`/`SmallRng`, whose algorithms may change between rand
/// releases or differ between platforms.
struct Rng64 {
    rng: Xoshiro256PlusPlus,
    /// Box–Muller yields normals in pairs; the second waits here.
    spare: Option<f64>,
}

impl Rng64 {
    fn new(seed: u64) -> Self {
        Rng64 {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            spare: None,
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Uniform in `(0, 1]`, with 53 random bits.
    fn unit_open_closed(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A standard normal deviate by the Box–Muller transform.
    fn standard_normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let radius = (-2.0 * self.unit_open_closed().ln()).sqrt();
        let angle = std::f64::consts::TAU * self.unit_open_closed();
        self.spare = Some(radius * angle.sin());
        radius * angle.cos()
    }

    /// One network hop, `|Normal(HOP_MEAN, HOP_SD)|`, in whole nanoseconds.
    fn hop(&mut self) -> u64 {
        let mean = HOP_MEAN.as_nanos() as f64;
        let sd = HOP_SD.as_nanos() as f64;
        // `as` saturates; the value is a few tens of milliseconds in nanoseconds anyway.
        (mean + sd * self.standard_normal()).abs().round() as u64
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The seed of one run: the study's seed mixed with the point and run index (splitmix64's
/// finaliser applied after each field, so neighbouring runs get unrelated streams).
pub fn stream_seed(seed: u64, algorithm: Algorithm, clients: u32, run: u32) -> u64 {
    let index = Algorithm::ALL
        .iter()
        .position(|a| *a == algorithm)
        .unwrap_or(0) as u64;
    [index, u64::from(clients), u64::from(run)]
        .iter()
        .fold(mix(seed), |acc, field| mix(acc ^ mix(*field)))
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
