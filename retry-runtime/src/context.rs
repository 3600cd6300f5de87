//! The attempt a body is running in: its number, the call's idempotency key, and the deadline a
//! nested retryable call inherits.
//!
//! While an attempt runs (a sync body, or each poll of an async body), a thread-local pointer
//! names the running call's context. Setting it costs two thread-local writes per attempt; the
//! idempotency key is drawn only when a body asks for it.
//!
//! # Keys of nested calls
//!
//! A retryable call made inside another's attempt does not draw a key of its own: it derives one
//! from the enclosing call's key, its own operation (the function's path for `#[retryable]`; one
//! shared name for closures retried with the builder) and its ordinal among that operation's
//! calls in the enclosing attempt. When the outer call retries, the inner calls send the same
//! keys again, so a receiver that deduplicates by key carries out each inner operation once
//! (the outer `checkout` retried after its inner `charge` succeeded and the answer was lost
//! charges once); and two different operations in one attempt never share a key. The key is
//! derived when the inner call (or a call nested in it) first needs it, so its ordinal counts
//! the calls of its operation that used a key, in the order they first did; a call that nests
//! nothing and asks for no key costs nothing for any of this.
//!
//! The rule holds when the attempt's body makes the same retryable calls, in the same order, on
//! every attempt (the condition Temporal puts on workflow code). A call of another operation
//! made on one attempt and not the next does not move this one's ordinal; but a body that calls
//! the same operation a varying number of times, or in an order that depends on what it reads,
//! gets keys that follow the order, not the meaning: name the operations instead with
//! [`Attempt::key_for`], a key derived from the call's key and a label, the same on every
//! attempt.

mod ordinals;

use ordinals::Ordinals;
use std::cell::Cell;
use std::fmt;
use std::time::Instant;

/// The context of one retryable call, shared by all its attempts.
pub(crate) struct CallCtx {
    attempt: Cell<u32>,
    /// The idempotency key as two halves, once a body has asked for it: a key's low half is
    /// never 0. Until then the low half is 0 and the high half is what this call does, its
    /// operation (see the module docs), which deriving the key needs and nothing needs after: so
    /// the operation takes no word of its own in every async retryable future (see
    /// benches/README.md, future sizes), and starting a call stores one constant here. Not an
    /// `Option<u128>`: that is twice the size, and aligned to 16.
    key: Cell<[u64; 2]>,
    /// The effective deadline: this call's own and the one inherited from an enclosing call,
    /// whichever comes first.
    pub(crate) deadline: Option<Instant>,
    /// How many calls of each operation the current attempt has made inside it (see the
    /// module docs): none until a nested call asks, so a call that nests nothing allocates
    /// nothing. The address of an [`Ordinals`] table (0: none), owned by this context and
    /// retired in its `Drop`: one word in every async retryable future (a `Vec` would be three),
    /// and a drop that is one comparison when nothing nested, with no call in it at all (see
    /// [`ordinals`]). An address rather than a pointer, which would make the context, and every
    /// future holding it, neither `Send` nor `Sync`.
    nested: Cell<usize>,
    /// The context that was current when this one was last entered (0: none), so that its key
    /// can be derived when a body first asks for it, off the success path. Read only while this
    /// context is current, when the one it names is alive (its `Entered` is further out).
    parent: Cell<usize>,
}

impl Drop for CallCtx {
    #[inline]
    fn drop(&mut self) {
        let table = self.nested.get();
        if table != 0 {
            // SAFETY: a non-zero value is this context's own table, from `Ordinals::make` (see
            // `ordinal`), and this is its last use.
            unsafe { ordinals::retire(table as *mut Ordinals) };
        }
    }
}

