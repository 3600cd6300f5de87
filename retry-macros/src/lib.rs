//! Procedural macros of [`retry-kit`](https://docs.rs/retry-kit). Depend on `retry-kit`, which
//! re-exports them with their documentation; the generated code names the runtime through it.
#![forbid(unsafe_code)]

use proc_macro::TokenStream;

mod classify;
mod errors;
mod retryable;
mod vocabulary;

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
/// | `base` | duration string (`"250ms"`, `"1.5s"`, `"2m"`, `"1h"`, `"500us"`, `"1m30s"`) | `"100ms"` | first delay / step |
/// | `multiplier` | number > 1 | 2.0 | exponential growth factor |
/// | `max_delay` | duration string | `"30s"` | cap on any one delay |
/// | `jitter` | `"none"`, `"full"`, `"equal"`, `"decorrelated"`, `"spread"` | `"full"`; `"none"` with `backoff = "fixed"` | randomisation (a fixed backoff waits its fixed delay unless jitter is asked for) |
/// | `classify` | path to `fn(&E) -> ErrorClass` | `<E as Classify>::class` | the decision per error |
/// | `retry_after` | path to `fn(&E) -> Option<Duration>` | `Classify::retry_after` without `classify`; none with it | the error's own wait hint |
/// | `idempotent` | flag, or `= true/false` | false | also retry `IdempotentOnly` errors |
/// | `deadline` | duration string | none | total budget from the first attempt |
/// | `attempt_timeout` | duration string | none | async only: cancel each attempt after this |
/// | `circuit` | path to a `static CircuitBreaker` | none | shared breaker consulted before every attempt |
/// | `budget` | path to a `static RetryBudget` | none | shared bound on the aggregate retry rate |
/// | `adaptive` | path to a `static` adaptive policy | none | attempts and delays adjusted from observations |
/// | `policy` | expression of type `RetryPolicy`, `&RetryPolicy` or `PolicyCell` | none | a shared or run-time policy; excludes the shape keys above (`idempotent` and `nested` may still be set) |
/// | `nested` | `"retry"`, `"once"` | `"retry"` | `"once"`: inside another retryable's attempt, make a single attempt |
/// | `on_failure` | path to `fn(&Failure<'_, E>)` | none | called once per failed attempt |
/// | `sleep` | path to an async `fn(Duration)` | tokio's sleep | async only: for other runtimes |
/// | `retry_if` | path to `fn(&T) -> bool` | none | also retry an `Ok` value it flags (polling until ready): the value follows the schedule (attempts, delays, deadline) but is an answer, not a failure (the breaker and budget do not count it; `Rejected::Value` in records); when attempts run out the last value is returned |
/// | `already_done` | path to `fn(E) -> Result<T, E>` | none | what an `AlreadyDone` error becomes (a receipt rebuilt from the duplicate); without it the error is returned |
/// | `hedge` | duration string | none | async and `idempotent` only: if an attempt has not answered after this long, start the next beside it (up to `attempts` in all; `"0ms"` starts them all at once); the first success wins, the others are dropped; a retryable failure starts the next at once, as gRPC's hedging does (`backoff`, `base` and `jitter` then pace only `retry_if` polls; a retry-after is waited out) |
/// | `key` | expression (may use the arguments) | none | with `circuit`/`budget` naming a `static PerKey<..>`: which breaker or budget this call uses (a host, a partition, a tenant) |
/// | `idempotency_key` | expression (may use the arguments) of a `Hash` type | none (128 random bits per call) | the call's idempotency key is a fixed function of this value and the function's path, the same in every process, build and platform: a task re-run after a crash sends the key its first run sent |
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
///
/// # Arguments, attempt by attempt
///
/// Every attempt starts from the arguments as the caller passed them. References are borrowed
/// afresh by each attempt; a `mut` argument taken by value is copied afresh for each attempt,
/// so a cursor, a counter or a buffer length changed by a failed attempt is not seen by the
/// next. Such an argument must be `Copy`: anything else would need a clone, which the macro
/// never makes for you, so it is a compile error at the argument (as are `mut self` and
/// `ref mut` bindings). Write the copy in the body instead, or take `&mut` to carry changes
/// across attempts on purpose:
///
/// ```
/// use retry_kit::{retryable, testing, Classify};
///
/// #[derive(Debug, Classify)]
/// #[classify(transient)]
/// struct Dropped;
///
/// /// Reads `data` from `cursor`; the link drops after two bytes while `drops` is not zero.
/// #[retryable(attempts = 3, base = "0ms")]
/// fn read_from(data: &[u8], mut cursor: usize, drops: &mut u32) -> Result<Vec<u8>, Dropped> {
///     let mut read = Vec::new();
///     while cursor < data.len() {
///         read.push(data[cursor]);
///         cursor += 1;
///         if read.len() == 2 && *drops > 0 {
///             *drops -= 1;
///             return Err(Dropped);
///         }
///     }
///     Ok(read)
/// }
///
/// let mut drops = 1;
/// // The second attempt reads from 1 again, not from where the first one stopped.
/// assert_eq!(read_from(b"abcd", 1, &mut drops).unwrap(), b"bcd");
/// ```
///
/// A body that moves an argument out (`consume(name)`) is a compile error at that move: the
/// next attempt would find it gone. Its fix, `consume(name.clone())`, stays visible in the body.
///
/// # Returning a borrow of what the body mutates
///
/// A body that mutates through `&mut self` (or a `&mut` argument) and returns a borrow of the
/// same data fails to compile (E0524, "two closures require unique access"), pointing at the
/// return type. It is not the macro: a hand-written loop hits the same limit of today's borrow
/// checker, because the borrow returned by one attempt would have to outlive the next attempt's
/// mutable borrow. Retry the part that mutates, and borrow after it:
///
/// ```compile_fail
/// # use retry_kit::{retryable, Classify};
/// # #[derive(Debug, Classify)] #[classify(transient)] struct Busy;
/// # struct Cache { value: Option<String> }
/// impl Cache {
///     #[retryable(attempts = 3)]
///     fn get_or_load(&mut self) -> Result<&String, Busy> {
///         if self.value.is_none() {
///             self.value = Some(String::from("loaded"));
///         }
///         Ok(self.value.as_ref().unwrap())
///     }
/// }
/// ```
///
/// ```
/// # use retry_kit::{retryable, Classify};
/// # #[derive(Debug, Classify)] #[classify(transient)] struct Busy;
/// # struct Cache { value: Option<String> }
/// impl Cache {
///     #[retryable(attempts = 3)]
///     fn load(&mut self) -> Result<(), Busy> {
///         if self.value.is_none() {
///             self.value = Some(String::from("loaded"));
///         }
///         Ok(())
///     }
///
///     fn get_or_load(&mut self) -> Result<&String, Busy> {
///         self.load()?;
///         Ok(self.value.as_ref().expect("load() filled it"))
///     }
/// }
/// # let mut cache = Cache { value: None };
/// # assert_eq!(cache.get_or_load().unwrap(), "loaded");
/// ```
///
/// # With other attributes
///
/// - `#[async_trait]`: put `#[retryable]` on the method inside the `#[async_trait]` impl (or on
///   a default method of the trait). The retry loop goes inside the boxed future, which stays
///   `Send` whenever the body's future is, so the method works behind `Arc<dyn Trait>`.
/// - `#[tracing::instrument]`: either order gives one span per call with the retry events
///   inside it (and `err`/`ret` events once per call). With `#[tracing::instrument]` above,
///   the loop goes around the function's own block inside tracing's span; should a future
///   tracing-attributes version hide that block, the expansion is a compile error that says to
///   put `#[retryable]` above `#[tracing::instrument]`, the order that always works.
///
/// ```
/// use retry_kit::retryable;
/// use std::{io, sync::Arc};
///
/// #[async_trait::async_trait]
/// trait Store: Send + Sync {
///     async fn get(&self, key: String) -> io::Result<Vec<u8>>;
/// }
///
/// struct Disk;
///
/// #[async_trait::async_trait]
/// impl Store for Disk {
///     #[retryable(attempts = 3, base = "10ms")]
///     async fn get(&self, key: String) -> io::Result<Vec<u8>> {
///         Ok(key.as_bytes().to_vec()) // `key` is borrowed afresh by every attempt
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let store: Arc<dyn Store> = Arc::new(Disk);
/// let value = tokio::spawn(async move { store.get("k".into()).await }).await.unwrap();
/// assert_eq!(value.unwrap(), b"k");
/// # }
/// ```
///
/// # Testing
///
/// Sync calls: `testing::record_sleeps(|| ...)`; async calls:
/// `testing::record_sleeps_async(future)`, on any runtime and clock, which needs no tokio
/// feature beyond what runs the test (`macros`, `rt`). Or run the test under
/// `#[tokio::test(start_paused = true)]`, which needs tokio's `test-util` feature. Neither
/// sleeps for real; both let deadlines and breakers see the time pass.
#[proc_macro_attribute]
pub fn retryable(attr: TokenStream, item: TokenStream) -> TokenStream {
    retryable::retryable(attr.into(), item.into()).into()
}

