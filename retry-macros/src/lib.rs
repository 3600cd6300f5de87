//! Procedural macros of [`retry-kit`](https://docs.rs/retry-kit). Depend on `retry-kit`, which
//! re-exports them with their documentation; the generated code names the runtime through it.
#![forbid(unsafe_code)]

use proc_macro::TokenStream;

mod classify;
mod retryable;

/// Rewrite a sync or async function into a retry loop.
///
/// The signature is kept as written; the body runs once per attempt, borrowing the arguments
/// afresh (nothing is cloned, so `&mut self` and `&mut` arguments work), and `?` or `return`
/// in the body end that attempt. The function must return `Result<T, E>` (or an alias such as
/// `io::Result<T>`) where `E: Classify`, unless `classify = path` is given.
///
/// | key | value | default | meaning |
/// | --- | --- | --- | --- |
/// | `attempts` | integer >= 1 | 3 | total attempts, the first included |
/// | `backoff` | `"exponential"`, `"fixed"`, `"linear"` | `"exponential"` | delay shape |
/// | `base` | duration string (`"250ms"`, `"1.5s"`, `"2m"`, `"1h"`, `"500us"`) | `"100ms"` | first delay / step |
/// | `multiplier` | number > 1 | 2.0 | exponential growth factor |
/// | `max_delay` | duration string | `"30s"` | cap on any one delay |
/// | `jitter` | `"none"`, `"full"`, `"equal"`, `"decorrelated"` | `"full"` | randomisation |
/// | `classify` | path to `fn(&E) -> ErrorClass` | `<E as Classify>::class` | the decision per error |
/// | `retry_after` | path to `fn(&E) -> Option<Duration>` | `Classify::retry_after` without `classify`; none with it | the error's own wait hint |
/// | `idempotent` | flag, or `= true/false` | false | also retry `IdempotentOnly` errors |
/// | `deadline` | duration string | none | total budget from the first attempt |
/// | `attempt_timeout` | duration string | none | async only: cancel each attempt after this |
/// | `circuit` | path to a `static CircuitBreaker` | none | shared breaker consulted before every attempt |
/// | `budget` | path to a `static RetryBudget` | none | shared bound on the aggregate retry rate |
/// | `adaptive` | path to a `static` adaptive policy | none | attempts and delays adjusted from observations |
/// | `policy` | expression of type `RetryPolicy` or `&RetryPolicy` | none | a shared or run-time policy; excludes the shape keys above (`idempotent` and `nested` may still be set) |
/// | `nested` | `"retry"`, `"once"` | `"retry"` | `"once"`: inside another retryable's attempt, make a single attempt |
/// | `on_failure` | path to `fn(&Failure<'_, E>)` | none | called once per failed attempt |
/// | `sleep` | path to an async `fn(Duration)` | tokio's sleep | async only: for other runtimes |
/// | `crate` | path | `::retry_kit` | where the generated code finds the runtime |
///
/// Durations are exact: `"1.5s"` is 1 500 000 000 ns; a value finer than a nanosecond or longer
/// than `Duration::MAX` is a compile error. Misuse of any key (unknown or duplicate keys, values
/// of the wrong kind, `attempts = 0`, shape keys beside `policy`, `attempt_timeout` or `sleep` on a
/// sync function, a `const fn`, a function that does not return `Result`) is a compile error at
/// the offending token; the function is still emitted, so the rest of the crate type-checks.
///
/// ```
/// use retry_kit::{retryable, testing, Classify};
/// use std::time::Duration;
///
/// #[derive(Debug, PartialEq, Classify)]
/// enum QueueError {
///     #[classify(transient)]
///     Busy,
///     #[classify(permanent)]
///     Full,
/// }
///
/// struct Queue {
///     busy_for: u32,
///     items: Vec<u32>,
/// }
///
/// impl Queue {
///     #[retryable(attempts = 4, backoff = "linear", base = "10ms", jitter = "none")]
///     fn push(&mut self, item: u32) -> Result<usize, QueueError> {
///         if self.busy_for > 0 {
///             self.busy_for -= 1;
///             return Err(QueueError::Busy);
///         }
///         if self.items.len() == 2 {
///             return Err(QueueError::Full);
///         }
///         self.items.push(item);
///         Ok(self.items.len())
///     }
/// }
///
/// let mut queue = Queue { busy_for: 2, items: Vec::new() };
/// let (pushed, slept) = testing::record_sleeps(|| queue.push(7));
/// assert_eq!(pushed, Ok(1));
/// assert_eq!(slept, [Duration::from_millis(10), Duration::from_millis(20)]);
/// queue.push(8).unwrap();
/// assert_eq!(queue.push(9), Err(QueueError::Full)); // permanent: one attempt
/// ```
///
/// Async functions sleep with tokio by default (`sleep = path` for another runtime) and follow
/// tokio's paused clock in tests:
///
/// ```
/// use retry_kit::retryable;
/// use std::{io, time::Duration};
///
/// #[retryable(attempts = 3, backoff = "fixed", base = "2s", jitter = "none", deadline = "3s")]
/// async fn connect(refusals: &mut u32) -> io::Result<&'static str> {
///     *refusals += 1;
///     Err(io::ErrorKind::ConnectionRefused.into())
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let start = tokio::time::Instant::now();
/// let mut refusals = 0;
/// assert!(connect(&mut refusals).await.is_err());
/// // One 2 s sleep; a second would end at 4 s, past the 3 s deadline.
/// assert_eq!(refusals, 2);
/// assert_eq!(start.elapsed(), Duration::from_secs(2));
/// # }
/// ```
#[proc_macro_attribute]
pub fn retryable(attr: TokenStream, item: TokenStream) -> TokenStream {
    retryable::retryable(attr.into(), item.into()).into()
}

/// Implement `Classify` from `#[classify(...)]` tags. See the `retry-kit` crate.
#[proc_macro_derive(Classify, attributes(classify))]
pub fn derive_classify(input: TokenStream) -> TokenStream {
    classify::derive(input.into()).into()
}
