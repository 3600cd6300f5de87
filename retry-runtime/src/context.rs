//! The attempt a body is running in: its number, the call's idempotency key, and the deadline a
//! nested retryable call inherits.
//!
//! While an attempt runs (a sync body, or each poll of an async body), a thread-local pointer
//! names the running call's context. Setting it costs two thread-local writes per attempt; the
//! idempotency key is drawn only when a body asks for it.

use std::cell::Cell;
use std::fmt;
use std::time::Instant;

/// The context of one retryable call, shared by all its attempts.
#[derive(Debug)]
pub(crate) struct CallCtx {
    attempt: Cell<u32>,
    /// The idempotency key as two halves, `[0, 0]` until a body asks for it. Not an
    /// `Option<u128>`: that is 32 bytes aligned to 16, and this context lives inside every async
    /// retryable future across its awaits (see benches/README.md, future sizes).
    key: Cell<[u64; 2]>,
    /// The effective deadline: this call's own and the one inherited from an enclosing call,
    /// whichever comes first.
    pub(crate) deadline: Option<Instant>,
}

thread_local! {
    static CURRENT: Cell<*const CallCtx> = const { Cell::new(std::ptr::null()) };
}

/// What the enclosing retryable attempt (if any) passes down to a call that starts inside it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Inherited {
    pub(crate) inside_attempt: bool,
    pub(crate) deadline: Option<Instant>,
}

/// Read what an enclosing attempt on this thread passes down.
#[inline]
pub(crate) fn inherited() -> Inherited {
    CURRENT.with(|c| {
        let ptr = c.get();
        if ptr.is_null() {
            Inherited {
                inside_attempt: false,
                deadline: None,
            }
        } else {
            // SAFETY: a non-null pointer is only ever installed by `Entered`, which borrows the
            // context for as long as the pointer is installed and restores the previous value
            // when dropped (also on unwind).
            let ctx = unsafe { &*ptr };
            Inherited {
                inside_attempt: true,
                deadline: ctx.deadline,
            }
        }
    })
}

impl CallCtx {
    pub(crate) const fn new(deadline: Option<Instant>) -> Self {
        CallCtx {
            attempt: Cell::new(0),
            key: Cell::new([0, 0]),
            deadline,
        }
    }

    #[inline]
    pub(crate) fn attempt(&self) -> u32 {
        self.attempt.get()
    }

    /// Count a new attempt. Cannot overflow: the engine starts an attempt only while the
    /// count is below the call's limit, a `u32` (`Call::exhausted`, `Call::may_start_more`),
    /// so a plain increment does; saturating cost 3 instructions an attempt.
    #[inline]
    pub(crate) fn begin_attempt(&self) {
        self.attempt.set(self.attempt.get().wrapping_add(1));
    }

    /// The context of one hedged attempt of this call (see [`crate::run::hedge`]): its own
    /// number (the call's attempt count now), this call's key and deadline. Several run at
    /// once, so the key is drawn now if no attempt has asked for it yet: each attempt must see
    /// the same one.
    pub(crate) fn for_hedge(&self) -> CallCtx {
        let key = self.key().0;
        CallCtx {
            attempt: Cell::new(self.attempt()),
            key: Cell::new([key as u64, (key >> 64) as u64]),
            deadline: self.deadline,
        }
    }

    fn key(&self) -> IdempotencyKey {
        let [lo, hi] = self.key.get();
        if lo != 0 || hi != 0 {
            return IdempotencyKey(u128::from(hi) << 64 | u128::from(lo));
        }
        let key = IdempotencyKey::draw();
        let k = key.0;
        self.key.set([k as u64, (k >> 64) as u64]);
        key
    }

    /// Make this context the current one until the guard is dropped.
    #[inline]
    pub(crate) fn enter(&mut self) -> Entered<'_> {
        let previous = CURRENT.with(|c| c.replace(self as *const CallCtx));
        Entered {
            previous,
            _ctx: std::marker::PhantomData,
        }
    }
}

/// Restores the previous current context when dropped.
pub(crate) struct Entered<'a> {
    previous: *const CallCtx,
    _ctx: std::marker::PhantomData<&'a mut CallCtx>,
}

impl Drop for Entered<'_> {
    #[inline]
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

/// The attempt the calling code is running in, or `None` outside any retryable call.
///
/// Inside a `#[retryable]` body (sync, or async across `.await` points), this is the innermost
/// running call's attempt. It does not follow work the body spawns onto other tasks or threads:
/// pass the value along instead.
///
/// ```
/// use retry_kit::{current_attempt, retryable, Classify};
///
/// #[derive(Debug, Classify)]
/// #[classify(transient)]
/// struct Flaky;
///
/// #[retryable(attempts = 3, base = "0ms")]
/// fn post(log: &mut Vec<(u32, String)>) -> Result<u32, Flaky> {
///     let attempt = current_attempt().expect("inside a retryable call");
///     log.push((attempt.number(), attempt.idempotency_key().to_string()));
///     if attempt.number() < 3 { Err(Flaky) } else { Ok(attempt.number()) }
/// }
///
/// let mut log = Vec::new();
/// assert_eq!(post(&mut log).unwrap(), 3);
/// assert_eq!(log.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [1, 2, 3]);
/// // One key for every attempt of the call: the receiver can deduplicate.
/// assert!(log.iter().all(|(_, key)| key == &log[0].1));
/// assert_eq!(log[0].1.len(), 32);
/// assert!(current_attempt().is_none());
/// ```
pub fn current_attempt() -> Option<Attempt> {
    CURRENT.with(|c| {
        let ptr = c.get();
        if ptr.is_null() {
            return None;
        }
        // SAFETY: see `inherited`.
        let ctx = unsafe { &*ptr };
        Some(Attempt {
            number: ctx.attempt(),
            key: ctx.key(),
        })
    })
}

/// One attempt of a retryable call, as seen from inside it. See [`current_attempt`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Attempt {
    number: u32,
    key: IdempotencyKey,
}

impl Attempt {
    /// The attempt number, starting at 1.
    pub const fn number(&self) -> u32 {
        self.number
    }

    /// The key shared by every attempt of this call and different for every call.
    pub const fn idempotency_key(&self) -> IdempotencyKey {
        self.key
    }

    /// Whether this is a retry rather than the first attempt.
    pub const fn is_retry(&self) -> bool {
        self.number > 1
    }
}

/// 128 random bits naming one retryable call, the same for each of its attempts.
///
/// Send it with a write (an `Idempotency-Key` header, a unique column) so that the receiver can
/// recognise a retry of a request it already carried out. It displays as 32 lower-case hex
/// digits. The bits come from the operating system's entropy through `rand`'s thread generator,
/// not from the (seedable) jitter generator.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdempotencyKey(u128);

impl IdempotencyKey {
    /// A fresh key from the operating system's entropy, never zero (zero marks "not drawn yet"
    /// in a call's context, so a zero draw, one chance in 2^128, is drawn again).
    pub(crate) fn draw() -> Self {
        loop {
            let k = rand::random::<u128>();
            if k != 0 {
                return IdempotencyKey(k);
            }
        }
    }

    /// The key as a number.
    pub const fn as_u128(&self) -> u128 {
        self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdempotencyKey({self})")
    }
}