impl fmt::Debug for CallCtx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallCtx")
            .field("attempt", &self.attempt.get())
            .field("key", &self.known_key())
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
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
    /// A new context: `operation` names what the call does, for the key it derives when it
    /// runs inside another call's attempt (see the module docs).
    #[inline(always)]
    pub(crate) const fn new(deadline: Option<Instant>, operation: u64) -> Self {
        CallCtx {
            attempt: Cell::new(0),
            key: Cell::new([0, operation]),
            deadline,
            nested: Cell::new(0),
            parent: Cell::new(0),
        }
    }

    /// The context of attempt `number` of work whose key and attempt count outlive the
    /// process (a job queue's task, run again by another worker): its body sees that number and
    /// that key, and the calls nested in it derive their keys from it as from any call's.
    #[cfg(feature = "apalis")]
    pub(crate) fn persisted(
        key: IdempotencyKey,
        number: u32,
        deadline: Option<Instant>,
        operation: u64,
    ) -> Self {
        let ctx = CallCtx::new(deadline, operation);
        ctx.attempt.set(number);
        ctx.key.set(halves(key.0));
        ctx
    }

    /// The key, if a body has asked for it (see [`key`](Self::key)).
    #[inline]
    fn known_key(&self) -> Option<IdempotencyKey> {
        let [lo, hi] = self.key.get();
        (lo != 0).then(|| IdempotencyKey(u128::from(hi) << 64 | u128::from(lo)))
    }

    /// The ordinal of the next call of `operation` in the current attempt: 0, 1, 2, ...
    fn ordinal(&self, operation: u64) -> u32 {
        let mut table = self.nested.get() as *mut Ordinals;
        if table.is_null() {
            table = Ordinals::make();
            self.nested.set(table as usize);
        }
        // SAFETY: a non-zero value is this context's own table, from `Ordinals::make`, alive
        // until the context's `Drop`; the context is not `Sync`, so this thread is the only one
        // using it, and nothing else borrows the table (`next` calls out to nothing).
        unsafe { &mut *table }.next(operation, self.attempt())
    }

    #[inline]
    pub(crate) fn attempt(&self) -> u32 {
        self.attempt.get()
    }

    /// Count a new attempt. Cannot overflow: the engine starts an attempt only while the
    /// count is below the call's limit, a `u32` (`Call::exhausted`, `Call::may_start_more`),
    /// so a plain increment does (saturating is not free on every attempt).
    #[inline]
    pub(crate) fn begin_attempt(&self) {
        self.attempt.set(self.attempt.get().wrapping_add(1));
    }

    /// The context of one hedged attempt of this call (see [`Hedge`](crate::builder::Hedge)): its own
    /// number (the call's attempt count now), this call's key as far as it is known, and its
    /// deadline. The key is not drawn here: an attempt that runs alone draws it if its body
    /// asks; attempts that run side by side are given one first ([`share_key`](Self::share_key)).
    pub(crate) fn for_hedge(&self) -> CallCtx {
        CallCtx {
            attempt: Cell::new(self.attempt()),
            key: Cell::new(self.key.get()),
            deadline: self.deadline,
            nested: Cell::new(0),
            parent: Cell::new(0),
        }
    }

    /// The context of a hedged call's attempt that ran alone on this, the call's own context,
    /// until another started beside it (see [`Hedging`](crate::run::plumbing::Hedging)): its number, the
    /// key as far as it is known, the deadline, and the counts of the calls made inside it so
    /// far (moved, not copied: its later nested calls go on from its earlier ones' ordinals, and
    /// this context's next attempt starts afresh, as any attempt does).
    pub(crate) fn detach_attempt(&self) -> CallCtx {
        let detached = self.for_hedge();
        detached.nested.set(self.nested.replace(0));
        detached
    }

    /// Take `attempt`'s key if this call has none yet: an attempt that drew it (its body asked)
    /// passes it on when it ends, so that later attempts send the same one.
    #[inline]
    pub(crate) fn adopt_key(&self, attempt: &CallCtx) {
        // Unknown, the attempt's slot holds the same operation: theirs is this one's copy.
        if self.known_key().is_none() {
            self.key.set(attempt.key.get());
        }
    }

    /// Before an attempt starts beside running ones: one key for all of them, the one a running
    /// attempt drew (pass them as `running`) or, if none did, drawn now (derived, inside another
    /// call's attempt), and given to the running attempts that lack it.
    pub(crate) fn share_key<'a>(&self, running: impl Iterator<Item = &'a CallCtx> + Clone) {
        for attempt in running.clone() {
            self.adopt_key(attempt);
        }
        // Not entered itself: the enclosing call, if any, is the current one.
        let _ = self.key_in(CURRENT.with(Cell::get));
        for attempt in running {
            attempt.adopt_key(self);
        }
    }

    /// Make `key` this call's idempotency key (a key made from the work's identity, or one
    /// persisted by an earlier run): its attempts send it, and calls nested in them derive
    /// theirs from it.
    pub(crate) fn set_key(&self, key: IdempotencyKey) {
        self.key.set(halves(key.0));
    }

    /// The key, drawn (or derived from the enclosing call's) now if no body has asked for it
    /// yet: for a call that persists it before its first attempt.
    pub(crate) fn key_now(&self) -> IdempotencyKey {
        self.key_in(CURRENT.with(Cell::get))
    }

    /// Count `attempts` as made already (by earlier runs of the same work).
    pub(crate) fn set_attempts(&self, attempts: u32) {
        self.attempt.set(attempts);
    }

    /// The key, for a context that is the current one (what `current_attempt` reads).
    fn key(&self) -> IdempotencyKey {
        self.key_in(self.parent.get() as *const CallCtx)
    }

    /// The key, drawn or derived the first time it is asked for: derived from `enclosing`'s if
    /// this call runs inside another's attempt (`enclosing` is that call's context, alive while
    /// this is asked), else drawn.
    fn key_in(&self, enclosing: *const CallCtx) -> IdempotencyKey {
        match self.known_key() {
            Some(key) => key,
            None => self.first_key(enclosing),
        }
    }

    #[cold]
    #[inline(never)]
    fn first_key(&self, enclosing: *const CallCtx) -> IdempotencyKey {
        // Not known yet: the high half is the operation.
        let operation = self.key.get()[1];
        let key = if enclosing.is_null() {
            IdempotencyKey::draw()
        } else {
            // SAFETY: the callers pass the current context, or the one that was current when
            // a context further up the chain of entered ones was entered: alive either way
            // (see `inherited`).
            let parent = unsafe { &*enclosing };
            parent
                .key_in(parent.parent.get() as *const CallCtx)
                .derive(operation, parent.ordinal(operation))
        };
        self.key.set(halves(key.0));
        key
    }

    /// Make this context the current one until the guard is dropped.
    #[inline]
    pub(crate) fn enter(&mut self) -> Entered<'_> {
        let previous = CURRENT.with(|c| c.replace(self as *const CallCtx));
        self.parent.set(previous as usize);
        Entered {
            previous,
            _ctx: std::marker::PhantomData,
        }
    }
}

