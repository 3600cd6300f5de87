//! `std::io::Error`: the built-in table by [`io::ErrorKind`], and the crate's own errors carried
//! inside an `io::Error`.
//!
//! A function returning `io::Result` can use `attempt_timeout` and `circuit`: [`TimedOut`] and
//! [`CircuitOpen`] convert into `io::Error` (the orphan rule would stop a user from writing those
//! conversions), and an `io::Error` carrying one of them is classified as the inner error is, so
//! the breaker's `retry_after` survives the trip through `io::Error`.

use crate::class::{Classify, ErrorClass};
use crate::error::{CircuitOpen, TimedOut};
use std::io;
use std::time::Duration;

/// The built-in table for I/O errors, by [`io::ErrorKind`].
///
/// | kinds | class |
/// | --- | --- |
/// | `ConnectionReset`, `ConnectionAborted`, `ConnectionRefused`, `Interrupted`, `WouldBlock`, `BrokenPipe`, `HostUnreachable`, `NetworkUnreachable`, `NetworkDown`, `ResourceBusy`, `NotConnected` | transient |
/// | `TimedOut` | idempotent-only: the peer may have acted on the request |
/// | everything else (`NotFound`, `PermissionDenied`, `InvalidInput`, `InvalidData`, `Unsupported`, `UnexpectedEof`, ...) | permanent |
///
/// Kinds not named here, including ones the standard library adds later, are permanent: an
/// unknown failure is not retried into a struggling dependency.
///
/// An `io::Error` that carries the crate's own [`TimedOut`] or [`CircuitOpen`] (made by their
/// `From` impls) takes the inner error's class and `retry_after` instead of its kind's.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{CircuitOpen, Classify, ErrorClass};
/// use std::{io, time::Duration};
///
/// let reset = io::Error::from(io::ErrorKind::ConnectionReset);
/// assert_eq!(reset.class(), ErrorClass::Transient);
/// let missing = io::Error::from(io::ErrorKind::NotFound);
/// assert_eq!(missing.class(), ErrorClass::Permanent);
///
/// let open = io::Error::from(CircuitOpen::new(Duration::from_secs(5)));
/// assert_eq!(open.class(), ErrorClass::Transient);
/// assert_eq!(open.retry_after(), Some(Duration::from_secs(5)));
/// ```
impl Classify for io::Error {
    fn class(&self) -> ErrorClass {
        match carried(self) {
            Some(inner) => inner.class(),
            None => io_kind_class(self.kind()),
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        carried(self).and_then(|inner| inner.retry_after())
    }
}

/// The crate's own error inside `error`, if its `From` impl made it.
fn carried(error: &io::Error) -> Option<&dyn Classify> {
    let inner = error.get_ref()?;
    if let Some(open) = inner.downcast_ref::<CircuitOpen>() {
        return Some(open);
    }
    inner
        .downcast_ref::<TimedOut>()
        .map(|timed_out| timed_out as &dyn Classify)
}

/// The class of an [`io::ErrorKind`], as documented on the `Classify for io::Error` impl.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{io_kind_class, ErrorClass};
/// use std::io::ErrorKind;
///
/// assert_eq!(io_kind_class(ErrorKind::BrokenPipe), ErrorClass::Transient);
/// assert_eq!(io_kind_class(ErrorKind::TimedOut), ErrorClass::IdempotentOnly);
/// assert_eq!(io_kind_class(ErrorKind::InvalidData), ErrorClass::Permanent);
/// ```
pub fn io_kind_class(kind: io::ErrorKind) -> ErrorClass {
    use io::ErrorKind as K;
    match kind {
        K::ConnectionReset
        | K::ConnectionAborted
        | K::ConnectionRefused
        | K::Interrupted
        | K::WouldBlock
        | K::BrokenPipe
        | K::HostUnreachable
        | K::NetworkUnreachable
        | K::NetworkDown
        | K::ResourceBusy
        | K::NotConnected => ErrorClass::Transient,
        K::TimedOut => ErrorClass::IdempotentOnly,
        _ => ErrorClass::Permanent,
    }
}

/// An `io::Error` of kind [`TimedOut`](io::ErrorKind::TimedOut) carrying the [`TimedOut`], so
/// functions returning `io::Result` can use `attempt_timeout`.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::TimedOut;
/// use std::{io, time::Duration};
///
/// let err = io::Error::from(TimedOut::after(Duration::from_secs(1)));
/// assert_eq!(err.kind(), io::ErrorKind::TimedOut);
/// assert!(err.get_ref().unwrap().is::<TimedOut>());
/// ```
impl From<TimedOut> for io::Error {
    fn from(timed_out: TimedOut) -> Self {
        io::Error::new(io::ErrorKind::TimedOut, timed_out)
    }
}

/// An `io::Error` of kind [`ConnectionRefused`](io::ErrorKind::ConnectionRefused) carrying the
/// [`CircuitOpen`], so functions returning `io::Result` can use `circuit`. The kind says what
/// happened to the call (it was refused before it reached the dependency) and is transient in
/// the table above too; the class and the wait come from the carried error.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{CircuitOpen, Classify};
/// use std::{io, time::Duration};
///
/// let err = io::Error::from(CircuitOpen::new(Duration::from_secs(2)));
/// assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
/// let open = err.get_ref().unwrap().downcast_ref::<CircuitOpen>().unwrap();
/// assert_eq!(open.retry_after(), Duration::from_secs(2));
/// assert_eq!(Classify::retry_after(&err), Some(Duration::from_secs(2)));
/// ```
impl From<CircuitOpen> for io::Error {
    fn from(open: CircuitOpen) -> Self {
        io::Error::new(io::ErrorKind::ConnectionRefused, open)
    }
}
