//! [`FleetBreaker`]: one breaker state for every process that names it.

use super::node::{Joinable, Member, Node, SYNC_EVERY};
use super::store::{BreakerRules, Pull, Push, Report, millis};
use crate::breaker::{CircuitBreaker, CircuitState};
use crate::clock;
use crate::run::plumbing::AsBreaker;
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// A [`CircuitBreaker`] whose state is one for every process that names it: a process whose
/// own calls trip it (`failure_threshold` consecutive retryable failures *there*) opens it for
/// the whole fleet; the fleet stays open for `open_for` (timed by the store's clock alone);
/// then the half-open probes are leased fleet-wide, at most `half_open_max` at once, and a
/// probe's verdict closes or reopens it for everyone.
///
/// Used wherever a breaker is: `#[retryable(circuit = FLEET)]`, `Retry::circuit(&FLEET)`,
/// `RetryLayer::circuit(&FLEET)` (it dereferences to its local [`CircuitBreaker`]), and the HTTP
/// and gRPC layers' `.circuit(&FLEET)`. Every decision is the local breaker's; the process's
/// background exchange ([`connect`](super::connect)) reports trips and probe verdicts and sets
/// the local breaker to the fleet's phase. See the [module docs](super) for the guarantees.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::fleet::{FleetBreaker, MemoryStore, Node};
/// use retry_kit::CircuitState;
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let store = MemoryStore::new();
/// let (a, b) = (Node::new(), Node::new());
/// let in_a = FleetBreaker::new("payments", 2, Duration::from_secs(10));
/// let in_b = FleetBreaker::new("payments", 2, Duration::from_secs(10));
/// a.join(&in_a);
/// b.join(&in_b);
///
/// // Two failures in process a trip its breaker ...
/// in_a.local().try_acquire().unwrap().failed();
/// in_a.local().try_acquire().unwrap().failed();
/// a.exchange(&store).await.unwrap();
/// // ... and b, which saw none, is open after its next exchange.
/// b.exchange(&store).await.unwrap();
/// assert_eq!(in_b.state(), CircuitState::Open);
/// assert!(in_b.local().try_acquire().is_err());
/// # }
/// ```
pub struct FleetBreaker {
    name: &'static str,
    failure_threshold: u32,
    open_for: Duration,
    success_threshold: u32,
    half_open_max: u32,
    sync_every: Duration,
    lease: Option<Duration>,
    joined: OnceLock<Arc<BreakerMember>>,
}

impl FleetBreaker {
    /// A fleet breaker called `name` (its key in Redis), tripped by `failure_threshold`
    /// consecutive retryable failures in any one process, open for `open_for`.
    pub const fn new(name: &'static str, failure_threshold: u32, open_for: Duration) -> Self {
        FleetBreaker {
            name,
            failure_threshold,
            open_for,
            success_threshold: 1,
            half_open_max: 1,
            sync_every: SYNC_EVERY,
            lease: None,
            joined: OnceLock::new(),
        }
    }

    /// Probe successes that close it (default 1), counted in the process that holds the lease.
    pub const fn success_threshold(mut self, n: u32) -> Self {
        self.success_threshold = n;
        self
    }

    /// Probes running at once in the whole fleet while half-open (default 1): each is a lease
    /// one process holds.
    pub const fn half_open_max(mut self, n: u32) -> Self {
        self.half_open_max = n;
        self
    }

    /// Exchange with the fleet every `d` (default 50 ms).
    pub const fn sync_every(mut self, d: Duration) -> Self {
        self.sync_every = d;
        self
    }

    /// How long a probe lease lasts (default `open_for`): a process that holds one and goes
    /// silent (frozen, partitioned, crashed) delays the next probe by at most this.
    pub const fn probe_lease(mut self, d: Duration) -> Self {
        self.lease = Some(d);
        self
    }

    /// The name, its key in the fleet.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The local breaker every call asks. Its first use joins this breaker to the process's
    /// [`Node::global`] unless it joined another node.
    #[inline]
    pub fn local(&self) -> &CircuitBreaker {
        match self.joined.get() {
            Some(member) => &member.local,
            None => &self.join_global().local,
        }
    }

    #[cold]
    fn join_global(&self) -> &BreakerMember {
        Node::global().join(self);
        self.joined.get().expect("joined just now")
    }

