//! The class of a handler's error, which reaches the layer boxed (`BoxDynError`).

use crate::chain::{chain_retry_after, classify_chain};
use crate::class::{Classify, ErrorClass};
use crate::error::{CircuitOpen, TimedOut};
use apalis_core::error::{AbortError, BoxDynError};
use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::time::Duration;

/// The default reading: apalis's `AbortError` (the handler's "do not retry this") is permanent;
/// a chain with a link the crate knows (its own [`TimedOut`] and [`CircuitOpen`], an
/// `io::Error`, with the `http`/`reqwest` features their errors) is read by
/// [`classify_chain`](crate::classify_chain); anything else is transient, as apalis itself
/// treats a failed task (run it again).
pub(crate) fn default_class(error: &BoxDynError) -> ErrorClass {
    let root: &(dyn StdError + 'static) = &**error;
    if links(root).any(|e| e.is::<AbortError>()) {
        return ErrorClass::Permanent;
    }
    if links(root).any(known) {
        return classify_chain(root);
    }
    ErrorClass::Transient
}

/// The default wait hint: the one [`chain_retry_after`] reads (a [`CircuitOpen`]'s cool-down,
/// an HTTP status error's `Retry-After`).
pub(crate) fn default_retry_after(error: &BoxDynError) -> Option<Duration> {
    chain_retry_after(&**error)
}

/// The reading of a handler whose error type is `E`: `E`'s own [`Classify`], and the default
/// reading for anything else (an error a layer inside added).
pub(crate) fn class_as<E: Classify + StdError + 'static>(error: &BoxDynError) -> ErrorClass {
    match error.downcast_ref::<E>() {
        Some(e) => e.class(),
        None => default_class(error),
    }
}

/// The wait hint of a handler whose error type is `E`: `E`'s own, or the default one.
pub(crate) fn retry_after_as<E: Classify + StdError + 'static>(
    error: &BoxDynError,
) -> Option<Duration> {
    match error.downcast_ref::<E>() {
        Some(e) => e.retry_after(),
        None => default_retry_after(error),
    }
}

fn links<'a>(
    error: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(error), |&e| e.source())
}

fn known(e: &(dyn StdError + 'static)) -> bool {
    if e.is::<CircuitOpen>() || e.is::<TimedOut>() || e.is::<io::Error>() {
        return true;
    }
    #[cfg(feature = "http")]
    if e.is::<crate::http::StatusError>() {
        return true;
    }
    #[cfg(feature = "reqwest")]
    if e.is::<::reqwest::Error>() {
        return true;
    }
    false
}

/// A boxed error with the class the layer read, as [`RetryPolicy::plan`](crate::RetryPolicy::plan)
/// takes it.
pub(crate) struct Read<'a> {
    pub(crate) error: &'a BoxDynError,
    pub(crate) class: ErrorClass,
    pub(crate) retry_after: Option<Duration>,
}

impl Classify for Read<'_> {
    fn class(&self) -> ErrorClass {
        self.class
    }

    fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }
}

impl fmt::Display for Read<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self.error, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_reading() {
        let boxed = |e: BoxDynError| default_class(&e);
        assert_eq!(boxed("schema mismatch".into()), ErrorClass::Transient);
        assert_eq!(
            boxed(Box::new(AbortError::new("bad row"))),
            ErrorClass::Permanent
        );
        assert_eq!(
            boxed(Box::new(io::Error::from(io::ErrorKind::ConnectionReset))),
            ErrorClass::Transient
        );
        assert_eq!(
            boxed(Box::new(io::Error::from(io::ErrorKind::PermissionDenied))),
            ErrorClass::Permanent
        );
        assert_eq!(
            boxed(Box::new(TimedOut::after(Duration::from_secs(1)))),
            ErrorClass::IdempotentOnly
        );
        let open: BoxDynError = Box::new(CircuitOpen::new(Duration::from_secs(3)));
        assert_eq!(default_class(&open), ErrorClass::Transient);
        assert_eq!(default_retry_after(&open), Some(Duration::from_secs(3)));
    }
}