/// A key as the two halves a context stores.
fn halves(key: u128) -> [u64; 2] {
    [key as u64, (key >> 64) as u64]
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
/// A call made inside another's attempt has a key derived from the enclosing call's, its own
/// function and its ordinal among that function's calls in the attempt, so an outer retry sends
/// the inner calls' keys again (see [the module docs](self) for the rule and its condition, and
/// [`Attempt::key_for`] for bodies whose calls vary between attempts).
///
/// ```
/// # extern crate retry_runtime as retry_kit;
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

    /// A key for the operation `label` inside this call: derived from the call's key and the
    /// label, so the same on every attempt, and different for every label and every call.
    ///
    /// For a body whose calls vary between attempts (a loop over what it reads, a call made
    /// only sometimes), where the keys nested calls derive by order would follow the order and
    /// not the operation (see [`current_attempt`]): send `key_for("charge:order-17")` with the
    /// write instead.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::{current_attempt, retryable, Classify};
    ///
    /// #[derive(Debug, Classify)]
    /// #[classify(transient)]
    /// struct Flaky;
    ///
    /// #[retryable(attempts = 2, base = "0ms")]
    /// fn settle(items: &[&str], keys: &mut Vec<String>) -> Result<(), Flaky> {
    ///     let attempt = current_attempt().unwrap();
    ///     for item in items {
    ///         keys.push(attempt.key_for(item).to_string());
    ///     }
    ///     if attempt.number() == 1 { Err(Flaky) } else { Ok(()) }
    /// }
    ///
    /// let mut keys = Vec::new();
    /// settle(&["a", "b"], &mut keys).unwrap();
    /// // The second attempt sent the first's keys again; "a" and "b" have different keys.
    /// assert_eq!(keys[0..2], keys[2..4]);
    /// assert_ne!(keys[0], keys[1]);
    /// ```
    pub fn key_for(&self, label: &str) -> IdempotencyKey {
        self.key.derive(LABELLED ^ operation_id(label), 0)
    }
}

/// What a key is hashed from, written first: keys of different origins never meet.
const DERIVED: u8 = 1;
const NAMED: u8 = 2;

/// Set in the operation of a [`key_for`](Attempt::key_for) label, so that a label never
/// derives the key a nested call of an operation with the same hash would.
const LABELLED: u64 = 1 << 63;

