//! The engine under every front end, public so that what `#[retryable]` generates is code a
//! user could write: the attribute, [`Retry`] (and [`RetryPolicy::call`](crate::RetryPolicy::call)),
//! the tower layers and the reqwest middleware all build a [`Call`], equip it with their
//! protection through [`Equip`], and run one of the crate's three loops over it,
//! [`retry_sync!`], [`retry_async!`] or [`retry_hedged!`].
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`Call`] | the state of one retried call, and every decision between its attempts ([`Call::after`]) |
//! | [`CallPolicy`] | where a call finds its [`RetryPolicy`](crate::RetryPolicy): a reference, or a zero-sized type naming a constant |
//! | [`Classifier`] | what class a failed attempt's error has: [`ByTrait`] (its `Classify` impl), a function, [`WithRetryAfter`] |
//! | [`Hook`] | what receives each [`Failure`] record: [`NoHook`], a function, [`observed`](crate::observe::observed) for `tracing` and `metrics` |
//! | [`Outcome`] | the `Result` an attempt returns |
//! | [`Shared`], [`Equip`] | the breaker, budget and adaptive policy a front end fits to each call, one way for all |
//! | [`TimeoutSlot`] | an attempt's timeout by type: [`NoTimeout`], [`AttemptTimeout`], a limit with its own conversion |
//! | [`retry_sync!`], [`retry_async!`], [`retry_hedged!`] | the loops, written once: each attempt is an expression made afresh inside the loop |
//! | [`Retry`], [`Hedge`], [`RetryIf`], [`AlreadyDone`] | the builder over closures |
//!
//! What `#[retryable(attempts = 3)]` makes of a sync function, written by hand (the attribute
//! also passes the hook the error's `Display`, and names the policy by a zero-sized type so
//! that it is a constant). With a breaker, equip the call through [`Equip`] (see [`Shared`])
//! and, when the breaker refuses the first attempt, report it with
//! [`observe::refused`](crate::observe::refused) before returning, as the attribute does.
//!
//! ```
//! # extern crate retry_runtime as retry_kit;
//! use retry_kit::observe::observed;
//! use retry_kit::run::{ByTrait, Call, Hook, NoHook, retry_sync};
//! use retry_kit::{RetryPolicy, current_attempt};
//! use std::io;
//!
//! fn read(path: &str, tries: &mut u32) -> io::Result<String> {
//!     const POLICY: RetryPolicy = RetryPolicy::new().attempts(3);
//!     let classifier = ByTrait;
//!     let mut hook = observed(NoHook, "read");
//!     // Read the clock at the start only if the hook wants `Failure::elapsed` (a real
//!     // `on_failure` function does; `NoHook` does when a `tracing` subscriber listens).
//!     let mut call = Call::new(&POLICY, Hook::<io::Error>::wants_clock(&hook));
//!     retry_sync!(call.after(&classifier, &mut hook) <- call.attempt_sync(|| {
//!         // The function's body, unchanged: it borrows `path` and `tries` afresh each attempt.
//!         *tries += 1;
//!         assert_eq!(current_attempt().unwrap().number(), *tries);
//!         std::fs::read_to_string(path)
//!     }))
//! }
//!
//! let mut tries = 0;
//! assert!(read("/no/such/file", &mut tries).is_err());
//! assert_eq!(tries, 1, "not found is permanent: one attempt");
//! ```
//!
//! The decisions live in one place: [`Call::after`] (and [`Call::after_hedged`], which asks the
//! same decision) classifies a failure, records it with the protection, stops for its class,
//! the attempt limit, the retry-after bound, the deadline, the budget or the breaker, and
//! builds the [`Failure`] record; [`Call::attempt_timed`] and [`Call::settle`] are the one
//! path of a timed attempt.
//!
//! A future written by hand (a tower layer's named future: the HTTP layer's) drives the same
//! engine without the loops: it begins each attempt with [`Call::begin_attempt`], runs each
//! poll of it through [`Call::in_attempt`] (where `current_attempt()` sees it), and asks
//! [`Call::settle`] and [`Call::after`] as the loops do.

mod already_done;
mod call;
pub(crate) mod call_policy;
mod classifier;
pub(crate) mod hedge;
mod hedging;
mod hook;
mod outcome;
mod policy_call;
pub(crate) mod protection;
pub(crate) mod retry;
mod retry_if;
mod retry_loop;
pub(crate) mod shared;
pub(crate) mod timeout;

pub use crate::stop::{Failure, Next, StopReason, Verdict};
pub use already_done::{AlreadyDone, HedgeAlreadyDone};
pub use call::{Call, Ended, InAttempt, Then};
pub use call_policy::{AsPolicy, CallPolicy, expect_policy, policy_of};
pub use classifier::{
    Borrowed, ByTrait, Classifier, WithRetryAfter, class_of, resolve_already_done,
};
pub use hedge::{Hedge, HedgeNotIdempotent};
pub use hedging::{Event, Hedging, NextEvent};
pub use hook::{Displayed, FmtFn, Hook, NoHook};
pub use outcome::{Conversion, ErrorOf, Outcome};
pub use protection::{
    Adapted, AttemptHold, Holding, NoWindow, PanicSink, Protected, Protection, Unprotected, Window,
};
pub use retry::{BreakerWith, Retry};
pub use retry_if::{IfRejected, Rejected, RejectedOf, RetryIf, accept_rejected, reject_if};
#[cfg(feature = "tower")]
pub use shared::StaticBudget;
pub use shared::{
    AdaptiveKind, AdaptiveSlot, AsBreaker, AsBudget, BudgetSlot, CallState, CircuitSlot, Equip,
    HoldsCircuitOpen, IntoShared, NoAdaptive, NoBudget, NoCircuit, RefusalOf, Shared, Static,
    ThrottleSlot, WithAdaptive, WithBudget, WithCircuit, circuit_open, refusal_of,
};
pub use timeout::{
    AttemptTimeout, HoldsTimedOut, MaybeTimer, NoTimeout, Timed, TimeoutSlot, Untimed, timed_out,
};

// What the loops and the code `#[retryable]` generates use from beside the engine: the
// default sleep and the operation's name for nested keys. (The front ends' reporting, which
// observes the engine, is `crate::observe`.)
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use crate::clock::tokio_sleep;
pub use crate::context::operation_id;
pub use crate::{retry_async, retry_hedged, retry_sync};
