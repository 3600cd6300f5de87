//! [`InAttempt`]: an async attempt with its call's context installed on every poll.

use super::Call;
use crate::policy::RetryPolicy;
use crate::run::call_policy::CallPolicy;
use crate::run::protection::{Protection, Unprotected};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// One attempt of an async body, with its call's context installed on every poll, and its
/// protection told if a poll panics.
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct InAttempt<'c, 'p, F, S = Unprotected, P: CallPolicy = &'p RetryPolicy> {
    /// One pointer for the context and the protection: this wrapper lives in every async
    /// retryable future, across the attempt's awaits.
    pub(super) call: &'c mut Call<'p, S, P>,
    pub(super) body: F,
}

impl<'p, F: Future, S: Protection<'p>, P: CallPolicy> Future for InAttempt<'_, 'p, F, S, P> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `body` is pinned structurally: it is never moved out of `self`, and
        // `InAttempt` has no `Drop` impl. `call` is a plain reference and is not pinned.
        let this = unsafe { self.get_unchecked_mut() };
        let body = unsafe { Pin::new_unchecked(&mut this.body) };
        this.call.in_attempt(|| body.poll(cx))
    }
}
