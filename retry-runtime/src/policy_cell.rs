//! [`PolicyCell`]: a policy in a `static` that can be replaced while the program runs (a
//! configuration reload), read without a lock by every call that uses it.

use crate::policy::{Backoff, Jitter, Nested, RetryPolicy};
use crate::run::plumbing::AsPolicy;
use crate::seqlock::Seqlock;
use crate::sync::const_unless_loom;
use std::fmt;
use std::time::Duration;

/// A [`RetryPolicy`] that can be replaced at run time: `PolicyCell::new(policy)` is `const`, so
/// the cell is a `static`; [`set`](Self::set) replaces the policy and [`get`](Self::get) copies
/// it out. Every front end reads it: `#[retryable(policy = CELL)]`, the builder
/// (`Retry::new(&CELL.get())`, or [`call`](Self::call)), and the layers (`RetryLayer::from_cell`
/// and the HTTP layers' and middleware's `from_cell`, with their features).
///
/// Each call takes one copy of the policy when it starts and keeps it to the end, so a reload
/// never changes the schedule of a call under way: the calls that start after `set` returns use
/// the new policy.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{retryable, testing, Classify, PolicyCell, RetryPolicy};
/// use std::time::Duration;
///
/// #[derive(Debug, Classify)]
/// #[classify(transient)]
/// struct Busy;
///
/// static POLICY: PolicyCell = PolicyCell::new(RetryPolicy::fixed(Duration::from_millis(10)).attempts(2));
///
/// #[retryable(policy = POLICY)]
/// fn fetch() -> Result<(), Busy> {
///     Err(Busy)
/// }
///
/// let (_, slept) = testing::record_sleeps(fetch);
/// assert_eq!(slept, [Duration::from_millis(10)]);
///
/// // A reload: the next call runs under the new policy.
/// POLICY.set(RetryPolicy::fixed(Duration::from_millis(50)).attempts(3));
/// let (_, slept) = testing::record_sleeps(fetch);
/// assert_eq!(slept, [Duration::from_millis(50); 2]);
/// ```
///
/// A cell is a `static`, never a `const`: a `const` is a new cell wherever it is named, so a
/// [`set`](Self::set) would change a copy no call reads. `#[retryable(policy = CELL)]` and the
/// layers' `from_cell(&CELL)` refuse a `const` cell at compile time ("temporary value dropped
/// while borrowed ... argument requires that borrow lasts for `'static`": declare it
/// `static`). A cell made at run time, one per downstream read from a configuration, is shared
/// in an `Arc`.
///
/// # How it is read
///
/// The policy is kept as eight atomic words behind a sequence number (a seqlock): a read loads
/// the number, the words and the number again, and keeps the copy if the number did not move,
/// so it takes no lock and writes nothing, and threads that read the same cell do not contend.
/// A read that overlaps a [`set`](Self::set) retries until the set is done (a few stores), and
/// never returns half of one policy and half of another. A pointer swapped to a new allocation
/// was the alternative; it cannot be built in a `const fn`, and freeing the old policy once no
/// reader holds it costs every read a write to shared memory. Reading a cell costs a call a
/// few loads; a policy written in the attribute, or a `static RetryPolicy`, costs nothing of
/// this.
pub struct PolicyCell {
    words: Seqlock<WORDS>,
}

/// The words a policy is kept in: the small settings packed in one, then the multiplier, then
/// seconds and nanoseconds of `base`, `max_delay` and `deadline`.
const WORDS: usize = 8;

impl PolicyCell {
    const_unless_loom! {
        /// A cell holding `policy`.
        pub const fn new(policy: RetryPolicy) -> Self {
            PolicyCell {
                words: Seqlock::new(encode(&policy)),
            }
        }
    }

    /// The policy now: the last one [`set`](Self::set), or the one the cell was made with.
    pub fn get(&self) -> RetryPolicy {
        decode(self.words.read())
    }

