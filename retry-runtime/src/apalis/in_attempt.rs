//! A handler's run as an attempt of its task: while it runs, `current_attempt()` gives the
//! task's attempt number (counted across runs) and its key, and retryable calls inside derive
//! their keys from it and inherit the policy's deadline.

use crate::context::CallCtx;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// `future`, with `ctx` the current attempt around each of its polls.
pub(crate) struct InAttempt<F> {
    ctx: CallCtx,
    future: Pin<Box<F>>,
}

impl<F> InAttempt<F> {
    pub(crate) fn new(ctx: CallCtx, future: F) -> Self {
        InAttempt {
            ctx,
            future: Box::pin(future),
        }
    }
}

impl<F: Future> Future for InAttempt<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // Both fields are `Unpin` (the future is boxed).
        let this = self.get_mut();
        let _entered = this.ctx.enter();
        this.future.as_mut().poll(cx)
    }
}