/// A stable 64-bit name for an operation (a function's path, a label): FNV-1a, the same in
/// every build and on every machine, as a receiver that deduplicates across deployments needs.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// assert_eq!(
///     retry_kit::run::operation_id("shop::charge"),
///     retry_kit::run::operation_id("shop::charge"),
/// );
/// assert_ne!(
///     retry_kit::run::operation_id("shop::charge"),
///     retry_kit::run::operation_id("shop::refund"),
/// );
/// ```
pub const fn operation_id(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    // The top bit is `LABELLED`'s.
    hash & !LABELLED
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
    /// A fresh key from the operating system's entropy, its low half never zero (zero marks
    /// "not drawn yet" in a call's context, so such a draw, one chance in 2^64, is drawn again).
    pub(crate) fn draw() -> Self {
        loop {
            let k = rand::random::<u128>();
            if k as u64 != 0 {
                return IdempotencyKey(k);
            }
        }
    }

    /// The key as a number.
    pub const fn as_u128(&self) -> u128 {
        self.0
    }

    /// The key of the `ordinal`-th call of `operation` inside the call with this key:
    /// SipHash-2-4-128 with fixed keys over the three, so the same in every process, build,
    /// platform and version of the crate (a task re-run elsewhere derives its nested calls'
    /// keys again); never zero.
    fn derive(self, operation: u64, ordinal: u32) -> IdempotencyKey {
        use std::hash::Hasher;
        let mut h = crate::stable_hash::StableHasher::new();
        h.write_u8(DERIVED);
        h.write_u128(self.0);
        h.write_u64(operation);
        h.write_u32(ordinal);
        IdempotencyKey::nonzero(h.finish128())
    }

    /// The key of a call of `operation` whose work is named by `value` (`idempotency_key =
    /// ...`): SipHash-2-4-128 with fixed keys over the operation and the bytes `value`'s `Hash`
    /// writes (integers little-endian, `usize` as 64 bits), so the same value gives the same
    /// key in every process, build, platform and version of the crate; never zero.
    ///
    /// The bytes are the value's `Hash` impl's: std's impls for integers, `bool`, `char`,
    /// strings, slices, tuples and arrays are fixed, so keys made of them are too. A derived
    /// `Hash` of a type of your own is fixed as long as its fields are (renaming a field keeps
    /// the key; adding, removing or reordering fields changes it).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::IdempotencyKey;
    /// use retry_kit::run::operation_id;
    ///
    /// let export = operation_id("billing::export");
    /// let key = IdempotencyKey::of(&("2026-12-03", "billing-export"), export);
    /// assert_eq!(key, IdempotencyKey::of(&("2026-12-03", "billing-export"), export));
    /// assert_ne!(key, IdempotencyKey::of(&("2026-12-04", "billing-export"), export));
    /// ```
    pub fn of<K: std::hash::Hash + ?Sized>(value: &K, operation: u64) -> IdempotencyKey {
        use std::hash::Hasher;
        let mut h = crate::stable_hash::StableHasher::new();
        h.write_u8(NAMED);
        h.write_u64(operation);
        value.hash(&mut h);
        IdempotencyKey::nonzero(h.finish128())
    }

    /// A key whose low half is not zero: a call's context tells a known key from one not yet
    /// made by it (see `CallCtx::key`).
    fn nonzero(key: u128) -> IdempotencyKey {
        IdempotencyKey(if key as u64 == 0 { key | 1 } else { key })
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

/// A key read back from its `Display` form, 32 hex digits (a persisted
/// [`RetryState`](crate::durable::RetryState), a header a receiver got).
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::IdempotencyKey;
///
/// let key: IdempotencyKey = "0000000000000000000000000000002a".parse().unwrap();
/// assert_eq!(key.as_u128(), 42);
/// assert_eq!(key.to_string().parse::<IdempotencyKey>(), Ok(key));
/// assert!("42".parse::<IdempotencyKey>().is_err());
/// ```
impl std::str::FromStr for IdempotencyKey {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || {
            format!("\"{text}\" is not an idempotency key: 32 hex digits, the last 16 not all zero")
        };
        if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        // Every key the crate makes has a low half that is not zero (see `nonzero`).
        match u128::from_str_radix(text, 16) {
            Ok(key) if key as u64 != 0 => Ok(IdempotencyKey(key)),
            _ => Err(bad()),
        }
    }
}
