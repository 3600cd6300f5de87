//! Where a call finds its policy ([`CallPolicy`]), and what `#[retryable(policy = ...)]`
//! accepts ([`AsPolicy`]).

use crate::policy::RetryPolicy;

/// Where a [`Call`](super::Call) finds its policy: a reference to one, or a zero-sized type
/// naming a constant, which is what `#[retryable]` makes of a policy written in the attribute,
/// so that the call's state (kept across every await of an async retryable future) holds no
/// pointer to it and the constant's fields fold into the code.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
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
/// }
///
/// let call = Call::new(Three, false);
/// assert_eq!(call.attempt(), 0);
/// ```
pub trait CallPolicy: Copy {
    /// The policy.
    fn policy(&self) -> &RetryPolicy;
    /// The operation a call under this policy performs, for the keys of calls nested inside
    /// another's attempt ([`operation_id`](crate::context::operation_id) of the function's path
    /// for `#[retryable]`; one shared value, 0, for the builder's closures).
    const OPERATION: u64 = 0;
}

impl CallPolicy for &RetryPolicy {
    #[inline(always)]
    fn policy(&self) -> &RetryPolicy {
        self
    }
}

/// What `#[retryable(policy = ...)]` accepts: a [`RetryPolicy`] or a reference to one.
#[diagnostic::on_unimplemented(
    message = "`policy = ...` takes a `RetryPolicy` or a `&RetryPolicy`, not `{Self}`",
    label = "expected a `RetryPolicy`"
)]
pub trait AsPolicy {
    /// The policy.
    fn as_policy(&self) -> &RetryPolicy;
}

impl AsPolicy for RetryPolicy {
    #[inline]
    fn as_policy(&self) -> &RetryPolicy {
        self
    }
}

impl<P: AsPolicy + ?Sized> AsPolicy for &P {
    #[inline]
    fn as_policy(&self) -> &RetryPolicy {
        (**self).as_policy()
    }
}

impl<P: AsPolicy + ?Sized> AsPolicy for std::sync::Arc<P> {
    #[inline]
    fn as_policy(&self) -> &RetryPolicy {
        (**self).as_policy()
    }
}

impl<P: AsPolicy + ?Sized> AsPolicy for Box<P> {
    #[inline]
    fn as_policy(&self) -> &RetryPolicy {
        (**self).as_policy()
    }
}

/// The policy behind `policy = expr`.
#[inline]
pub fn policy_of<P: AsPolicy + ?Sized>(policy: &P) -> &RetryPolicy {
    policy.as_policy()
}
