//! [`DurableRetryLayer`]: what a worker is given, and how it is configured.

use super::classify::{class_as, default_class, default_retry_after, retry_after_as};
use crate::breaker::CircuitBreaker;
use crate::budget::RetryBudget;
use crate::class::Classify;
use crate::class::ErrorClass;
use crate::policy::RetryPolicy;
use crate::policy_cell::{PolicySource, SharedCell};
use crate::run::plumbing::{BudgetSlot, StaticBudget};
use crate::throttle::AdaptiveThrottle;
use apalis_core::error::BoxDynError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A tower layer for apalis 1.0 workers that retries each task by a [`RetryPolicy`], waiting
/// in the worker's slot only for short waits and handing longer ones back to the queue with
/// the task's [`RetryState`](crate::durable::RetryState). See [the module docs](super) for
/// what it does with each outcome and what the worker needs.
///
/// `storage` is a clone of the storage the worker consumes (where tasks are handed back).
#[derive(Clone)]
pub struct DurableRetryLayer<S> {
    pub(crate) storage: S,
    pub(crate) settings: Arc<Settings>,
}

/// What every service the layer makes shares.
#[derive(Clone)]
pub(crate) struct Settings {
    /// The policy, or the cell each task's run reads it from.
    pub(crate) policy: PolicySource,
    pub(crate) hold: Duration,
    pub(crate) class: fn(&BoxDynError) -> ErrorClass,
    pub(crate) retry_after: fn(&BoxDynError) -> Option<Duration>,
    // `Option`s, not type parameters: a task's run costs database round trips, against which
    // one branch is nothing, and the layer's type stays nameable.
    pub(crate) circuit: Option<&'static CircuitBreaker>,
    pub(crate) budget: Option<&'static RetryBudget>,
    /// An adaptive throttle in the budget's place.
    pub(crate) throttle: Option<&'static AdaptiveThrottle>,
}

impl<S> DurableRetryLayer<S> {
    /// Retry tasks by `policy`, handing them back to `storage` (a clone of the worker's).
    ///
    /// By default waits up to 1 s are slept in the slot, and a handler's error is read as
    /// [`classify_as`](Self::classify_as) says for errors of unknown type.
    pub fn new(policy: RetryPolicy, storage: S) -> Self {
        Self::with_source(PolicySource::Own(policy), storage)
    }

    /// Retry tasks by the policy `cell` holds when each task's run starts: a
    /// [`PolicyCell`](crate::PolicyCell) `static`, or an `Arc` of one made at run time. A
    /// reload reaches the next run of every task, a handed-back one included (what a task
    /// carries is its [`RetryState`](crate::durable::RetryState), not its policy).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::apalis::DurableRetryLayer;
    /// use retry_kit::{PolicyCell, RetryPolicy};
    ///
    /// static POLICY: PolicyCell = PolicyCell::new(RetryPolicy::new());
    /// # #[derive(Clone)] struct Storage;
    /// # let storage = Storage;
    /// let layer = DurableRetryLayer::from_cell(&POLICY, storage);
    /// POLICY.set(RetryPolicy::new().attempts(5)); // from the next run on
    /// # let _ = layer;
    /// ```
    pub fn from_cell(cell: impl Into<SharedCell>, storage: S) -> Self {
        Self::with_source(PolicySource::Cell(cell.into()), storage)
    }

    fn with_source(policy: PolicySource, storage: S) -> Self {
        DurableRetryLayer {
            storage,
            settings: Arc::new(Settings {
                policy,
                hold: Duration::from_secs(1),
                class: default_class,
                retry_after: default_retry_after,
                circuit: None,
                budget: None,
                throttle: None,
            }),
        }
    }

    fn with(mut self, change: impl FnOnce(&mut Settings)) -> Self {
        change(Arc::make_mut(&mut self.settings));
        self
    }

