//! Fleet-wide protection (feature `redis`): one retry budget and one breaker state for every
//! process that names them, kept in Redis.
//!
//! A [`RetryBudget`](crate::RetryBudget) or [`CircuitBreaker`](crate::CircuitBreaker) bounds
//! one process. Spread the same load over 1 000 small clients and each sees too few calls to
//! estimate anything: per-client token buckets let almost every retry through, per-client
//! breakers trip on noise (Brooker, "Fixing retries with token buckets and circuit breakers",
//! 2022; `results/fleet/` reproduces it with this crate). [`FleetBudget`] keeps the budget's
//! rule over one token count for the whole fleet; [`FleetBreaker`] keeps one breaker state.
//!
//! ```no_run
//! # extern crate retry_runtime as retry_kit;
//! use retry_kit::fleet::{self, FleetBudget};
//! use retry_kit::{Classify, retryable};
//!
//! #[derive(Debug, Classify)]
//! #[classify(transient)]
//! struct Unavailable;
//!
//! static SEARCH: FleetBudget = FleetBudget::new("search", 100, 0.1);
//!
//! #[retryable(attempts = 3, budget = SEARCH)]
//! async fn search() -> Result<(), Unavailable> {
//!     Ok(())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), fleet::FleetError> {
//! // Once per process: exchange every fleet value it uses with Redis, in the background.
//! fleet::connect("redis://127.0.0.1:6379").await?;
//! search().await.unwrap();
//! # Ok(())
//! # }
//! ```
//!
//! # How it works
//!
//! **No call waits on Redis.** Each fleet value holds a local budget or breaker with the same
//! settings, and every decision is that local rule's, at the cost it always has (a
//! `FleetBudget`'s success path is a [`RetryBudget`](crate::RetryBudget)'s plus one atomic load:
//! the pointer to its local bucket). A background task ([`connect`]) exchanges every fleet
//! value of the process with Redis every `sync_every` (default 50 ms, the shortest among them):
//! **one** `EVALSHA` per process per interval, whatever the call rate, running a Lua script that
//! applies the process's pushes and answers the fleet's state atomically.
//!
//! - A budget pushes the net change its calls made to the local bucket since the last
//!   exchange; the script adds it to the fleet's tokens (a new fleet budget starts full; the
//!   count stays within `0..=max_tokens`) and answers them; the local bucket is set to the
//!   fleet's tokens plus whatever calls did while the exchange was under way.
//! - A breaker pushes what its local breaker did on its own: a trip (this process saw
//!   `failure_threshold` consecutive retryable failures), or a probe's verdict. A trip opens the
//!   fleet's breaker for `open_for` (two processes tripping the same closed phase open it once:
//!   a trip counts only against the epoch it was made in); then the fleet turns half-open and
//!   leases probes, at most `half_open_max` at once, to processes whose calls were refused; a
//!   lease lasts [`probe_lease`](FleetBreaker::probe_lease) (default `open_for`), so a frozen
//!   or dead holder delays the next probe by at most that; a verdict counts only under a live
//!   lease of the current epoch. A process without a lease refuses calls while the fleet is
//!   half-open.
//!
//! # What it guarantees
//!
//! - **The retries that staleness lets through are bounded.** Between two exchanges each
//!   process decides on its own copy of the fleet's tokens, so a fleet of `P` processes can
//!   start more retries than one shared bucket would. A copy only falls between exchanges
//!   (refunds aside), and once an exchange has told a process the fleet is at half it retries
//!   no more; so beyond the `⌈max_tokens / 2⌉ − 1` retries one bucket allows while it drains,
//!   the fleet starts at most `2 × P × n`, `n` being the retryable failures one process sees
//!   per interval (the interval in which the fleet crossed half, and the next, in which the
//!   processes that exchanged before the crossing still hold copies from before it). The
//!   long-run rate is the rule's: the tokens spent are pushed, so the fleet pays them back
//!   before the next retry. `results/fleet/` measures it.
//! - **No decision compares two machines' clocks.** A budget has no time in it. A breaker's
//!   open phase and leases are timed by Redis's clock alone (`TIME` in the script); a process
//!   is told how long is *left* and counts that down on its own clock.
//! - **Redis down or slow**: an exchange with no answer within the store's timeout fails, and
//!   every fleet value of the process decides by its local rule, with the same settings, from
//!   the state it had (`is_fallback()` is true); the episode is counted
//!   ([`NodeStats::fallbacks`], and `retry_kit_fleet_fallbacks_total` with `metrics`) and logged
//!   once (with `tracing`). A breaker held open by the fleet reverts to its local cool-down at
//!   most two intervals later.
//! - **Recovery**: the background task tries again every interval (connecting again if it
//!   must); the first exchange Redis answers pushes what the process did meanwhile and sets
//!   every value back to the fleet's state: every process is back on the fleet state one
//!   exchange after Redis answers again.
//!
//! # Choices where the specification is silent
//!
//! - **Settings** should be the same in every process that names a value: each exchange
//!   applies the pushing process's `max_tokens` (and a breaker's `open_for` and
//!   `half_open_max`). A fleet budget Redis has never seen starts full.
//! - **The push is a net change**, what the local bucket moved since the last exchange
//!   (charges and refunds together, each capped at the bucket's ends locally), not a count of
//!   outcomes: nothing is added to a call for the fleet. A process whose bucket is full
//!   refunds nothing locally, so its successes refill the fleet only once its copy is below
//!   full: the fleet errs towards fewer retries.
//! - **A breaker's trip** is a process's own: `failure_threshold` consecutive retryable
//!   failures in one process (the local rule) open the fleet's breaker; failures are not
//!   summed across processes. A process asks for a probe lease only when its calls were
//!   refused since the last exchange, so idle processes do not hold leases; it holds the
//!   local breaker open (refusing) while the fleet is half-open and the lease is another's.
//! - **Timing**: a process exchanges all its fleet values together, every `sync_every` of the
//!   shortest among them after the previous exchange ended; an exchange with no answer in
//!   250 ms ([`FleetBuilder::timeout`]) fails; a breaker held open by the fleet is held two
//!   intervals past the time Redis gave, so the fleet, not a local cool-down, ends the phase.
//! - [`connect`] fails only on a URL that is not a Redis URL: a server that cannot be reached
//!   at start is a fallback like any other, tried again every interval. Keys expire after a
//!   day without exchanges.
//! - Not provided: a `PerKey` of fleet values (one fleet value per key).
//!
//! # Simulations and tests
//!
//! The store sits behind a trait, [`Store`]: [`RedisStore`] is Redis, [`MemoryStore`] the same
//! rules in this process. A simulation makes a [`Node`] per simulated process, joins its fleet
//! values to it and drives [`Node::exchange`] on its own (virtual) time: the same code the
//! background task runs against Redis.

