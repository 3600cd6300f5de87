//! The engine under every front end, public so that what `#[retryable]` generates is code a
//! user could write: the attribute, [`Retry`](crate::Retry) (and [`RetryPolicy::call`](crate::RetryPolicy::call)),
//! the tower layers and the reqwest middleware all build a [`Call`], equip it with their
//! protection through [`Equip`], and run one of the crate's three loops over it,
//! [`retry_sync!`], [`retry_async!`] or [`retry_hedged!`].
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`Call`] | the state of one retried call, and every decision between its attempts ([`Call::after`]) |
//! | [`CallPolicy`] | where a call finds its [`RetryPolicy`](crate::RetryPolicy): a reference, or a zero-sized type naming a constant; and what the call notes between attempts ([`Notes`](plumbing::Notes)) |
//! | [`Classifier`] | what class a failed attempt's error has: [`ByTrait`] (its `Classify` impl), a function, [`WithRetryAfter`] |
//! | [`Hook`] | what receives each [`Failure`] record: [`NoHook`], a function, [`observed`](crate::observe::observed) for `tracing` and `metrics` |
//! | [`Outcome`] | the `Result` an attempt returns |
//! | [`Protections`], [`Equip`] | the breaker, budget and adaptive policy a front end fits to each call, one way for all |
//! | [`NoTimeout`], [`AttemptTimeout`] | an attempt's timeout by type (or a limit with its own conversion, see [`TimeoutSlot`](plumbing::TimeoutSlot)) |
//! | [`retry_sync!`], [`retry_async!`], [`retry_hedged!`] | the loops, written once: each attempt is an expression made afresh inside the loop |
//! | [`plumbing`] | the types that appear in the engine's signatures (slots, holds, the hedged attempts in flight): named in bounds and struct fields, rarely written |
//! | [`expand`] | what only `#[retryable]`'s expansion calls: the checks its diagnostics need and the glue of `retry_if` and `already_done` |
//!
//! The builder over closures, [`Retry`](crate::Retry) and the shapes its methods give it, is a
//! front end like the layers: [`builder`](crate::builder).
//!
//! What `#[retryable(attempts = 3)]` makes of a sync function, written by hand (the attribute
//! also passes the hook the error's `Display`, and names the policy by a zero-sized type so
//! that it is a constant). With a breaker, equip the call through [`Equip`] (see [`Protections`])
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
//!     let mut call = Call::for_hook::<io::Error, _>(&POLICY, &hook);
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

mod call;
pub(crate) mod call_policy;
pub(crate) mod classifier;
pub(crate) mod equip;
pub(crate) mod hedging;
pub(crate) mod hook;
mod notes;
pub(crate) mod outcome;
pub(crate) mod protection;
pub(crate) mod retry_if;
mod retry_loop;
pub(crate) mod slots;
pub(crate) mod timeout;

// What a loop written by hand and the builders need.
pub use crate::stop::{Failure, Next, StopReason};
pub use call::Call;
pub use call_policy::CallPolicy;
pub use classifier::{ByTrait, Classifier, WithRetryAfter};
pub use equip::{Equip, Protections};
pub use hook::{Hook, NoHook};
pub use outcome::Outcome;
pub use timeout::{AttemptTimeout, NoTimeout};
// The loops and what they use from beside the engine: the default sleep and the operation's
// name for nested keys. (The front ends' reporting, which observes the engine, is
// `crate::observe`.)
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use crate::clock::tokio_sleep;
pub use crate::context::operation_id;
pub use crate::{retry_async, retry_hedged, retry_sync};

/// Type plumbing: what appears in the engine's signatures and the builders' types (the slots a
/// protection or a timeout is chosen by, what an attempt holds, the hedged attempts in flight,
/// the steps of a hand-written future) and is named in bounds and struct fields rather than
/// written in a loop. The loops and the layers use these; a loop written by hand rarely does.
pub mod plumbing {
    pub use super::call::{Ended, InAttempt};
    pub use super::call_policy::AsPolicy;
    pub use super::classifier::Borrowed;
    pub use super::equip::{
        CallState, HoldsCircuitOpen, IntoProtections, WithAdaptive, WithBudget, WithCircuit,
    };
    pub use super::hedging::{Event, Hedging, NextEvent, cancelled};
    pub use super::hook::{Displayed, FmtFn};
    pub use super::notes::{FullNotes, NoNotes, Notes, StartNotes};
    pub use super::outcome::{Conversion, ErrorOf};
    pub use super::protection::{
        Adapted, AttemptHold, Holding, NoWindow, PanicSink, Protected, Protection, Unprotected,
        Window,
    };
    #[cfg(any(feature = "tower", feature = "apalis"))]
    pub use super::slots::StaticBudget;
    pub use super::slots::{
        AdaptiveKind, AdaptiveSlot, AsBreaker, AsBudget, BudgetSlot, CircuitSlot, NoAdaptive,
        NoBudget, NoCircuit, RefusalOf, Static, ThrottleSlot,
    };
    pub use super::timeout::{HoldsTimedOut, MaybeTimer, Timed, TimeoutSlot, Untimed};
    #[cfg(feature = "tokio")]
    pub use crate::clock::Sleep;
    pub use crate::stop::{StopCode, Verdict};
}

/// What only `#[retryable]`'s expansion calls: the probes and checks its diagnostics need
/// (a policy that is not one, a breaker that cannot convert its refusal) and the glue of
/// `retry_if` and `already_done`. Public, so that the expansion is code a user could write;
/// a loop written by hand has the builder's methods for the same things.
pub mod expand {
    pub use super::call_policy::{expect_policy, policy_of};
    pub use super::classifier::{class_of, resolve_already_done};
    pub use super::equip::circuit_open;
    pub use super::outcome::ErrorOf;
    pub use super::retry_if::{IfRejected, Rejected, RejectedOf, accept_rejected, reject_if};
    pub use super::slots::refusal_of;
    pub use super::timeout::timed_out;
}
