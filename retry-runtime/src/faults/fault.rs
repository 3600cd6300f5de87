//! [`Fault`]: one thing that goes wrong with one request, and [`Injected`], the error a request
//! fails with when its fault leaves it without an answer.

use crate::error::TimedOut;
use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::time::Duration;

/// What goes wrong with one request (or one call of a function under [`Script::inject`]).
///
/// | fault | sent on? | the caller sees | class under `HttpRetryLayer` |
/// | --- | --- | --- | --- |
/// | `Status(s)` | no | a response with status `s`, empty body | by the `http` table |
/// | `RetryAfter(s, d)` | no | the same, with `Retry-After: d` (whole seconds) | by the table, waiting at least `d` |
/// | `Reset` | no | an [`Injected`] error: a connection reset before anything was sent | transient |
/// | `Timeout` | no | an [`Injected`] error: a timeout | idempotent-only |
/// | `Lost` | **yes**, and its answer awaited | an [`Injected`] error: a timeout | idempotent-only |
/// | `Delay(d)` | yes, after `d` | whatever the inner service answers | that answer's |
/// | `Pass` | yes | whatever the inner service answers | that answer's |
///
/// `Lost` is the uncertain outcome: the server did the work and only its answer went missing,
/// so a retry repeats work that was done. It is what an `Idempotency-Key` is for.
///
/// `Delay` follows the crate's clock: it is virtual under a paused tokio clock, and inside
/// [`testing::record_sleeps_async`](crate::testing::record_sleeps_async) (or
/// [`testing::record_sleeps`](crate::testing::record_sleeps) for [`Script::inject`]) it is
/// not slept but recorded, beside the retry loop's own waits.
///
/// [`Script::inject`]: super::Script::inject
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::faults::Fault;
/// use std::time::Duration;
///
/// let faults = [
///     Fault::Status(503),
///     Fault::RetryAfter(429, Duration::from_secs(2)),
///     Fault::Reset,
///     Fault::Timeout,
///     Fault::Lost,
///     Fault::Delay(Duration::from_millis(250)),
///     Fault::Pass,
/// ];
/// assert!(faults[4].sends_request() && !faults[3].sends_request());
/// ```
///
/// A fault is `Copy`: a status, a duration or nothing. A variant added later will be too, so
/// code may rely on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Fault {
    /// Answer with this status and an empty body; nothing is sent on. A number that is not an
    /// HTTP status code (outside `100..=999`) is answered as 500.
    Status(u16),
    /// Answer with this status and a `Retry-After` header of the duration in whole seconds
    /// (rounded up, so the wait asked for is never shorter than the duration); nothing is sent
    /// on.
    RetryAfter(u16, Duration),
    /// Fail with a connection reset that provably happened before anything was sent.
    Reset,
    /// Fail with a timeout; nothing is sent.
    Timeout,
    /// Send the request on, await the inner service's answer, drop it, and fail with a timeout:
    /// the receiver acted, the caller cannot know.
    Lost,
    /// Wait this long on the crate's clock, then send the request on.
    Delay(Duration),
    /// Send the request on untouched.
    Pass,
}

impl Fault {
    /// Whether the request reaches the inner service under this fault (`Lost`, `Delay` and
    /// `Pass`).
    pub const fn sends_request(&self) -> bool {
        matches!(self, Fault::Lost | Fault::Delay(_) | Fault::Pass)
    }

    /// Whether the caller gets the inner service's answer (`Delay` and `Pass`).
    pub const fn passes_answer(&self) -> bool {
        matches!(self, Fault::Delay(_) | Fault::Pass)
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Status(status) => write!(f, "status {status}"),
            Fault::RetryAfter(status, wait) => {
                write!(
                    f,
                    "status {status} with Retry-After {}s",
                    whole_seconds(*wait)
                )
            }
            Fault::Reset => f.write_str("connection reset before the request was sent"),
            Fault::Timeout => f.write_str("timeout before the request was sent"),
            Fault::Lost => f.write_str("answer lost after the request was sent"),
            Fault::Delay(wait) => write!(f, "delay of {wait:?}"),
            Fault::Pass => f.write_str("pass"),
        }
    }
}

/// A `Retry-After` value for `wait`: whole seconds, rounded up.
pub(super) fn whole_seconds(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() != 0)
}

/// The error of a request that a [`Fault`] (`Reset`, `Timeout` or `Lost`) left without an
/// answer. [`Injected::fault`] says which; its [`source`](StdError::source) is the
/// [`io::Error`] that the layers classify:
///
/// - `Reset`: an `io::Error` of kind **`ConnectionRefused`** (message "fault injection:
///   connection reset before the request was sent"). A reset is classified by the HTTP layer
///   as idempotent-only unless the error chain shows that nothing was sent, and a refused
///   connection is the one `io::Error` that says so: so the layers retry an injected reset
///   for every method, as a reset before sending is.
/// - `Timeout` and `Lost`: an `io::Error` of kind `TimedOut` carrying the crate's
///   [`TimedOut`] (`get_ref()` downcasts to it): idempotent-only.
///
/// Under `FaultMiddleware` the caller gets a `reqwest::Error` that reqwest made, as the real
/// failure: a reset is reqwest's connect error with this `Injected` in its source chain, and a
/// timeout or a lost answer is reqwest's own timeout error, which (like a real one) carries
/// nothing more; [`Script::seen`](super::Script::seen) tells a test how many were injected.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::faults::{Fault, Injected};
/// use retry_kit::{Classify, ErrorClass};
/// use std::error::Error;
///
/// let lost = Injected::new(Fault::Lost);
/// assert_eq!(lost.fault(), &Fault::Lost);
/// let io = lost.source().unwrap().downcast_ref::<std::io::Error>().unwrap();
/// assert_eq!(io.class(), ErrorClass::IdempotentOnly);
/// ```
#[derive(Debug)]
pub struct Injected {
    fault: Fault,
    cause: io::Error,
}

impl Injected {
    /// The error for `fault`: a reset for [`Fault::Reset`], a timeout for anything else.
    pub fn new(fault: Fault) -> Self {
        let cause = match fault {
            Fault::Reset => io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "fault injection: connection reset before the request was sent",
            ),
            _ => io::Error::new(io::ErrorKind::TimedOut, TimedOut::after(Duration::ZERO)),
        };
        Injected { fault, cause }
    }

    /// The fault that caused this error.
    pub fn fault(&self) -> &Fault {
        &self.fault
    }
}

impl fmt::Display for Injected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not "timed out" or "connect error": the layers read the class from the source.
        write!(f, "fault injection: {}", self.fault)
    }
}

impl StdError for Injected {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.cause)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_is_copy_and_still_usable_after_it_is_passed_on() {
        let fault = Fault::RetryAfter(429, Duration::from_secs(2));
        let injected = Injected::new(fault);
        assert_eq!(injected.fault(), &fault);
        let faults = [fault; 3];
        assert!(faults.iter().all(|f| *f == fault));
    }
}
