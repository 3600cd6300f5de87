//! Every attempt starts from the arguments as the caller passed them.
//!
//! `#[retryable]` runs the function's body once per attempt. A `mut` argument taken by value
//! would otherwise carry one attempt's changes into the next (a cursor advanced, a buffer
//! drained, a counter scaled twice), so the generated code gives each attempt its own copy:
//! `let mut n = fresh(&n);` at the top of the attempt. A type that cannot be copied would need
//! a clone, which the macro never makes on the user's behalf: that is a compile error at the
//! argument, carried by [`FreshPerAttempt`].
//!
//! The error names only what the user wrote and can write: the argument, its type, `Copy`,
//! `.clone()` and `&mut`. Left to itself, rustc would also suggest a bound for an `impl Trait`
//! or generic argument's type, `impl FnMut() + FreshPerAttempt<name>`, naming a type the macro
//! made inside the function, which no one can write. It suggests no bound whose arguments it
//! cannot write, so the generated code passes a closure as the trait's `Site`: a closure's
//! type cannot be written, and the suggestion is left out.

/// A `mut` argument type that each attempt can get a fresh copy of: any `Copy` type. `Name` is
/// a type the generated code names after the argument, so that the error says what to write
/// for that argument.
#[diagnostic::on_unimplemented(
    message = "a `mut` argument of `#[retryable]` must be `Copy`, and `{Self}` is not: each attempt starts from the caller's value, and that would need a clone",
    label = "this `mut` argument is changed by the body, so every attempt needs its own copy",
    note = "drop `mut` here and make the copy visible in the body: `let mut {Name} = {Name}.clone();`, or take `&mut {Self}` to carry changes across attempts on purpose"
)]
///
/// `Site` is what the generated code passes to [`fresh_copy`](Self::fresh_copy): a closure, so
/// that rustc suggests no bound naming this trait (see the [module docs](self)); anything else
/// may pass `()`.
pub trait FreshPerAttempt<Name, Site = ()>: Sized {
    /// A copy for one attempt (what the generated code calls, so that a type which is not
    /// `Copy` is reported as this trait, at the argument).
    fn fresh_copy(&self, site: Site) -> Self;
}

#[diagnostic::do_not_recommend]
impl<Name, Site, T: Copy> FreshPerAttempt<Name, Site> for T {
    #[inline(always)]
    fn fresh_copy(&self, _: Site) -> Self {
        *self
    }
}

/// [`FreshPerAttempt`] in a hedged function, whose attempts run side by side: none of them
/// can take `&mut` of the argument, so the error's note offers only the copy in the body.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{retryable, Classify};
///
/// #[derive(Debug, Classify)]
/// #[classify(transient)]
/// struct Busy;
///
/// // A `Copy` argument: each attempt, hedged or not, starts from the caller's value.
/// #[retryable(attempts = 2, idempotent, hedge = "50ms")]
/// async fn doubled(mut n: u32) -> Result<u32, Busy> {
///     n *= 2;
///     Ok(n)
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// assert_eq!(doubled(3).await.unwrap(), 6);
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "a `mut` argument of `#[retryable]` must be `Copy`, and `{Self}` is not: each attempt starts from the caller's value, and that would need a clone",
    label = "this `mut` argument is changed by the body, so every attempt needs its own copy",
    note = "drop `mut` here and make the copy visible in the body: `let mut {Name} = {Name}.clone();` (a hedged function's attempts run side by side, so none of them can take `&mut {Self}`)"
)]
pub trait FreshPerHedgedAttempt<Name, Site = ()>: Sized {
    /// A copy for one attempt (`Site` as for [`FreshPerAttempt`]).
    fn fresh_copy(&self, site: Site) -> Self;
}

#[diagnostic::do_not_recommend]
impl<Name, Site, T: Copy> FreshPerHedgedAttempt<Name, Site> for T {
    #[inline(always)]
    fn fresh_copy(&self, _: Site) -> Self {
        *self
    }
}

/// A fresh copy of a `mut` argument for one attempt.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{retryable, Classify};
///
/// #[derive(Debug, Classify)]
/// #[classify(transient)]
/// struct Busy;
///
/// #[retryable(attempts = 3, base = "0ms")]
/// fn scaled(mut n: u32, fail_first: &mut u32) -> Result<u32, Busy> {
///     n *= 10; // changes this attempt's copy only
///     if *fail_first > 0 {
///         *fail_first -= 1;
///         return Err(Busy);
///     }
///     Ok(n)
/// }
///
/// let mut failures = 2;
/// assert_eq!(scaled(1, &mut failures).unwrap(), 10); // not 1000
/// ```
#[inline(always)]
pub fn fresh<Name, T: FreshPerAttempt<Name>>(value: &T) -> T {
    value.fresh_copy(())
}
