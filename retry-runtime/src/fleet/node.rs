//! [`Node`]: one process's side of the fleet: the fleet values it uses, and the exchange that
//! pushes what its calls did and pulls the fleet's state, in one round trip for all of them.

use super::store::{Pull, Push, Store, StoreError};
use std::any::{Any, TypeId};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How often a fleet value is exchanged unless [`sync_every`](FleetBudget::sync_every) says.
pub(crate) const SYNC_EVERY: Duration = Duration::from_millis(50);

/// A fleet value in a node: what it pushes, what it does with the fleet's answer, and what it
/// does when there is none.
pub(crate) trait Member: Any + Send + Sync {
    /// The name the fleet knows it by: two values of one kind with one name in a node share a
    /// member.
    fn name(&self) -> &'static str;
    /// Itself, to be given back as its own type ([`Node::join`]).
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
    /// How often it wants to be exchanged.
    fn sync_every(&self) -> Duration;
    /// Read the local state for this exchange.
    fn push(&self) -> Push;
    /// Apply the fleet's answer to the local state.
    fn pull(&self, pull: &Pull);
    /// The exchange failed: the local rule decides alone until one succeeds.
    fn fell_back(&self);
    /// Whether the local rule decides alone.
    fn is_fallback(&self) -> bool;
}

/// One process's side of the fleet: every [`FleetBudget`](super::FleetBudget) and [`FleetBreaker`](super::FleetBreaker) it has used,
/// exchanged together with a [`Store`], one round trip for all of them.
///
/// A process has one, [`Node::global`], which fleet values join on their first use and which
/// [`connect`](super::connect) exchanges in the background. A simulation makes one per simulated
/// process, joins each process's values to it ([`join`](Self::join)) and drives
/// [`exchange`](Self::exchange) itself, with a [`MemoryStore`](super::MemoryStore): the same
/// code the background exchange runs against Redis.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::fleet::{FleetBudget, MemoryStore, Node};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let store = MemoryStore::new();
/// // Two processes, each with its own copy of one fleet budget.
/// let (a, b) = (Node::new(), Node::new());
/// let (in_a, in_b) = (FleetBudget::new("api", 10, 0.1), FleetBudget::new("api", 10, 0.1));
/// a.join(&in_a);
/// b.join(&in_b);
///
/// for _ in 0..4 {
///     in_a.local().record_failure();
/// }
/// a.exchange(&store).await.unwrap();
/// b.exchange(&store).await.unwrap();
/// // b's calls never failed, yet its bucket is the fleet's: 6 tokens.
/// assert_eq!(in_b.local().tokens(), 6.0);
/// assert!(!in_b.is_fallback());
/// # }
/// ```
pub struct Node {
    /// Every fleet value that joined, budgets and breakers alike, in the order they joined.
    members: Mutex<Vec<Arc<dyn Member>>>,
    exchanging: AtomicBool,
    exchanged: AtomicU64,
    failed: AtomicU64,
    fallbacks: AtomicU64,
    /// Whether the last exchange failed (so a failure is logged once per episode).
    down: AtomicBool,
}

impl Default for Node {
    fn default() -> Self {
        Node::new()
    }
}

