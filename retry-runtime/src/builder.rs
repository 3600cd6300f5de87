//! The builder over closures: [`Retry`] and the shapes its methods give it ([`Hedge`] for
//! hedged attempts, [`RetryIf`] for polling past `Ok` values, [`AlreadyDone`] and
//! [`HedgeAlreadyDone`] for "already done" answers), and [`RetryPolicy::call`], the shortest
//! of them. Front ends, like the attribute and the layers: each prepares a policy, a
//! classifier and a way to run one attempt, and hands them to the engine in
//! [`run`](crate::run).
//!
//! [`RetryPolicy::call`]: crate::RetryPolicy::call

mod already_done;
mod durable;
mod hedge;
mod policy_call;
mod retry;
mod retry_if;

pub use already_done::{AlreadyDone, HedgeAlreadyDone};
pub use durable::Durable;
pub use hedge::{Hedge, HedgeNotIdempotent};
pub use retry::{BreakerWith, Retry};
pub use retry_if::RetryIf;

// Used by the layers, which build their calls as the builder does.
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub(crate) use retry::begin;
