//! Where a call finds its policy ([`CallPolicy`]), and what `#[retryable(policy = ...)]`
//! accepts ([`AsPolicy`]).

use super::notes::{FullNotes, Notes};
use crate::policy::RetryPolicy;
use std::borrow::Borrow;
use std::time::Duration;

/// Where a [`Call`](super::Call) finds its policy: a reference to one, the policy itself (for a
/// call kept in a future that cannot borrow it), or a zero-sized type naming a constant, which
/// is what `#[retryable]` makes of a policy written in the attribute, so that the call's state
/// (kept across every await of an async retryable future) holds no pointer to it and the
/// constant's fields fold into the code.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::run::plumbing::NoNotes;
/// use retry_kit::run::{Call, CallPolicy};
/// use retry_kit::RetryPolicy;
///
/// #[derive(Clone, Copy)]
/// struct Three;
///
/// impl CallPolicy for Three {
///     fn policy(&self) -> &RetryPolicy {
///         const POLICY: RetryPolicy = RetryPolicy::new().attempts(3);
///         &POLICY
///     }
///     // No deadline, decorrelated jitter or `nested = "once"`, and the loop below runs it
///     // without a hook, an adaptive policy or an attempt timeout: nothing to note.
///     type Notes = NoNotes;
/// }
///
/// let call = Call::new(Three);
/// assert_eq!(call.attempt(), 0);
/// ```
pub trait CallPolicy: Copy {
    /// The policy.
    fn policy(&self) -> &RetryPolicy;
    /// The operation a call under this policy performs, for the keys of calls nested inside
    /// another's attempt ([`operation_id`](crate::context::operation_id) of the function's path
    /// for `#[retryable]`; one shared value, 0, for the builder's closures).
    const OPERATION: u64 = 0;
    /// What a call under this policy notes between its attempts: [`FullNotes`](super::plumbing::FullNotes);
    /// or for a constant policy with no decorrelated jitter and no `nested = "once"`, whose
    /// calls run without an adaptive policy or an attempt timeout (debug builds check it),
    /// [`StartNotes`](super::plumbing::StartNotes) if it has a deadline or its calls a hook, else
    /// [`NoNotes`](super::plumbing::NoNotes). The calls then start without storing what they never read.
    type Notes: Notes;
    /// The longest wait a call under this policy sleeps: a longer one, or a breaker that is
    /// open, stops it with [`StopReason::Deferred`](crate::StopReason::Deferred) instead (the
    /// builder's [`defer_after`](crate::builder::Durable::defer_after)). `None`, never deferring,
    /// for every policy but that one: inlined, the question costs the others nothing.
    #[inline(always)]
    fn defer_after(&self) -> Option<Duration> {
        None
    }
}

impl CallPolicy for &RetryPolicy {
    #[inline(always)]
    fn policy(&self) -> &RetryPolicy {
        self
    }
    type Notes = FullNotes;
}

/// The policy itself, kept in the call: for a call that must not borrow it, the state of a
/// hand-written future such as the HTTP tower layer's `ResponseFuture`, whose policy is made
/// for each request.
impl CallPolicy for RetryPolicy {
    #[inline(always)]
    fn policy(&self) -> &RetryPolicy {
        self
    }
    type Notes = FullNotes;
}

/// What `#[retryable(policy = ...)]` accepts: a [`RetryPolicy`], a reference to one, or a
/// [`PolicyCell`](crate::PolicyCell) (a policy replaced at run time).
///
/// A call takes a [`snapshot`](Self::snapshot) when it starts and runs under it to the end: a
/// reference to the policy itself where it cannot change (no copy is made), a copy out of a
/// cell, so that a reload never changes the schedule of a call under way.
#[diagnostic::on_unimplemented(
    message = "`policy = ...` takes a `RetryPolicy`, a `&RetryPolicy` or a `PolicyCell`, not `{Self}`",
    label = "expected a `RetryPolicy`"
)]
pub trait AsPolicy {
    /// What a call holds of the policy: `&RetryPolicy`, or a copy.
    type Snapshot<'a>: Borrow<RetryPolicy>
    where
        Self: 'a;
    /// The policy for one call.
    fn snapshot(&self) -> Self::Snapshot<'_>;
}

impl AsPolicy for RetryPolicy {
    type Snapshot<'a> = &'a RetryPolicy;
    #[inline]
    fn snapshot(&self) -> &RetryPolicy {
        self
    }
}

