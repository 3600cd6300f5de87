//! Fault injection (feature `faults`): make a dependency fail on purpose, to test what a retry
//! policy does when things go wrong, without writing a misbehaving server.
//!
//! - [`Fault`] is one thing that goes wrong with one request (or one call of a function): a
//!   status, a status with `Retry-After`, a reset, a timeout, a lost answer, a delay, or nothing.
//! - [`Script`] decides which fault each request gets: a list ([`Script::new`]) for a test that
//!   knows what happens at each attempt, or seeded draws at given rates ([`Script::seeded`] with
//!   [`Script::with`]) for chaos in a staging run that can be replayed from its seed. Clones
//!   share one script, and [`Script::seen`] says how many requests it has decided.
//! - Where the fault happens:
//!   - `FaultLayer` (features `tower` and `http`): a tower layer for `http::Request` clients
//!     of any response body (a `FaultBody`: the client's own, or the empty body of an
//!     injected status), placed *below* `HttpRetryLayer`, so the real retry stack is what is
//!     tested;
//!   - `FaultMiddleware` (feature `reqwest-middleware`): the same for a reqwest client, added
//!     *after* `RetryMiddleware`;
//!   - [`Script::inject`] and [`Script::inject_async`]: a test double around a function body
//!     or a closure (fail with an error the test gives, run then lose the answer, delay, pass).
//!
//! A fault that fails a request without an answer is an [`Injected`] error, built so that the
//! layers classify it as the real failure would be (under `FaultMiddleware`, reqwest's own
//! error, at the request's URL): see [`Injected`] for how.
//!
//! ```
//! # extern crate retry_runtime as retry_kit;
//! use retry_kit::faults::{Fault, Script};
//!
//! let script = Script::new([Fault::Status(503), Fault::Lost]);
//! let shared = script.clone();
//! assert_eq!(script.next(), Fault::Status(503));
//! assert_eq!(shared.next(), Fault::Lost);
//! assert_eq!(script.next(), Fault::Pass);
//! assert_eq!(shared.seen(), 3);
//! ```

#[cfg(all(feature = "tower", feature = "http"))]
mod body;
mod double;
mod fault;
#[cfg(all(feature = "tower", feature = "http"))]
mod layer;
#[cfg(feature = "reqwest-middleware")]
mod middleware;
mod script;

#[cfg(all(feature = "tower", feature = "http"))]
#[cfg_attr(
    docsrs,
    doc(cfg(all(feature = "faults", feature = "tower", feature = "http")))
)]
pub use body::FaultBody;
pub use fault::{Fault, Injected};
#[cfg(all(feature = "tower", feature = "http"))]
#[cfg_attr(
    docsrs,
    doc(cfg(all(feature = "faults", feature = "tower", feature = "http")))
)]
pub use layer::{FaultLayer, FaultService};
#[cfg(feature = "reqwest-middleware")]
#[cfg_attr(
    docsrs,
    doc(cfg(all(feature = "faults", feature = "reqwest-middleware")))
)]
pub use middleware::FaultMiddleware;
pub use script::Script;