/// Implement `Classify` from `#[classify(...)]` tags on an error type.
///
/// Whether a second identical attempt could succeed is decided where the error is defined,
/// because that is the only place that knows what each variant means. The derive writes
/// `class()` (and `retry_after()` where a variant carries a wait) from one tag per variant.
///
/// # Tags
///
/// | where | tag | meaning |
/// | --- | --- | --- |
/// | variant or struct | `transient` | a second identical attempt may succeed (reset, lock wait timeout, deadlock, rate limit) |
/// | variant or struct | `permanent` | it will fail the same way (bad input, constraint violation): never retried |
/// | variant or struct | `idempotent_only` | the outcome is unknown (a timed-out write): retried only by `idempotent` functions |
/// | variant or struct | `already_done` | the receiver already did the work (a duplicate transaction): never retried; the loop stops with `StopReason::AlreadyDone`, or `already_done = path` on `#[retryable]` makes it the result |
/// | variant or struct | `delegate` | the single field implements `Classify`; class *and* retry-after come from it |
/// | variant or struct | `with = path` | a `fn(&Self) -> ErrorClass`, for classes that depend on a field's value |
/// | enum | `default = transient \| permanent \| idempotent_only` | the class of every untagged variant |
/// | enum or struct | `crate = path` | where the generated code finds `retry_kit` (default `::retry_kit`), for facades that re-export it |
/// | field | `retry_after` | this `Duration` or `Option<Duration>` field is the wait the error asks for |
///
/// Tags may be split over several `#[classify(...)]` attributes. A variant takes exactly one
/// of the first six; without an enum `default`, every variant must have one.
///
/// # Example: a database error
///
/// Connection resets, lock wait timeouts, deadlocks and serialization failures are resolved by
/// trying again; a unique violation is not. A statement timeout leaves a write's outcome
/// unknown. "Insufficient resources" is both: a memory limit fails the same query the same way,
/// while a connection limit clears when other clients finish, which only the error code tells.
///
/// ```
/// use retry_kit::{retryable, Classify, ErrorClass};
/// use std::time::Duration;
///
/// /// SQLSTATE codes of the "insufficient resources" class.
/// const OUT_OF_MEMORY: &str = "53200";
/// const TOO_MANY_CONNECTIONS: &str = "53300";
///
/// #[derive(Debug, thiserror::Error, Classify)]
/// pub enum DbError {
///     /// The connection dropped: the statement never ran, or was rolled back with it.
///     #[error("connection reset by the server")]
///     #[classify(transient)]
///     ConnectionReset,
///
///     /// Another transaction held the row for too long; the statement was rolled back.
///     #[error("lock wait timeout exceeded")]
///     #[classify(transient)]
///     LockWaitTimeout,
///
///     /// The server picked this transaction as the deadlock victim and rolled it back.
///     #[error("deadlock detected")]
///     #[classify(transient)]
///     Deadlock,
///
///     /// A concurrent transaction conflicted under serializable isolation.
///     #[error("could not serialize access due to concurrent update")]
///     #[classify(transient)]
///     SerializationFailure,
///
///     /// The same row will collide again: fix the input, do not retry.
///     #[error("duplicate key value violates unique constraint {constraint:?}")]
///     #[classify(permanent)]
///     UniqueViolation { constraint: String },
///
///     /// We stopped waiting; whether a write committed is unknown from here.
///     #[error("statement timeout after {0:?}")]
///     #[classify(idempotent_only)]
///     StatementTimeout(Duration),
///
///     /// Memory limit (permanent) or connection limit (transient): the code decides.
///     #[error("insufficient resources ({code})")]
///     #[classify(with = resource_class)]
///     ResourceLimit {
///         code: String,
///         /// The server's hint of when a connection slot frees up, if it sent one.
///         #[classify(retry_after)]
///         retry_in: Option<Duration>,
///     },
///
///     /// Socket errors: `std::io::Error` has its own table (resets transient, ...).
///     #[error(transparent)]
///     #[classify(delegate)]
///     Io(#[from] std::io::Error),
/// }
///
/// fn resource_class(error: &DbError) -> ErrorClass {
///     match error {
///         DbError::ResourceLimit { code, .. } if code == TOO_MANY_CONNECTIONS => {
///             ErrorClass::Transient
///         }
///         _ => ErrorClass::Permanent,
///     }
/// }
///
/// assert_eq!(DbError::Deadlock.class(), ErrorClass::Transient);
/// assert_eq!(DbError::SerializationFailure.class(), ErrorClass::Transient);
/// let duplicate = DbError::UniqueViolation { constraint: "users_email_key".into() };
/// assert_eq!(duplicate.class(), ErrorClass::Permanent);
/// let timeout = DbError::StatementTimeout(Duration::from_secs(5));
/// assert_eq!(timeout.class(), ErrorClass::IdempotentOnly);
///
/// let full = DbError::ResourceLimit {
///     code: TOO_MANY_CONNECTIONS.into(),
///     retry_in: Some(Duration::from_millis(200)),
/// };
/// assert_eq!(full.class(), ErrorClass::Transient);
/// assert_eq!(full.retry_after(), Some(Duration::from_millis(200)));
/// let oom = DbError::ResourceLimit { code: OUT_OF_MEMORY.into(), retry_in: None };
/// assert_eq!(oom.class(), ErrorClass::Permanent);
///
/// let reset = DbError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
/// assert_eq!(reset.class(), ErrorClass::Transient);
///
/// // The loop reads the classes: a deadlock is retried, a unique violation is not.
/// #[retryable(attempts = 3, base = "0ms")]
/// fn insert_user(tries: &mut u32) -> Result<(), DbError> {
///     *tries += 1;
///     match *tries {
///         1 => Err(DbError::Deadlock),
///         _ => Err(DbError::UniqueViolation { constraint: "users_email_key".into() }),
///     }
/// }
/// let mut tries = 0;
/// assert!(matches!(insert_user(&mut tries), Err(DbError::UniqueViolation { .. })));
/// assert_eq!(tries, 2);
/// ```
///
/// # Structs, generics and the enum default
///
/// A struct is tagged like a variant. Generics, lifetimes and `where` clauses are carried
/// through; a `delegate` (or `retry_after`) field whose type mentions a type parameter adds
/// that field type's bound to the impl, so `Layer<E>` is `Classify` exactly when `E` is.
///
/// ```
/// use retry_kit::{Classify, ErrorClass, TimedOut};
/// use std::time::Duration;
///
/// #[derive(Debug, Classify)]
/// #[classify(delegate)]
/// struct Layer<E>(E);
///
/// #[derive(Debug, Classify)]
/// #[classify(default = transient)]
/// enum Fetch<'a> {
///     Busy,
///     Throttled(#[classify(retry_after)] Duration),
///     #[classify(permanent)]
///     NotFound { path: &'a str },
/// }
///
/// assert_eq!(Layer(TimedOut::after(Duration::from_secs(1))).class(), ErrorClass::IdempotentOnly);
/// assert_eq!(Fetch::Busy.class(), ErrorClass::Transient);
/// assert_eq!(Fetch::Throttled(Duration::from_secs(2)).retry_after(), Some(Duration::from_secs(2)));
/// assert_eq!(Fetch::NotFound { path: "/x" }.class(), ErrorClass::Permanent);
/// ```
///
/// # Choices and limits
///
/// - A struct needs a tag; there is no implicit class. An enum without `default` needs one on
///   every variant, so adding a variant forces a decision about it.
/// - `retry_after` is read from at most one field per variant. It accepts `Duration` and
///   `Option<Duration>`, also through a type alias; a type that is plainly something else
///   (a number of seconds, a string) is rejected at the field. It sits beside any class tag,
///   including `with`, but not beside `delegate`, which already forwards the field's own
///   `retry_after()`.
/// - `with` must name a function (`with = resource_class`, `with = Self::class_of`);
///   expressions and closures are rejected, and a function of another shape is a type
///   mismatch at its path.
/// - Unions are rejected: a union cannot tell which of its fields is set.
/// - An enum with no variants is accepted (its `class` is never called).
///
/// # Diagnostics
///
/// Mistakes are compile errors at the offending token, naming the variant, all reported in one
/// build: untagged variants, conflicting or duplicate tags, unknown tags (with the nearest valid
/// one suggested), `delegate` without exactly one field, `retry_after` on a non-`Duration` or on
/// two fields, `with` without a path, and unions. The impl is still emitted, with what was wrong
/// treated as `Permanent`, so no "`Classify` is not implemented" errors follow from a typo.
///
/// ```compile_fail
/// use retry_kit::Classify;
///
/// #[derive(Debug, Classify)]
/// enum DbError {
///     #[classify(transient)]
///     Deadlock,
///     // error: variant `UniqueViolation` has no class: tag it `#[classify(transient)]`, ...
///     UniqueViolation,
/// }
/// ```
#[proc_macro_derive(Classify, attributes(classify))]
pub fn derive_classify(input: TokenStream) -> TokenStream {
    classify::derive(input.into()).into()
}

/// The vocabulary of `#[retryable]` (its key table, duration strings, suggestions and value
/// checks) as modules of the invoking crate: how retry-runtime reads configuration files with
/// the attribute's own keys and messages. Not public API.
#[doc(hidden)]
#[proc_macro]
pub fn __vocabulary(input: TokenStream) -> TokenStream {
    let _ = input;
    vocabulary::expand().into()
}