impl<P: AsPolicy + ?Sized> AsPolicy for &P {
    type Snapshot<'a>
        = P::Snapshot<'a>
    where
        Self: 'a;
    #[inline]
    fn snapshot(&self) -> P::Snapshot<'_> {
        (**self).snapshot()
    }
}

impl<P: AsPolicy + ?Sized> AsPolicy for std::sync::Arc<P> {
    type Snapshot<'a>
        = P::Snapshot<'a>
    where
        Self: 'a;
    #[inline]
    fn snapshot(&self) -> P::Snapshot<'_> {
        (**self).snapshot()
    }
}

impl<P: AsPolicy + ?Sized> AsPolicy for Box<P> {
    type Snapshot<'a>
        = P::Snapshot<'a>
    where
        Self: 'a;
    #[inline]
    fn snapshot(&self) -> P::Snapshot<'_> {
        (**self).snapshot()
    }
}

/// The policy behind `policy = expr`, for one call: borrow the snapshot
/// (`Borrow::<RetryPolicy>::borrow(&snapshot)`) for the call's `&RetryPolicy`.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::run::expand::policy_of;
/// use retry_kit::{PolicyCell, RetryPolicy};
/// use std::borrow::Borrow;
///
/// static CELL: PolicyCell = PolicyCell::new(RetryPolicy::new().attempts(5));
/// let snapshot = policy_of(&CELL);
/// let policy: &RetryPolicy = snapshot.borrow();
/// assert_eq!(policy.settings().attempts, 5);
/// ```
#[inline]
pub fn policy_of<P: AsPolicy + ?Sized>(policy: &P) -> P::Snapshot<'_> {
    policy.snapshot()
}

/// What `#[retryable(policy = ...)]` checks its value with: the one place a value that is not a
/// policy is reported (the expansion then takes the snapshot through a probe that does not
/// report it again). Code written by hand calls [`policy_of`], which checks the same.
#[inline(always)]
pub fn expect_policy<P: AsPolicy + ?Sized>(policy: &P) {
    let _ = policy;
}

/// Diagnostics glue of `#[retryable(policy = ...)]`: `(&PolicyProbe(&value)).snapshot()` is
/// [`policy_of`] when the value is a policy ([`PolicyViaAsPolicy`]), and otherwise a stand-in
/// ([`PolicyViaNothing`]) that compiles, so that the mistake is reported once, by
/// [`expect_policy`], and not again wherever the snapshot is used.
#[doc(hidden)]
pub struct PolicyProbe<'a, P: ?Sized>(pub &'a P);

impl<P: ?Sized> Clone for PolicyProbe<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P: ?Sized> Copy for PolicyProbe<'_, P> {}

/// See [`PolicyProbe`].
#[doc(hidden)]
pub trait PolicyViaAsPolicy {
    /// The snapshot.
    type Snapshot: Borrow<RetryPolicy>;
    /// The policy for one call.
    fn snapshot(self) -> Self::Snapshot;
}

impl<'a, P: AsPolicy + ?Sized> PolicyViaAsPolicy for &PolicyProbe<'a, P> {
    type Snapshot = P::Snapshot<'a>;
    #[inline(always)]
    fn snapshot(self) -> P::Snapshot<'a> {
        self.0.snapshot()
    }
}

/// See [`PolicyProbe`].
#[doc(hidden)]
pub trait PolicyViaNothing {
    /// A stand-in, in code that does not compile anyway.
    fn snapshot(self) -> RetryPolicy;
}

impl<P: ?Sized> PolicyViaNothing for PolicyProbe<'_, P> {
    fn snapshot(self) -> RetryPolicy {
        RetryPolicy::new()
    }
}

/// Diagnostics glue of `#[retryable(policy = PATH)]` when the path is in capitals, a `static`
/// or a `const`: borrowed for `'static`. A `static` is; so is a `const` policy (promoted); a
/// `const PolicyCell` is not, being a fresh copy wherever it is named (interior mutability
/// keeps it from being promoted), so a cell that no reload could ever reach is a compile error
/// ("temporary value dropped while borrowed") at the path instead of a policy silently frozen.
#[doc(hidden)]
#[inline(always)]
pub const fn lives_for_ever<P: ?Sized>(place: &'static P) {
    let _ = place;
}