    /// Replace the policy. Calls that start after this returns use `policy`; calls under way
    /// keep the policy they started with.
    pub fn set(&self, policy: RetryPolicy) {
        let words = encode(&policy);
        self.words.write(|old| *old = words);
    }

    /// Run `op` under the policy now, as [`RetryPolicy::call`] does.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{testing, PolicyCell, RetryPolicy};
    /// use std::{io, time::Duration};
    ///
    /// static POLICY: PolicyCell = PolicyCell::new(RetryPolicy::fixed(Duration::ZERO).attempts(4));
    /// let mut resets = 3;
    /// let result = POLICY.call(|| {
    ///     if resets > 0 {
    ///         resets -= 1;
    ///         return Err(io::Error::from(io::ErrorKind::ConnectionReset));
    ///     }
    ///     Ok("answer")
    /// });
    /// assert_eq!(result.unwrap(), "answer");
    /// ```
    pub fn call<T, E: crate::Classify>(&self, op: impl FnMut() -> Result<T, E>) -> Result<T, E> {
        self.get().call(op)
    }

    /// Run the futures `op` makes under the policy now, sleeping with tokio, as
    /// [`RetryPolicy::call_async`] does.
    #[cfg(feature = "tokio")]
    pub async fn call_async<T, E, F, Fut>(&self, op: F) -> Result<T, E>
    where
        E: crate::Classify,
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, E>>,
    {
        let policy = self.get();
        policy.call_async(op).await
    }
}

impl fmt::Debug for PolicyCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PolicyCell").field(&self.get()).finish()
    }
}

/// `#[retryable(policy = CELL)]`: each call copies the policy out when it starts.
impl AsPolicy for PolicyCell {
    type Snapshot<'a> = RetryPolicy;
    #[inline]
    fn snapshot(&self) -> RetryPolicy {
        self.get()
    }
}

/// A cell a layer reads for as long as it lives: a `static` one (`&CELL`), or one made at run
/// time and shared (`Arc<PolicyCell>`, one per downstream read from a configuration map),
/// without leaking it. What the layers' `from_cell` takes (`impl Into<SharedCell>`).
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::policy_cell::SharedCell;
/// use retry_kit::{PolicyCell, RetryPolicy};
/// use std::sync::Arc;
///
/// static DEFAULT: PolicyCell = PolicyCell::new(RetryPolicy::new());
/// let per_downstream = Arc::new(PolicyCell::new(RetryPolicy::new().attempts(5)));
/// let a: SharedCell = (&DEFAULT).into();
/// let b: SharedCell = Arc::clone(&per_downstream).into();
/// assert_eq!(b.get().settings().attempts, 5);
/// per_downstream.set(RetryPolicy::new().attempts(2));
/// assert_eq!(b.get().settings().attempts, 2, "the layer reads the cell the reload wrote");
/// # let _ = a;
/// ```
#[derive(Clone, Debug)]
pub struct SharedCell(Shared);

#[derive(Clone, Debug)]
enum Shared {
    Static(&'static PolicyCell),
    Arc(std::sync::Arc<PolicyCell>),
}

impl SharedCell {
    /// The policy the cell holds now.
    pub fn get(&self) -> RetryPolicy {
        self.cell().get()
    }

    fn cell(&self) -> &PolicyCell {
        match &self.0 {
            Shared::Static(cell) => cell,
            Shared::Arc(cell) => cell,
        }
    }
}

impl From<&'static PolicyCell> for SharedCell {
    fn from(cell: &'static PolicyCell) -> Self {
        SharedCell(Shared::Static(cell))
    }
}

impl From<std::sync::Arc<PolicyCell>> for SharedCell {
    fn from(cell: std::sync::Arc<PolicyCell>) -> Self {
        SharedCell(Shared::Arc(cell))
    }
}

/// The same cell.
impl PartialEq for SharedCell {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.cell(), other.cell())
    }
}

