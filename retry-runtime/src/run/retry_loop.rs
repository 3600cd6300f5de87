//! The retry loop, written once: [`retry_sync!`](crate::retry_sync) and
//! [`retry_async!`](crate::retry_async), which [`Retry`](crate::Retry) and the code
//! `#[retryable]` generates both expand.
//!
//! Macros rather than functions because an attempt must be created afresh inside the loop: an
//! async body that borrows the function's arguments (`&mut self`, a `&mut` argument) cannot be
//! handed out by a closure called repeatedly, but an `async` block written inside the loop can,
//! and the macro puts the caller's attempt expression there. Everything the loop decides
//! happens in the engine ([`Call`](super::Call)); the loop itself only runs the attempt, asks
//! [`Call::after`](super::Call::after) and sleeps.

/// The sync retry loop: `retry_sync!(call.after(&classifier, &mut hook) <- attempt)` evaluates
/// `attempt` (which runs one attempt on the engine `call`, as `call.attempt_sync(|| ..)`) until
/// [`Call::after`](crate::run::Call::after), given that attempt's outcome, says to return;
/// it sleeps between attempts. The loop's value is the last outcome.
///
/// `after` is passed in so that generated code can give it the span of the declared return
/// type, where type errors about the outcome are then reported.
///
/// This is the loop `#[retryable]` writes around a sync body, and [`Retry::call`](crate::Retry::call)
/// runs: the attempt is an expression written inside the loop, so it borrows what it uses
/// afresh each time (a `&mut` argument, `&mut self`), which no closure handed to a function can.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::run::{ByTrait, Call, NoHook, retry_sync};
/// use retry_kit::RetryPolicy;
/// use std::{io, time::Duration};
///
/// fn append(log: &mut Vec<&'static str>) -> io::Result<usize> {
///     log.push("attempt");
///     if log.len() < 3 { Err(io::ErrorKind::ConnectionReset.into()) } else { Ok(log.len()) }
/// }
///
/// let policy = RetryPolicy::fixed(Duration::ZERO).attempts(5);
/// let mut log = Vec::new();
/// let mut call = Call::new(&policy);
/// let out = retry_sync!(call.after(&ByTrait, &mut NoHook) <- call.attempt_sync(|| append(&mut log)));
/// assert_eq!(out.unwrap(), 3);
/// ```
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

/// The async retry loop: `retry_async!(call.after(&classifier, &mut hook) <- attempt, sleep:
/// sleep)`, as [`retry_sync!`](crate::retry_sync), with an attempt that is awaited in place
/// (`call.attempt_async(async { .. }).await`) and sleeping with `sleep` (a `Fn(Duration)`
/// returning a future). Inside
/// `testing::record_sleeps_async` the wait is recorded instead of slept.
///
/// The loop `#[retryable]` writes around an async body: each attempt is an `async` block made
/// inside the loop, so it borrows the arguments afresh.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::run::{ByTrait, Call, NoHook, retry_async, tokio_sleep};
/// use retry_kit::RetryPolicy;
/// use std::{io, time::Duration};
///
/// async fn send(sent: &mut u32) -> io::Result<u32> {
///     *sent += 1;
///     if *sent < 2 { Err(io::ErrorKind::ConnectionRefused.into()) } else { Ok(*sent) }
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let policy = RetryPolicy::fixed(Duration::from_millis(10)).attempts(3);
/// let mut sent = 0;
/// let mut call = Call::new(&policy);
/// let out: io::Result<u32> = retry_async!(call.after(&ByTrait, &mut NoHook)
///     <- call.attempt_async(async { send(&mut sent).await }).await, sleep: tokio_sleep);
/// assert_eq!(out.unwrap(), 2);
/// # }
/// ```
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
                // Boxed: a sleep (tokio's is large) held in place would size every retryable
                // future for the wait, though a call that succeeds never waits; an allocation
                // per wait is small beside the timer's own registration.
                ::std::boxed::Box::pin(($sleep)(delay)).await;
            }
        }
    };
}

/// The hedged retry loop: as [`retry_async!`](crate::retry_async), but a slow attempt gets
/// company. `attempt` makes a new attempt future each time it is evaluated, whose outcome is
/// `outcome`; `timeout` (a [`TimeoutSlot`](crate::run::plumbing::TimeoutSlot)) limits each attempt, and
/// `then` maps a settled outcome (identity, or `retry_if`'s flag); `hedge` is the delay after
/// which a running attempt is hedged. See [`Retry::hedge`](crate::Retry::hedge) for the rules,
/// and [`Hedge::call_async_with`](crate::builder::Hedge::call_async_with), which runs this loop over closures.
#[macro_export]
macro_rules! retry_hedged {
    ($call:ident . $after:ident ($classifier:expr, $hook:expr) <- $attempt:expr,
     outcome: $outcome:ty, timeout: $timeout:expr, then: $then:expr, sleep: $sleep:expr,
     hedge: $delay:expr) => {{
        let mut hedging = ::core::pin::pin!($crate::run::plumbing::Hedging::new());
        let then = $then;
        let mut start = true;
        loop {
            if ::core::mem::take(&mut start) {
                let attempt =
                    <_ as $crate::run::plumbing::TimeoutSlot<
                        $crate::run::plumbing::ErrorOf<$outcome>,
                    >>::wrap($timeout, $attempt, &$sleep, || $call.time_left());
                hedging.as_mut().start(&mut $call, attempt);
            }
            match hedging.as_mut().next(&mut $call, $sleep, || $delay).await {
                $crate::run::plumbing::Event::Finished { number, out, hold } => {
                    let mut timed_out = false;
                    let out = $crate::run::plumbing::TimeoutSlot::settle::<$outcome>(
                        $timeout,
                        out,
                        &mut timed_out,
                    );
                    let out = then(out);
                    let running = hedging.running();
                    let ended = $crate::run::plumbing::Ended {
                        number,
                        hold,
                        timed_out,
                        running,
                    };
                    // `None`: the attempt succeeded, its outcome is the call's.
                    match $call.$after(&out, ended, $classifier, $hook) {
                        None | Some($crate::run::Next::Stop(_)) => {
                            // The attempts still running are dropped with the call: sent, so
                            // reported (as attempts that were cancelled).
                            $crate::run::plumbing::cancelled(&out, $hook, running);
                            break out;
                        }
                        Some($crate::run::Next::Retry(delay)) => {
                            start = hedging.as_mut().admitted(&mut $call, delay, $sleep);
                        }
                        Some(_) => {
                            // `Next::Wait`: no new attempt, hedge or retry; disarm the timer.
                            hedging.as_mut().start_no_more();
                        }
                    }
                }
                $crate::run::plumbing::Event::Timer => {
                    start = hedging.as_mut().timer_fired(&mut $call, $hook, &then);
                }
            }
        }
    }};
}