    /// Sleep waits up to `limit` in the worker's slot (the task keeps its slot, and apalis's
    /// row stays locked by this worker); hand longer ones back to the queue. Default 1 s:
    /// apalis schedules in whole seconds, so a shorter wait handed back would still wait up to
    /// a second, plus the next poll.
    pub fn hold_slot_up_to(self, limit: Duration) -> Self {
        self.with(|s| s.hold = limit)
    }

    /// Read the handler's errors as `E`'s [`Classify`] says: for handlers that return
    /// `Result<_, E>` (apalis boxes the error; the layer downcasts it back). An error of
    /// another type (one a layer inside added) is read the default way: apalis's
    /// `AbortError` is permanent, an error chain with a link this crate knows
    /// ([`classify_chain`](crate::classify_chain): `io::Error`, the crate's own errors, HTTP
    /// statuses with `http`) has that link's class, and anything else is transient.
    pub fn classify_as<E: Classify + std::error::Error + 'static>(self) -> Self {
        self.with(|s| {
            s.class = class_as::<E>;
            s.retry_after = retry_after_as::<E>;
        })
    }

    /// Read the class of the handler's errors with `class` (a boxed error: downcast it to the
    /// handler's error type). Its wait hint is read the default way unless
    /// [`retry_after`](Self::retry_after) says otherwise.
    pub fn classify(self, class: fn(&BoxDynError) -> ErrorClass) -> Self {
        self.with(|s| s.class = class)
    }

    /// Read the wait a handler's error asks for (a `Retry-After`) with `retry_after`.
    pub fn retry_after(self, retry_after: fn(&BoxDynError) -> Option<Duration>) -> Self {
        self.with(|s| s.retry_after = retry_after)
    }

    /// Consult `breaker` before every attempt: while it is open, the task is handed back to
    /// run when the breaker admits a probe, and the slot is released.
    pub fn circuit(self, breaker: &'static CircuitBreaker) -> Self {
        self.with(|s| s.circuit = Some(breaker))
    }

    /// Charge `budget` for failed attempts: a retry it refuses in the slot is handed back to
    /// the queue instead, and a handed-back retry it still refuses when it comes up stops the
    /// task (`budget_exhausted`, resumable). A [`RetryBudget`], a fleet budget's local bucket
    /// (feature `redis`), or an [`AdaptiveThrottle`] in the budget's place: it is asked before
    /// every attempt, the first included, and an attempt it rejects is not made; the task is
    /// handed back to run when the throttle's next bucket of time begins (at least a second
    /// later: apalis schedules in whole seconds) and asks again then.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::apalis::DurableRetryLayer;
    /// use retry_kit::{AdaptiveThrottle, RetryPolicy};
    /// use std::time::Duration;
    ///
    /// static THROTTLE: AdaptiveThrottle = AdaptiveThrottle::new(2.0, Duration::from_secs(120));
    /// # #[derive(Clone)] struct Storage;
    /// # let storage = Storage;
    /// let layer = DurableRetryLayer::new(RetryPolicy::new(), storage).budget(&THROTTLE);
    /// # let _ = layer;
    /// ```
    pub fn budget<B: StaticBudget + ?Sized>(self, budget: &'static B) -> Self {
        let slot = budget.static_slot();
        let (budget, throttle) = (
            BudgetSlot::<'static>::budget(&slot).map(|lease| lease.value()),
            BudgetSlot::<'static>::throttle(&slot),
        );
        self.with(|s| {
            s.budget = budget;
            s.throttle = throttle;
        })
    }
}

impl<S> fmt::Debug for DurableRetryLayer<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurableRetryLayer")
            .field("policy", &self.settings.policy)
            .field("hold_slot_up_to", &self.settings.hold)
            .field("circuit", &self.settings.circuit.is_some())
            .field("budget", &self.settings.budget.is_some())
            .field("throttle", &self.settings.throttle.is_some())
            .finish_non_exhaustive()
    }
}
