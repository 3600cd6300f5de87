//! [`FleetBudget`]: the [`RetryBudget`] rule with one bucket for every process that names it.

use super::node::{Joinable, Member, Node, SYNC_EVERY};
use super::store::{Pull, Push};
use crate::budget::RetryBudget;
use crate::run::plumbing::AsBudget;
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// A [`RetryBudget`] whose bucket is shared by every process that names it: gRPC's retry
/// throttling rule (tokens start at `max_tokens`, a retryable failure takes 1, a success puts
/// back `token_ratio`, a retry may start only while more than half is left) over one token
/// count for the whole fleet, kept in Redis.
///
/// Used wherever a budget is: `#[retryable(budget = FLEET)]`, `Retry::budget(&FLEET)`,
/// `RetryLayer::budget(&FLEET)` (it dereferences to its local [`RetryBudget`]), and the HTTP and
/// gRPC layers' `.budget(&FLEET)`. Every decision is the local bucket's, taken at full speed;
/// the process's background exchange ([`connect`](super::connect)) pushes what its calls did to
/// the bucket since the last exchange and sets the local bucket to the fleet's tokens (plus what
/// calls did while the exchange was under way). See the [module docs](super) for the bound on
/// the retries that staleness lets through, and for what happens when Redis cannot be reached.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::fleet::FleetBudget;
/// use retry_kit::{Classify, retryable, testing};
/// use std::time::Duration;
///
/// #[derive(Debug, Classify)]
/// #[classify(transient)]
/// struct Unavailable;
///
/// // 20 tokens for the whole fleet, 0.1 back per success, exchanged every 50 ms.
/// static SEARCH: FleetBudget = FleetBudget::new("search", 20, 0.1)
///     .sync_every(Duration::from_millis(50));
///
/// #[retryable(attempts = 3, base = "10ms", budget = SEARCH)]
/// fn search() -> Result<(), Unavailable> {
///     Err(Unavailable)
/// }
///
/// // Before `connect` (or with Redis out of reach) the local rule decides alone.
/// testing::record_sleeps(|| search()).0.unwrap_err();
/// assert!(SEARCH.is_fallback());
/// assert_eq!(SEARCH.local().tokens(), 17.0);
/// ```
pub struct FleetBudget {
    name: &'static str,
    max_tokens: u32,
    token_ratio: f64,
    sync_every: Duration,
    /// This value's member of the node it joined: its local bucket and exchange state.
    joined: OnceLock<Arc<BudgetMember>>,
    /// The same member for the hot path: one relaxed-cost load (acquire, which is a plain load
    /// on x86-64 and on ARMv8 an `ldar`) and a null check, where `OnceLock::get` cost every
    /// call a call of its own (benches/README.md, the fleet's cost rows).
    /// Published only after `joined` holds the `Arc` it points into, never changed after.
    local: AtomicPtr<BudgetMember>,
}