    pub(super) fn new_member(&self) -> BreakerMember {
        let lease = self.lease.unwrap_or(self.open_for);
        BreakerMember {
            name: self.name,
            sync_every: self.sync_every,
            rules: BreakerRules {
                open_ms: millis(self.open_for),
                half_open_max: u64::from(self.half_open_max.max(1)),
                lease_ms: millis(lease).max(1),
            },
            lease,
            local: CircuitBreaker::new(self.failure_threshold, self.open_for)
                .success_threshold(self.success_threshold)
                .half_open_max(self.half_open_max)
                .name(self.name),
            sync: Mutex::new(Sync {
                epoch: 0,
                generation: 0,
                pushed: 0,
                set: CircuitState::Closed,
                lease: 0,
                granted: None,
                reserved: 0,
            }),
            fleet: AtomicU8::new(NONE),
            fallback: AtomicBool::new(true),
        }
    }

    pub(super) fn bind(&self, member: Arc<BreakerMember>) -> bool {
        self.joined.set(member).is_ok()
    }

    /// Whether the local breaker decides alone: before the first exchange, and whenever the
    /// last one failed.
    pub fn is_fallback(&self) -> bool {
        self.joined
            .get()
            .is_none_or(|m| m.fallback.load(Ordering::Relaxed))
    }

    /// The fleet's state as last exchanged; before the first exchange, the local breaker's.
    pub fn state(&self) -> CircuitState {
        match self.joined.get().map(|m| m.fleet.load(Ordering::Relaxed)) {
            Some(0) => CircuitState::Closed,
            Some(1) => CircuitState::Open,
            Some(2) => CircuitState::HalfOpen,
            _ => self.local().state(),
        }
    }
}

const NONE: u8 = u8::MAX;

impl Deref for FleetBreaker {
    type Target = CircuitBreaker;
    /// The local breaker ([`local`](FleetBreaker::local)), so that a `&FleetBreaker` is taken
    /// wherever a `&CircuitBreaker` is.
    #[inline]
    fn deref(&self) -> &CircuitBreaker {
        self.local()
    }
}

impl AsBreaker for FleetBreaker {
    #[inline]
    fn as_breaker(&self) -> &CircuitBreaker {
        self.local()
    }
}

impl fmt::Debug for FleetBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetBreaker")
            .field("name", &self.name)
            .field("failure_threshold", &self.failure_threshold)
            .field("open_for", &self.open_for)
            .field("half_open_max", &self.half_open_max)
            .field("fallback", &self.is_fallback())
            .finish_non_exhaustive()
    }
}

/// What the exchange remembers of a fleet breaker between exchanges.
struct Sync {
    /// The fleet's epoch as last pulled.
    epoch: u64,
    /// The local generation as the exchange last set it (or saw it): a change since is the
    /// local breaker's own doing (a trip, a probe's verdict).
    generation: u32,
    /// The local generation the push under way read.
    pushed: u32,
    /// The phase the exchange last set.
    set: CircuitState,
    /// The probe lease this process holds (0: none), and when it was granted (this process's
    /// clock: only ever compared with itself).
    lease: u64,
    granted: Option<Instant>,
    /// Probe slots of the local breaker the exchange took so that it admits only the probes
    /// its lease allows.
    reserved: u16,
}

/// A fleet breaker in one node.
pub(crate) struct BreakerMember {
    pub(super) name: &'static str,
    sync_every: Duration,
    rules: BreakerRules,
    lease: Duration,
    local: CircuitBreaker,
    sync: Mutex<Sync>,
    fleet: AtomicU8,
    fallback: AtomicBool,
}

impl BreakerMember {
    /// How long past the fleet's own time the local breaker is held open: two exchanges, so
    /// that while they succeed the fleet, not the local cool-down, ends an open phase; when
    /// they stop, the local rule takes over this much later.
    fn grace(&self) -> Duration {
        self.sync_every.saturating_mul(2)
    }

    fn force(&self, s: &mut Sync, phase: CircuitState, open_for: Duration, reserve: u16) {
        s.generation = self.local.force(phase, open_for, s.reserved, reserve);
        s.reserved = reserve;
        s.set = phase;
    }
}