/// Where a layer finds the policy of each request: its own, or what a cell holds then.
#[cfg(any(feature = "tower", feature = "reqwest-middleware", feature = "apalis"))]
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum PolicySource {
    Own(RetryPolicy),
    Cell(SharedCell),
}

#[cfg(any(feature = "tower", feature = "reqwest-middleware", feature = "apalis"))]
impl PolicySource {
    /// The policy for a request starting now.
    #[inline]
    pub(crate) fn current(&self) -> RetryPolicy {
        match self {
            PolicySource::Own(policy) => *policy,
            PolicySource::Cell(cell) => cell.get(),
        }
    }
}

const fn encode(p: &RetryPolicy) -> [u64; WORDS] {
    let backoff = match p.backoff {
        Backoff::Exponential => 0u64,
        Backoff::Fixed => 1,
        Backoff::Linear => 2,
    };
    let jitter = match p.jitter {
        Jitter::None => 0u64,
        Jitter::Full => 1,
        Jitter::Equal => 2,
        Jitter::Decorrelated => 3,
        Jitter::Spread => 4,
    };
    let nested = match p.nested {
        Nested::Retry => 0u64,
        Nested::Once => 1,
    };
    let (deadline, has_deadline) = match p.deadline {
        Some(d) => (d, 1u64),
        None => (Duration::ZERO, 0),
    };
    let small = p.attempts as u64
        | backoff << 32
        | jitter << 34
        | (p.jitter_given as u64) << 37
        | (p.idempotent as u64) << 38
        | nested << 39
        | has_deadline << 40;
    [
        small,
        p.multiplier.to_bits(),
        p.base.as_secs(),
        p.base.subsec_nanos() as u64,
        p.max_delay.as_secs(),
        p.max_delay.subsec_nanos() as u64,
        deadline.as_secs(),
        deadline.subsec_nanos() as u64,
    ]
}

fn decode(w: [u64; WORDS]) -> RetryPolicy {
    let duration = |secs: u64, nanos: u64| Duration::new(secs, nanos.min(999_999_999) as u32);
    let small = w[0];
    let bit = |n: u32| small >> n & 1 == 1;
    RetryPolicy {
        attempts: (small as u32).max(1),
        backoff: match small >> 32 & 0b11 {
            0 => Backoff::Exponential,
            1 => Backoff::Fixed,
            _ => Backoff::Linear,
        },
        jitter: match small >> 34 & 0b111 {
            0 => Jitter::None,
            1 => Jitter::Full,
            2 => Jitter::Equal,
            3 => Jitter::Decorrelated,
            _ => Jitter::Spread,
        },
        jitter_given: bit(37),
        idempotent: bit(38),
        nested: if bit(39) { Nested::Once } else { Nested::Retry },
        deadline: bit(40).then(|| duration(w[6], w[7])),
        multiplier: f64::from_bits(w[1]),
        base: duration(w[2], w[3]),
        max_delay: duration(w[4], w[5]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_survives_the_words() {
        let policies = [
            RetryPolicy::new(),
            RetryPolicy::fixed(Duration::MAX)
                .attempts(u32::MAX)
                .max_delay(Duration::new(7, 999_999_999))
                .deadline(Duration::new(u64::MAX, 1))
                .idempotent(true)
                .nested(Nested::Once),
            RetryPolicy::linear(Duration::from_nanos(1))
                .jitter(Jitter::Decorrelated)
                .multiplier(1.000_001),
            RetryPolicy::exponential(Duration::from_millis(250)).jitter(Jitter::Equal),
            RetryPolicy::new()
                .jitter(Jitter::None)
                .backoff(Backoff::Linear),
        ];
        for policy in policies {
            assert_eq!(decode(encode(&policy)), policy);
            let cell = PolicyCell::new(RetryPolicy::new());
            cell.set(policy);
            assert_eq!(cell.get(), policy);
        }
    }
}
