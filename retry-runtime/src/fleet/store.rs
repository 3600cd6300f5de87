//! The seam between a process and the fleet's shared state: what one exchange sends
//! ([`Push`]) and gets back ([`Pull`]), the [`Store`] that answers it, and [`MemoryStore`], the
//! same rules kept in this process for simulations and tests. [`RedisStore`](super::RedisStore)
//! keeps them in Redis, in one Lua script that does exactly what [`MemoryStore`] does.

use crate::clock;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// One fleet value's part of an exchange, as a process sends it.
///
/// Tokens are in millionths of a token, as [`RetryBudget`](crate::RetryBudget) keeps them.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Push {
    /// A [`FleetBudget`](super::FleetBudget): what this process's calls did to its tokens
    /// since its last exchange (charges and refunds, net), and the bucket's size.
    Budget {
        /// The budget's name.
        name: &'static str,
        /// Net change of the tokens since the last exchange, in millionths.
        delta: i64,
        /// `max_tokens`, in millionths.
        max: u64,
    },
    /// A [`FleetBreaker`](super::FleetBreaker): what this process saw since its last exchange.
    Breaker {
        /// The breaker's name.
        name: &'static str,
        /// The fleet phase this process last pulled (the breaker's epoch): a trip or a probe
        /// verdict counts only against the phase it was made in.
        epoch: u64,
        /// What happened here: see [`Report`].
        report: Report,
        /// The breaker's settings the fleet applies.
        rules: BreakerRules,
    },
}

/// What a process reports of a [`FleetBreaker`] in one exchange.
///
/// [`FleetBreaker`]: super::FleetBreaker
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Report {
    /// Nothing new; if the fleet is half-open, ask for a probe lease when `wants_probe`.
    Quiet {
        /// Whether this process has calls waiting that a probe lease would let through.
        wants_probe: bool,
    },
    /// The local breaker opened on this process's own failures: open it for the fleet.
    Tripped,
    /// This process's probes (under lease `lease`) closed its local breaker.
    ProbeSucceeded {
        /// The lease the probes ran under.
        lease: u64,
    },
    /// A probe under lease `lease` failed: open the breaker again for the fleet.
    ProbeFailed {
        /// The lease the probe ran under.
        lease: u64,
    },
}

/// The fleet-wide settings of a [`FleetBreaker`](super::FleetBreaker), in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BreakerRules {
    /// How long the fleet stays open after a trip, in ms.
    pub open_ms: u64,
    /// Probe leases granted at once while half-open.
    pub half_open_max: u64,
    /// How long a probe lease lasts, in ms: a process that holds one and goes silent (frozen,
    /// partitioned, dead) gives it up after this.
    pub lease_ms: u64,
}

/// What the fleet answers for one value, in the order of the pushes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pull {
    /// A budget's tokens after this exchange, in millionths.
    Budget {
        /// The fleet's tokens.
        tokens: u64,
    },
    /// A breaker's fleet state after this exchange.
    Breaker(FleetPhase),
}

/// A [`FleetBreaker`](super::FleetBreaker)'s state in the store, as one exchange reads it.
/// Times are what is *left*, measured on the store's clock only: no process compares its clock
/// with another's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FleetPhase {
    /// Which phase: closed, open or half-open.
    pub state: crate::CircuitState,
    /// Changes with every change of phase.
    pub epoch: u64,
    /// While open: milliseconds until it turns half-open.
    pub open_left_ms: u64,
    /// While half-open: the lease this process holds (0 for none).
    pub lease: u64,
}

/// Why an exchange failed: the store could not be reached, or answered late or wrongly. The
/// process keeps its local rule until an exchange succeeds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError(pub(crate) String);

