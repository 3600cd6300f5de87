//! The retry loop, written once: [`retry_sync!`](crate::retry_sync) and
//! [`retry_async!`](crate::retry_async), which [`Retry`](super::Retry) and the code
//! `#[retryable]` generates both expand.
//!
//! Macros rather than functions because an attempt must be created afresh inside the loop: an
//! async body that borrows the function's arguments (`&mut self`, a `&mut` argument) cannot be
//! handed out by a closure called repeatedly, but an `async` block written inside the loop can,
//! and the macro puts the caller's attempt expression there. Everything the loop decides
//! happens in the engine ([`Call`](super::Call)); the loop itself only runs the attempt, asks
//! [`Call::after`](super::Call::after) and sleeps.

/// The sync retry loop: evaluate `attempt` (which runs one attempt on the engine `call`) until
/// `call.after(&outcome, classifier, hook)` says to return; sleep between attempts. The loop's
/// value is the outcome.
///
/// `after` is passed in so that generated code can give it the span of the declared return
/// type, where type errors about the outcome are then reported.
#[doc(hidden)]
#[macro_export]
macro_rules! retry_sync {
    ($call:ident . $after:ident ($classifier:expr, $hook:expr) <- $attempt:expr) => {
        loop {
            let out = $attempt;
            match $call.$after(&out, $classifier, $hook) {
                ::core::option::Option::None => break out,
                ::core::option::Option::Some(delay) => $call.sleep(delay),
            }
        }
    };
}

/// The async retry loop: as [`retry_sync!`](crate::retry_sync), awaiting `attempt` and
/// sleeping with `sleep` (a `Fn(Duration)` returning a future). Inside
/// `testing::record_sleeps_async` the wait is recorded instead of slept.
#[doc(hidden)]
#[macro_export]
macro_rules! retry_async {
    ($call:ident . $after:ident ($classifier:expr, $hook:expr) <- $attempt:expr, sleep: $sleep:expr) => {
        loop {
            // The outcome goes out of scope before the sleep, so the future does not keep it
            // (an error, possibly large) alive across the await.
            let delay = {
                let out = $attempt;
                match $call.$after(&out, $classifier, $hook) {
                    ::core::option::Option::None => break out,
                    ::core::option::Option::Some(delay) => delay,
                }
            };
            if !$crate::clock::virtual_sleep(delay) && !delay.is_zero() {
                ($sleep)(delay).await;
            }
        }
    };
}