impl FleetBudget {
    /// A fleet budget called `name` (its key in Redis: every process that uses this name shares
    /// one bucket) of `max_tokens`, refunding `token_ratio` per success.
    pub const fn new(name: &'static str, max_tokens: u32, token_ratio: f64) -> Self {
        FleetBudget {
            name,
            max_tokens,
            token_ratio,
            sync_every: SYNC_EVERY,
            joined: OnceLock::new(),
            local: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// Exchange with the fleet every `d` (default 50 ms; a process exchanges all its fleet
    /// values together, at the shortest interval among them).
    pub const fn sync_every(mut self, d: Duration) -> Self {
        self.sync_every = d;
        self
    }

    /// The name, its key in the fleet.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The local bucket every call decides on: the fleet's tokens as last exchanged, plus
    /// what this process's calls did since. Its first use joins this budget to the process's
    /// [`Node::global`] unless it joined another node.
    #[inline]
    pub fn local(&self) -> &RetryBudget {
        let member = self.local.load(Ordering::Acquire);
        if member.is_null() {
            return &self.join_global().local;
        }
        // SAFETY: a non-null pointer was published by `bind` after `joined` took the `Arc` it
        // points into; `joined` is never emptied while `self` lives, so the member lives at
        // least as long as this borrow of `self`.
        unsafe { &(*member).local }
    }

    #[cold]
    #[inline(never)]
    fn join_global(&self) -> &BudgetMember {
        Node::global().join(self);
        self.joined.get().expect("joined just now")
    }

    /// A new member for this budget: a full local bucket, nothing exchanged yet.
    pub(super) fn new_member(&self) -> BudgetMember {
        BudgetMember {
            name: self.name,
            sync_every: self.sync_every,
            local: RetryBudget::new(self.max_tokens, self.token_ratio).name(self.name),
            base: AtomicU64::new(u64::from(self.max_tokens) * 1_000_000),
            seen: AtomicU64::new(0),
            fleet: AtomicU64::new(NONE),
            fallback: AtomicBool::new(true),
        }
    }

    /// Use `member` from now on; false if this budget already uses one.
    pub(super) fn bind(&self, member: Arc<BudgetMember>) -> bool {
        let bound = self.joined.set(member).is_ok();
        if let Some(member) = self.joined.get() {
            // The `Arc` in `joined` keeps it alive: see `local`.
            let ptr = Arc::as_ptr(member).cast_mut();
            self.local.store(ptr, Ordering::Release);
        }
        bound
    }

    /// Whether the local rule is deciding alone: before the first exchange, and whenever the
    /// last one failed (Redis down, slow or unreachable).
    pub fn is_fallback(&self) -> bool {
        self.joined
            .get()
            .is_none_or(|m| m.fallback.load(Ordering::Relaxed))
    }

    /// The fleet's tokens as last exchanged; before the first exchange, the local bucket's.
    pub fn tokens(&self) -> f64 {
        match self.joined.get().map(|m| m.fleet.load(Ordering::Relaxed)) {
            Some(fleet) if fleet != NONE => fleet as f64 / 1e6,
            _ => self.local().tokens(),
        }
    }
}

/// "Nothing pulled yet", in the fleet view.
const NONE: u64 = u64::MAX;

impl Deref for FleetBudget {
    type Target = RetryBudget;
    /// The local bucket ([`local`](FleetBudget::local)), so that a `&FleetBudget` is taken
    /// wherever a `&RetryBudget` is.
    #[inline]
    fn deref(&self) -> &RetryBudget {
        self.local()
    }
}

impl AsBudget for FleetBudget {
    type Slot<'a> = &'a RetryBudget;
    #[inline]
    fn as_budget(&self) -> &RetryBudget {
        self.local()
    }
}

/// A layer's `.budget(&FLEET)` (tower's `RetryLayer`, the apalis layer) keeps its local bucket.
#[cfg(any(feature = "tower", feature = "apalis"))]
impl crate::run::plumbing::StaticBudget for FleetBudget {
    type Slot = crate::run::plumbing::Static<RetryBudget>;
    fn static_slot(&'static self) -> crate::run::plumbing::Static<RetryBudget> {
        crate::run::plumbing::Static(self.local())
    }
}

impl fmt::Debug for FleetBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetBudget")
            .field("name", &self.name)
            .field("max_tokens", &self.max_tokens)
            .field("token_ratio", &self.token_ratio)
            .field("sync_every", &self.sync_every)
            .field("fallback", &self.is_fallback())
            .finish()
    }
}

/// A fleet budget in one node: the local bucket, and what the exchange remembers of it.
pub(crate) struct BudgetMember {
    pub(super) name: &'static str,
    sync_every: Duration,
    local: RetryBudget,
    /// The fleet's tokens the local bucket was last set to: the push is the change since.
    base: AtomicU64,
    /// The local tokens the push under way read.
    seen: AtomicU64,
    /// The fleet's tokens as last pulled (`NONE` before).
    fleet: AtomicU64,
    fallback: AtomicBool,
}

impl Joinable for FleetBudget {
    fn join_node(&self, node: &Node) -> bool {
        self.bind(node.member(self.name, || self.new_member()))
    }
}

impl Member for BudgetMember {
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
        // Only the exchange writes `base` and `seen`, one exchange at a time per node.
        let seen = self.local.raw_tokens();
        self.seen.store(seen, Ordering::Relaxed);
        let base = self.base.load(Ordering::Relaxed);
        let delta = i64::try_from(i128::from(seen) - i128::from(base)).unwrap_or(0);
        Push::Budget {
            name: self.name,
            delta,
            max: self.local.raw_max(),
        }
    }

    fn pull(&self, pull: &Pull) {
        if let Pull::Budget { tokens } = *pull {
            self.local.rebase(self.seen.load(Ordering::Relaxed), tokens);
            self.base.store(tokens, Ordering::Relaxed);
            self.fleet.store(tokens, Ordering::Relaxed);
            self.fallback.store(false, Ordering::Relaxed);
        }
    }

    fn fell_back(&self) {
        self.fallback.store(true, Ordering::Relaxed);
    }

    fn is_fallback(&self) -> bool {
        self.fallback.load(Ordering::Relaxed)
    }
}
