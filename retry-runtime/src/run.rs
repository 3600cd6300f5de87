//! Retrying: one engine, one loop, and the front ends over them.
//!
//! | file | holds |
//! | --- | --- |
//! | `stop` | [`StopReason`], [`Next`] and the [`Failure`] record of a failed attempt |
//! | `outcome` | [`Outcome`]: the `Result` a retried operation returns |
//! | `classifier` | [`Classifier`]: the `Classify` impl, a function, or both with a retry-after |
//! | `hook` | [`Hook`]: what receives each [`Failure`] (`on_failure`) |
//! | `call` | [`Call`], the engine: every decision between attempts |
//! | `protection` | the breaker, budget and adaptive policy a call consults, and its permit |
//! | `shared` | how a front end equips each call: the builder's [`Shared`] slots, [`Equip`] |
//! | `timeout` | per-attempt timeouts |
//! | `retry_loop` | the sync and the async loop, written once, which every front end expands |
//! | `retry` | [`Retry`], the builder |
//! | `policy_call` | [`RetryPolicy::call`](crate::RetryPolicy::call), what `policy = ...` accepts, and where a call finds its policy |
//! | `retry_if` | [`Rejected`]: `Ok` values retried by a predicate |
//! | `hedge` | [`Hedging`]: the attempts in flight of a hedged call, its loop, and the builder's [`Hedge`] |
//! | `already_done` | [`AlreadyDone`], [`HedgeAlreadyDone`]: an "already done" error as the result |
//!
//! `#[retryable]` generates what a [`Retry`] call does by hand: it builds a [`Call`] from a
//! `const` policy, equips it with the function's protection, and expands the same loop around
//! the function's body, so that each attempt borrows the arguments afresh.

pub mod already_done;
pub mod call;
pub mod classifier;
pub mod hedge;
pub mod hook;
pub mod outcome;
pub mod policy_call;
pub mod protection;
pub mod retry;
pub mod retry_if;
mod retry_loop;
pub mod shared;
pub mod stop;
pub mod timeout;

pub use already_done::{AlreadyDone, HedgeAlreadyDone};
pub use call::{Call, Ended, InAttempt, Then};
pub use classifier::{
    Borrowed, ByTrait, Classifier, WithRetryAfter, class_of, resolve_already_done,
};
pub use hedge::{Event, Hedge, HedgeNotIdempotent, Hedging};
pub use hook::{Described, Displayed, FmtFn, Hook, NoHook};
pub use outcome::{Conversion, ErrorOf, Outcome, RejectedOf};
pub use policy_call::{AsPolicy, CallPolicy, policy_of};
pub use protection::{PanicSink, Protected, Protection, Unprotected};
pub use retry::{BreakerWith, Retry};
pub use retry_if::{IfRejected, Rejected, RetryIf, accept_rejected, reject_if};
pub use shared::{
    AdaptiveSlot, AsBreaker, AsBudget, BudgetSlot, CallState, CircuitSlot, Equip, HoldsCircuitOpen,
    IntoShared, NoAdaptive, NoBudget, NoCircuit, Shared, WithAdaptive, WithBudget, WithCircuit,
    circuit_open,
};
pub use stop::{Failure, Next, StopReason, Verdict};
pub use timeout::{
    AttemptTimeout, HoldsTimedOut, MaybeTimer, NoTimeout, Timed, TimeoutSlot, Untimed, timed_out,
};
