//! An error's class read through its source chain: [`classify_chain`] and
//! [`chain_retry_after`], for errors that arrive boxed or wrapped (`Box<dyn Error>`,
//! `anyhow::Error`, a client's error around an `io::Error`), and the one reading the HTTP
//! layers make of their inner service's errors.

use crate::class::{Classify, ErrorClass};
use crate::error::{CircuitOpen, TimedOut};
use std::error::Error as StdError;
use std::io;
use std::time::Duration;

/// The class of `error`, read through its chain of [`source`](StdError::source)s, for an
/// error whose type cannot say it: a `Box<dyn Error>`, an `anyhow::Error` (pass
/// `error.as_ref()`), a client's error that wraps an I/O failure.
///
/// The first link the crate knows decides, from the outermost in:
///
/// | link | class |
/// | --- | --- |
/// | the crate's [`CircuitOpen`] | transient, with its `retry_after` |
/// | the crate's [`TimedOut`], tokio's `Elapsed` (feature `tokio`) | idempotent-only |
/// | `http::StatusError` (feature `http`) | by its status, with its `Retry-After` |
/// | `reqwest::Error` (feature `reqwest`) | by `Classify for reqwest::Error` (the table in `retry_kit::reqwest`) |
/// | `std::io::Error` | by [`Classify for io::Error`](crate::io) (a reset or a refused connection transient, a timeout idempotent-only, a missing file permanent) |
///
/// A link the crate does not know is read by its message, as the HTTP layers read hyper's
/// and hyper-util's errors (which this crate cannot name): a connect or DNS error
/// ("client error (Connect)", "tcp connect error", "dns error") or a request handed back
/// unsent ("client error (Canceled)") sent nothing, so the error is transient; an error that
/// says it "timed out", or hyper's "connection closed before message completed", is
/// idempotent-only. A chain with none of these is permanent: an unknown failure is not
/// retried into a struggling dependency.
///
/// The HTTP layers read their inner service's errors with this function too, with one
/// difference: they know a request was being sent, so a reset, an abort or a closed
/// connection there may have come after the server acted on it, and is idempotent-only
/// unless the chain shows nothing was sent (a refused connection, a connect error).
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{classify_chain, ErrorClass};
/// use std::error::Error;
/// use std::{fmt, io};
///
/// // What `anyhow::Context` makes: an error with a message of its own, the cause as source.
/// #[derive(Debug)]
/// struct Context {
///     message: &'static str,
///     cause: io::Error,
/// }
///
/// impl fmt::Display for Context {
///     fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
///         f.write_str(self.message)
///     }
/// }
///
/// impl Error for Context {
///     fn source(&self) -> Option<&(dyn Error + 'static)> {
///         Some(&self.cause)
///     }
/// }
///
/// let reset = io::Error::from(io::ErrorKind::ConnectionReset);
/// let boxed: Box<dyn Error + Send + Sync> =
///     Box::new(Context { message: "loading the ledger", cause: reset });
/// assert_eq!(classify_chain(&*boxed), ErrorClass::Transient);
///
/// let denied = io::Error::from(io::ErrorKind::PermissionDenied);
/// let boxed: Box<dyn Error + Send + Sync> =
///     Box::new(Context { message: "loading the ledger", cause: denied });
/// assert_eq!(classify_chain(&*boxed), ErrorClass::Permanent);
/// ```
///
/// As the classifier of a function that returns a boxed error:
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{chain_retry_after, classify_chain, retryable, ErrorClass};
/// use std::error::Error;
/// use std::time::Duration;
///
/// type BoxError = Box<dyn Error + Send + Sync>;
///
/// fn class(error: &BoxError) -> ErrorClass {
///     classify_chain(&**error)
/// }
///
/// fn wait(error: &BoxError) -> Option<Duration> {
///     chain_retry_after(&**error)
/// }
///
/// #[retryable(attempts = 3, base = "0ms", classify = class, retry_after = wait)]
/// fn load(calls: &mut u32) -> Result<u32, BoxError> {
///     *calls += 1;
///     if *calls == 1 {
///         return Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset).into());
///     }
///     Ok(7)
/// }
///
/// let mut calls = 0;
/// assert_eq!(load(&mut calls).unwrap(), 7);
/// assert_eq!(calls, 2);
/// ```
pub fn classify_chain(error: &(dyn StdError + 'static)) -> ErrorClass {
    read(error, Sending::Unknown).0
}

/// The wait `error`'s chain asks for: the `retry_after` of the link that decides its
/// [`classify_chain`] class (a [`CircuitOpen`]'s cool-down, an `http::StatusError`'s
/// `Retry-After`, or the same carried inside an `io::Error`), if any.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{chain_retry_after, CircuitOpen};
/// use std::error::Error;
/// use std::time::Duration;
///
/// let open: Box<dyn Error + Send + Sync> = Box::new(CircuitOpen::new(Duration::from_secs(5)));
/// assert_eq!(chain_retry_after(&*open), Some(Duration::from_secs(5)));
/// ```
pub fn chain_retry_after(error: &(dyn StdError + 'static)) -> Option<Duration> {
    read(error, Sending::Unknown).1
}

/// What the reader knows of where the error happened.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sending {
    /// Nothing: an I/O error is classified by its kind.
    Unknown,
    /// While a request was sent: an I/O error that the chain does not show to have happened
    /// before sending (a refused connection, a connect error) may have come after the server
    /// acted, so the kinds the io table retries are idempotent-only.
    #[cfg_attr(not(all(feature = "tower", feature = "http")), allow(dead_code))]
    Request,
}

/// The class and wait of `error`, read through its source chain (see [`classify_chain`]).
pub(crate) fn read(
    error: &(dyn StdError + 'static),
    sending: Sending,
) -> (ErrorClass, Option<Duration>) {
    let mut current = Some(error);
    let mut before_sending = false;
    let mut maybe_processed = false;
    while let Some(e) = current {
        if let Some(open) = e.downcast_ref::<CircuitOpen>() {
            return (open.class(), Classify::retry_after(open));
        }
        if e.is::<TimedOut>() {
            return (ErrorClass::IdempotentOnly, None);
        }
        #[cfg(feature = "http")]
        if let Some(status) = e.downcast_ref::<crate::http::StatusError>() {
            return (status.class(), status.retry_after());
        }
        #[cfg(feature = "reqwest")]
        if let Some(reqwest) = e.downcast_ref::<::reqwest::Error>() {
            return (reqwest.class(), None);
        }
        if let Some(io) = e.downcast_ref::<io::Error>() {
            if io
                .get_ref()
                .is_some_and(|inner| inner.is::<CircuitOpen>() || inner.is::<TimedOut>())
            {
                // The crate's own error carried through an `io::Error`.
                return (io.class(), io.retry_after());
            }
            return (io_class(io, before_sending, sending), None);
        }
        let message = e.to_string().to_ascii_lowercase();
        before_sending |= message.starts_with("client error (connect)")
            || message.starts_with("client error (canceled)")
            || message.starts_with("tcp connect error")
            || message.starts_with("dns error");
        maybe_processed |= elapsed(e)
            || message.contains("timed out")
            // hyper: the connection closed after the request was written, before the answer.
            || message.contains("connection closed before message completed");
        current = e.source();
    }
    if before_sending {
        (ErrorClass::Transient, None)
    } else if maybe_processed {
        (ErrorClass::IdempotentOnly, None)
    } else {
        (ErrorClass::Permanent, None)
    }
}

/// Whether `error` is tokio's timeout.
#[cfg(feature = "tokio")]
fn elapsed(error: &(dyn StdError + 'static)) -> bool {
    error.is::<tokio::time::error::Elapsed>()
}

#[cfg(not(feature = "tokio"))]
fn elapsed(_: &(dyn StdError + 'static)) -> bool {
    false
}

/// An I/O error in the chain. Before anything was sent (a connect or DNS error, a refused
/// connection) it is transient; while a request was sent, a reset or an abort leaves the
/// outcome unknown; otherwise the io table decides.
fn io_class(io: &io::Error, before_sending: bool, sending: Sending) -> ErrorClass {
    // Nothing was sent, whatever the kind: a failed DNS lookup reaches here as an error std
    // leaves uncategorized, which on its own would be permanent.
    if before_sending {
        return ErrorClass::Transient;
    }
    let class = io.class();
    if sending == Sending::Unknown || class == ErrorClass::Permanent {
        return class;
    }
    if io.kind() == io::ErrorKind::ConnectionRefused {
        ErrorClass::Transient
    } else {
        ErrorClass::IdempotentOnly
    }
}
