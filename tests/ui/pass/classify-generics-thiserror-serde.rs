//! The derive beside thiserror and serde, on generic types with lifetimes, where clauses and
//! const generics, in a crate with the strictest common lints: the expansion adds no warning.
#![deny(warnings, unused_qualifications, missing_docs)]

use retry_kit::{retryable, Classify, ErrorClass};
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::io;
use std::time::Duration;

/// A generic error with a borrowed variant, a delegated source and a defaulted class.
#[derive(Debug, thiserror::Error, Classify)]
#[classify(default = transient)]
pub enum StoreError<'a, E, const N: usize>
where
    E: std::error::Error + 'static,
{
    /// The backend failed; it knows why.
    #[error("backend failed")]
    #[classify(delegate)]
    Backend(#[source] E),
    /// I/O failed.
    #[error("i/o failed")]
    #[classify(delegate)]
    Io(#[from] io::Error),
    /// The key was malformed.
    #[error("bad key {key:?}")]
    #[classify(permanent)]
    BadKey {
        /// The key as given.
        key: &'a str,
    },
    /// Too many requests.
    #[error("throttled")]
    Throttled {
        /// How long the server asked us to wait.
        #[classify(retry_after)]
        wait: Option<Duration>,
        /// The last N request ids.
        ids: [u32; N],
    },
    /// Kept for old callers.
    #[deprecated = "use Throttled"]
    #[error("old")]
    #[classify(idempotent_only)]
    Old,
}

/// Serialized over the wire, classified on arrival.
#[derive(Debug, Serialize, Deserialize, Classify)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Remote {
    /// Try again later.
    #[classify(transient)]
    Unavailable {
        /// Seconds until the service expects to be back.
        #[serde(with = "secs")]
        #[classify(retry_after)]
        retry_in: Duration,
    },
    /// Never going to work.
    #[classify(permanent)]
    Rejected {
        /// Why.
        reason: String,
    },
}

mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_secs)
    }
}

/// A struct delegating to a generic source.
#[derive(Debug, thiserror::Error, Classify)]
#[error("wrapped")]
#[classify(delegate)]
pub struct Wrapped<E: std::error::Error + 'static>(#[from] pub E);

/// An error that cannot happen.
#[derive(Debug, Classify)]
pub enum Never {}

/// A renamed facade: `crate = ...` paths are the user's own tokens, and stay lint-clean even
/// with the items they name imported.
pub mod facade {
    pub use retry_kit as rk;
}

/// Classified through the renamed facade, by a function.
#[derive(Debug, Classify)]
#[classify(crate = facade::rk, with = code_class)]
pub struct Coded(pub u16);

fn code_class(c: &Coded) -> ErrorClass {
    if c.0 == 503 {
        ErrorClass::Transient
    } else {
        ErrorClass::Permanent
    }
}

#[retryable(attempts = 2, base = "0ms")]
fn fetch<'a>(key: &'a str) -> Result<(), StoreError<'a, io::Error, 2>> {
    if key.is_empty() {
        return Err(StoreError::BadKey { key });
    }
    Ok(())
}

#[retryable(attempts = 2, base = "0ms")]
fn remote() -> Result<(), Remote> {
    Err(Remote::Rejected { reason: "no".into() })
}

fn class_of<E: Classify + ?Sized>(e: &E) -> ErrorClass {
    e.class()
}

fn main() {
    let _ = fetch("k");
    let _ = remote();
    let _ = class_of(&Coded(503));
    let _ = class_of(&Wrapped(io::Error::from(io::ErrorKind::NotFound)));
    let _ = |n: &Never| class_of(n);
}