mod breaker;
mod budget;
mod node;
mod redis;
mod store;

pub use breaker::FleetBreaker;
pub use budget::FleetBudget;
pub use node::{Joinable, Node, NodeStats};
pub use redis::RedisStore;
pub use store::{
    BreakerRules, Exchanging, FleetPhase, MemoryStore, Pull, Push, Report, Store, StoreError,
};

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Join this process to the fleet: start the background task that exchanges every fleet value
/// the process uses ([`Node::global`]) with the Redis server at `url`, every `sync_every`.
/// Keys are under `retry-kit`; [`Fleet::builder`] sets another prefix and the exchange's
/// timeout.
///
/// Returns once the task is started: an invalid URL is an error, a server that cannot be
/// reached is not (the process keeps its local rules until it answers, and the task keeps
/// trying). Call it once per process, inside a tokio runtime; the task runs until
/// [`Fleet::disconnect`] or the runtime ends.
pub async fn connect(url: &str) -> Result<Fleet, FleetError> {
    Fleet::builder(url).connect().await
}

/// The background exchange [`connect`] started.
#[derive(Debug)]
pub struct Fleet {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Fleet {
    /// Settings for [`connect`]: the server's `url`, a key prefix, a timeout.
    pub fn builder(url: &str) -> FleetBuilder {
        FleetBuilder {
            url: url.to_owned(),
            prefix: "retry-kit".to_owned(),
            timeout: Duration::from_millis(250),
        }
    }

    /// Stop exchanging: every fleet value decides by its local rule from now on.
    pub fn disconnect(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.task.abort();
        Node::global().fall_back();
    }
}

/// Settings for [`connect`]; [`Fleet::builder`] makes one.
#[derive(Clone, Debug)]
pub struct FleetBuilder {
    url: String,
    prefix: String,
    timeout: Duration,
}

impl FleetBuilder {
    /// Keep the fleet's keys under `prefix` (default `retry-kit`): fleets that must not share
    /// state (test runs, environments) use different prefixes on one server.
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.prefix = prefix.to_owned();
        self
    }

    /// Fail an exchange that has no answer after `d` (default 250 ms): the process falls back
    /// to its local rules until one succeeds.
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = d;
        self
    }

    /// Start the background exchange, as [`connect`].
    pub async fn connect(self) -> Result<Fleet, FleetError> {
        let store = RedisStore::open(&self.url, &self.prefix)
            .map_err(FleetError)?
            .timeout(self.timeout);
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let task = tokio::spawn(async move {
            let node = Node::global();
            while !stopped.load(Ordering::Relaxed) {
                let interval = node.interval().unwrap_or(node::SYNC_EVERY);
                let _ = node.exchange(&store).await;
                tokio::time::sleep(interval).await;
            }
        });
        Ok(Fleet { stop, task })
    }
}

/// Why [`connect`] could not start: the URL is not a Redis URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FleetError(StoreError);

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for FleetError {}