/// A lock that a panic elsewhere leaves usable: the lists only grow.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Node {
    /// A node with no fleet values yet.
    pub const fn new() -> Self {
        Node {
            members: Mutex::new(Vec::new()),
            exchanging: AtomicBool::new(false),
            exchanged: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            fallbacks: AtomicU64::new(0),
            down: AtomicBool::new(false),
        }
    }

    /// This process's node: fleet values join it on first use, and
    /// [`connect`](super::connect) exchanges it.
    pub fn global() -> &'static Node {
        static GLOBAL: Node = Node::new();
        &GLOBAL
    }

    /// Make `value` a member of this node, if it has not been used (and so joined a node)
    /// yet; whether it joined. Two values with the same name in one node share one member.
    pub fn join(&self, value: &dyn Joinable) -> bool {
        value.join_node(self)
    }

    /// The member of this node of type `M` named `name`: the one there is, or `make()`'s,
    /// joined now. What a fleet value's [`Joinable`] impl asks, so that the node knows members
    /// only as [`Member`]s.
    pub(super) fn member<M: Member>(&self, name: &'static str, make: impl FnOnce() -> M) -> Arc<M> {
        let mut list = lock(&self.members);
        let found = list
            .iter()
            .find(|m| m.name() == name && (***m).type_id() == TypeId::of::<M>());
        if let Some(member) = found {
            if let Ok(member) = Arc::clone(member).into_any().downcast::<M>() {
                return member;
            }
        }
        let member = Arc::new(make());
        list.push(Arc::clone(&member) as Arc<dyn Member>);
        member
    }

    fn members(&self) -> Vec<Arc<dyn Member>> {
        lock(&self.members).clone()
    }

    /// The interval the background exchange keeps: the shortest `sync_every` of the members
    /// (`None` while there are none).
    pub fn interval(&self) -> Option<Duration> {
        self.members().iter().map(|m| m.sync_every()).min()
    }

    /// Exchange every member with `store` in one round trip: push what the local calls did
    /// since the last exchange, pull the fleet's state and set the local state to it. On an
    /// error every member falls back to its local rule until an exchange succeeds. A call
    /// never waits for this: it reads and writes the local state only.
    ///
    /// One exchange at a time: a call made while another is under way returns `Ok` at once
    /// without exchanging.
    pub async fn exchange(&self, store: &dyn Store) -> Result<(), StoreError> {
        if self.exchanging.swap(true, Ordering::Acquire) {
            return Ok(());
        }
        struct Done<'a>(&'a AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _done = Done(&self.exchanging);
        let members = self.members();
        if members.is_empty() {
            return Ok(());
        }
        let pushes: Vec<Push> = members.iter().map(|m| m.push()).collect();
        let result = match store.exchange(&pushes).await {
            Ok(pulls) if pulls.len() == pushes.len() => Ok(pulls),
            Ok(pulls) => Err(StoreError::new(format!(
                "the store answered {} values to {} pushes",
                pulls.len(),
                pushes.len()
            ))),
            Err(e) => Err(e),
        };
        match result {
            Ok(pulls) => {
                for (member, pull) in members.iter().zip(&pulls) {
                    member.pull(pull);
                }
                self.exchanged.fetch_add(1, Ordering::Relaxed);
                if self.down.swap(false, Ordering::Relaxed) {
                    recovered();
                }
                Ok(())
            }
            Err(e) => {
                for member in &members {
                    member.fell_back();
                }
                self.failed.fetch_add(1, Ordering::Relaxed);
                if !self.down.swap(true, Ordering::Relaxed) {
                    self.fallbacks.fetch_add(1, Ordering::Relaxed);
                    fell_back(&e);
                }
                Err(e)
            }
        }
    }

    /// Every member decides by its local rule from now on (the exchange stopped).
    pub(super) fn fall_back(&self) {
        for member in self.members() {
            member.fell_back();
        }
    }

    /// What this node's exchanges have done so far.
    pub fn stats(&self) -> NodeStats {
        NodeStats {
            exchanged: self.exchanged.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            fallbacks: self.fallbacks.load(Ordering::Relaxed),
        }
    }

    /// Whether any member decides by its local rule alone (see [`FleetBudget::is_fallback`](super::FleetBudget::is_fallback)).
    pub fn is_fallback(&self) -> bool {
        self.members().iter().any(|m| m.is_fallback())
    }
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("members", &lock(&self.members).len())
            .field("stats", &self.stats())
            .finish()
    }
}

/// A [`Node`]'s exchanges so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeStats {
    /// Exchanges that succeeded.
    pub exchanged: u64,
    /// Exchanges that failed (each member fell back to its local rule).
    pub failed: u64,
    /// Times the node went from exchanging to failing: each is one fallback, logged once
    /// (feature `tracing`) and counted in `retry_kit_fleet_fallbacks_total` (feature
    /// `metrics`).
    pub fallbacks: u64,
}

/// A fleet value that can join a [`Node`]: [`FleetBudget`](super::FleetBudget) and
/// [`FleetBreaker`](super::FleetBreaker).
pub trait Joinable {
    /// Join `node`, if not joined to one yet; whether it joined.
    fn join_node(&self, node: &Node) -> bool;
}

/// The first failed exchange of an episode: logged once, counted once.
#[cold]
fn fell_back(error: &StoreError) {
    #[cfg(feature = "tracing")]
    tracing::warn!(target: "retry_kit", %error, "fleet exchange failed: fleet values decide by their local rule until the store answers");
    #[cfg(feature = "metrics")]
    ::metrics::counter!("retry_kit_fleet_fallbacks_total").increment(1);
    let _ = error;
}

/// The first successful exchange after failures.
#[cold]
fn recovered() {
    #[cfg(feature = "tracing")]
    tracing::info!(target: "retry_kit", "fleet exchange answered again: fleet values follow the fleet's state");
}