impl Joinable for FleetBreaker {
    fn join_node(&self, node: &Node) -> bool {
        self.bind(node.member(self.name, || self.new_member()))
    }
}

impl Member for BreakerMember {
    fn name(&self) -> &'static str {
        self.name
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + std::marker::Sync> {
        self
    }

    fn sync_every(&self) -> Duration {
        self.sync_every
    }

    fn push(&self) -> Push {
        let mut s = self.sync.lock().unwrap_or_else(PoisonError::into_inner);
        let (phase, generation) = self.local.phase_word();
        let refused = self.local.take_refused();
        s.pushed = generation;
        let report = if generation == s.generation {
            Report::Quiet {
                wants_probe: refused > 0 && s.lease == 0,
            }
        } else {
            match (s.set, phase) {
                (CircuitState::HalfOpen, CircuitState::Closed) if s.lease != 0 => {
                    Report::ProbeSucceeded { lease: s.lease }
                }
                (CircuitState::HalfOpen, CircuitState::Open) if s.lease != 0 => {
                    Report::ProbeFailed { lease: s.lease }
                }
                (CircuitState::Closed, CircuitState::Open) => Report::Tripped,
                _ => Report::Quiet {
                    wants_probe: refused > 0 && s.lease == 0,
                },
            }
        };
        Push::Breaker {
            name: self.name,
            epoch: s.epoch,
            report,
            rules: self.rules,
        }
    }

    fn pull(&self, pull: &Pull) {
        let Pull::Breaker(fleet) = *pull else {
            return;
        };
        let mut s = self.sync.lock().unwrap_or_else(PoisonError::into_inner);
        let (_, generation) = self.local.phase_word();
        let new_epoch = fleet.epoch != s.epoch;
        s.epoch = fleet.epoch;
        self.fleet.store(
            match fleet.state {
                CircuitState::Closed => 0,
                CircuitState::Open => 1,
                CircuitState::HalfOpen => 2,
            },
            Ordering::Relaxed,
        );
        self.fallback.store(false, Ordering::Relaxed);
        // The local breaker moved on its own after the push read it (a trip, a verdict): leave
        // it, so the next push reports it.
        if generation != s.pushed {
            return;
        }
        match fleet.state {
            CircuitState::Closed => {
                s.lease = 0;
                s.granted = None;
                if s.set != CircuitState::Closed || generation != s.generation {
                    self.force(&mut s, CircuitState::Closed, Duration::ZERO, 0);
                }
            }
            CircuitState::Open => {
                s.lease = 0;
                s.granted = None;
                if s.set != CircuitState::Open || new_epoch || generation != s.generation {
                    let left = Duration::from_millis(fleet.open_left_ms) + self.grace();
                    self.force(&mut s, CircuitState::Open, left, 0);
                }
            }
            CircuitState::HalfOpen => {
                let holding = s.lease != 0
                    && !new_epoch
                    && s.set == CircuitState::HalfOpen
                    && generation == s.generation
                    && s.granted
                        .is_some_and(|at| clock::now().saturating_duration_since(at) < self.lease);
                if fleet.lease != 0 {
                    s.lease = fleet.lease;
                    s.granted = Some(clock::now());
                    let max = self.local.settings().half_open_max;
                    let reserve = u16::try_from(max.saturating_sub(1)).unwrap_or(u16::MAX);
                    self.force(&mut s, CircuitState::HalfOpen, Duration::ZERO, reserve);
                } else if !holding {
                    // No probe of ours: refuse calls, and ask for a lease when one is refused.
                    s.lease = 0;
                    s.granted = None;
                    self.force(&mut s, CircuitState::Open, self.grace(), 0);
                }
            }
        }
    }

    fn fell_back(&self) {
        self.fallback.store(true, Ordering::Relaxed);
        let mut s = self.sync.lock().unwrap_or_else(PoisonError::into_inner);
        // A half-open phase under a lease gives its reserved slots back: the local rule admits
        // its own probes now.
        if s.reserved > 0 {
            let (phase, _) = self.local.phase_word();
            if phase == CircuitState::HalfOpen {
                self.force(&mut s, CircuitState::HalfOpen, Duration::ZERO, 0);
            }
        }
        s.lease = 0;
        s.granted = None;
    }

    fn is_fallback(&self) -> bool {
        self.fallback.load(Ordering::Relaxed)
    }
}