impl StoreError {
    /// An error with this explanation (for a [`Store`] of one's own).
    pub fn new(message: impl Into<String>) -> Self {
        StoreError(message.into())
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

/// The future an exchange returns.
pub type Exchanging<'a> = Pin<Box<dyn Future<Output = Result<Vec<Pull>, StoreError>> + Send + 'a>>;

/// Where the fleet's state lives: one atomic exchange of a process's pushes for the fleet's
/// answers. [`RedisStore`](super::RedisStore) is the real one; [`MemoryStore`] keeps the same
/// rules in this process, for simulations and tests that drive a
/// [`Node`](super::Node)'s exchanges themselves.
pub trait Store: Send + Sync {
    /// Apply `pushes` atomically, one [`Pull`] per push in the same order.
    fn exchange<'a>(&'a self, pushes: &'a [Push]) -> Exchanging<'a>;
}

/// The rule a budget's exchange applies: a new fleet budget starts full; the push's net change
/// is added, within `0..=max`.
pub(crate) fn budget_rule(stored: Option<u64>, delta: i64, max: u64) -> u64 {
    let tokens = i128::from(stored.unwrap_or(max).min(max)) + i128::from(delta);
    // Within `0..=max`, a `u64`.
    u64::try_from(tokens.clamp(0, i128::from(max))).unwrap_or(max)
}

/// A breaker's state as a store keeps it.
#[derive(Clone, Debug, Default)]
pub(crate) struct BreakerRecord {
    /// 0 closed, 1 open, 2 half-open.
    pub(crate) state: u8,
    pub(crate) epoch: u64,
    /// While open, when it turns half-open (store clock, ms).
    pub(crate) open_until: u64,
    /// Live probe leases: id and expiry (store clock, ms).
    pub(crate) leases: Vec<(u64, u64)>,
    /// The last lease id given.
    pub(crate) last_lease: u64,
}

/// The rule a breaker's exchange applies at store time `now` (ms). Mirrored line by line by the
/// Lua script of [`RedisStore`](super::RedisStore).
pub(crate) fn breaker_rule(
    rec: &mut BreakerRecord,
    now: u64,
    epoch: u64,
    report: Report,
    rules: BreakerRules,
) -> FleetPhase {
    let open = |rec: &mut BreakerRecord| {
        rec.state = 1;
        rec.epoch += 1;
        rec.open_until = now.saturating_add(rules.open_ms);
        rec.leases.clear();
    };
    // An open phase whose time is up turns half-open first, so a report is judged against the
    // phase that is current now.
    if rec.state == 1 && now >= rec.open_until {
        rec.state = 2;
        rec.epoch += 1;
        rec.leases.clear();
    }
    rec.leases.retain(|&(_, until)| until > now);
    let mut lease = 0;
    match report {
        Report::Tripped => {
            // Only a trip made in the phase it saw: two processes that trip the same closed
            // phase open it once.
            if rec.state == 0 && epoch == rec.epoch {
                open(rec);
            }
        }
        Report::ProbeFailed { lease } => {
            if rec.state == 2 && epoch == rec.epoch && rec.leases.iter().any(|l| l.0 == lease) {
                open(rec);
            }
        }
        Report::ProbeSucceeded { lease } => {
            if rec.state == 2 && epoch == rec.epoch && rec.leases.iter().any(|l| l.0 == lease) {
                rec.state = 0;
                rec.epoch += 1;
                rec.leases.clear();
            }
        }
        Report::Quiet { wants_probe } => {
            if rec.state == 2 && wants_probe && (rec.leases.len() as u64) < rules.half_open_max {
                rec.last_lease += 1;
                lease = rec.last_lease;
                rec.leases.push((lease, now.saturating_add(rules.lease_ms)));
            }
        }
    }
    FleetPhase {
        state: match rec.state {
            1 => crate::CircuitState::Open,
            2 => crate::CircuitState::HalfOpen,
            _ => crate::CircuitState::Closed,
        },
        epoch: rec.epoch,
        open_left_ms: if rec.state == 1 {
            rec.open_until.saturating_sub(now)
        } else {
            0
        },
        lease,
    }
}

/// The fleet's rules kept in this process: what [`RedisStore`](super::RedisStore) does, without
/// Redis. Its clock is the crate's ([`clock::now`]), so under a paused tokio clock or
/// [`testing::record_sleeps`](crate::testing::record_sleeps) leases and cool-downs follow
/// virtual time. It can be taken down and brought back ([`set_down`](Self::set_down)), and
/// counts the exchanges it answered.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::fleet::{MemoryStore, Pull, Push, Store};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let store = MemoryStore::new();
/// let push = [Push::Budget { name: "search", delta: -3_000_000, max: 10_000_000 }];
/// // A new fleet budget starts full; this process spent three tokens.
/// let pulled = store.exchange(&push).await.unwrap();
/// assert_eq!(pulled, [Pull::Budget { tokens: 7_000_000 }]);
/// # }
/// ```
#[derive(Debug)]
pub struct MemoryStore {
    budgets: Mutex<HashMap<&'static str, u64>>,
    breakers: Mutex<HashMap<&'static str, BreakerRecord>>,
    down: AtomicBool,
    exchanges: AtomicU64,
    origin: Instant,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl MemoryStore {
    /// An empty store: every budget starts full, every breaker closed.
    pub fn new() -> Self {
        MemoryStore {
            budgets: Mutex::new(HashMap::new()),
            breakers: Mutex::new(HashMap::new()),
            down: AtomicBool::new(false),
            exchanges: AtomicU64::new(0),
            origin: clock::now(),
        }
    }

    /// Refuse every exchange (`true`) as an unreachable server would, or answer again.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// The exchanges answered so far.
    pub fn exchanges(&self) -> u64 {
        self.exchanges.load(Ordering::Relaxed)
    }

    /// A budget's tokens as stored, in millionths, if it has been exchanged.
    pub fn budget_tokens(&self, name: &str) -> Option<u64> {
        let budgets = self.budgets.lock().unwrap_or_else(PoisonError::into_inner);
        budgets.get(name).copied()
    }

    /// The apply step, synchronous: what [`Store::exchange`] does.
    pub fn apply(&self, pushes: &[Push]) -> Result<Vec<Pull>, StoreError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(StoreError::new("the memory store is down"));
        }
        self.exchanges.fetch_add(1, Ordering::Relaxed);
        let now = clock::now().saturating_duration_since(self.origin);
        let now = u64::try_from(now.as_millis()).unwrap_or(u64::MAX);
        let mut budgets = self.budgets.lock().unwrap_or_else(PoisonError::into_inner);
        let mut breakers = self.breakers.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(pushes
            .iter()
            .map(|push| match *push {
                Push::Budget { name, delta, max } => {
                    let tokens = budget_rule(budgets.get(name).copied(), delta, max);
                    budgets.insert(name, tokens);
                    Pull::Budget { tokens }
                }
                Push::Breaker {
                    name,
                    epoch,
                    report,
                    rules,
                } => {
                    let rec = breakers.entry(name).or_default();
                    Pull::Breaker(breaker_rule(rec, now, epoch, report, rules))
                }
            })
            .collect())
    }
}

impl Store for MemoryStore {
    fn exchange<'a>(&'a self, pushes: &'a [Push]) -> Exchanging<'a> {
        Box::pin(std::future::ready(self.apply(pushes)))
    }
}

/// Milliseconds of `d`, saturating.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
