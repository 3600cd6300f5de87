//! Every function shape the SPEC lists compiles and retries: free fns, methods with each
//! receiver, generics, lifetimes, where clauses, `impl Trait` arguments, patterns, early
//! returns and `?`, async fns (also in traits), and `Result` aliases.
#![deny(warnings, unused_qualifications)]

use retry_kit::{Classify, ErrorClass, retryable, testing};
use std::io;

#[derive(Debug, PartialEq, Classify)]
enum Flaky {
    #[classify(transient)]
    Again,
    #[classify(permanent)]
    Broken,
}

impl From<io::Error> for Flaky {
    fn from(_: io::Error) -> Self {
        Flaky::Broken
    }
}

#[retryable(attempts = 3, base = "0ms")]
fn free_fn(calls: &mut u32) -> Result<u32, Flaky> {
    *calls += 1;
    if *calls < 3 {
        Err(Flaky::Again)
    } else {
        Ok(*calls)
    }
}

#[test]
fn free_fn_with_mut_ref_argument_retries_until_success() {
    let mut calls = 0;
    assert_eq!(free_fn(&mut calls), Ok(3));
    assert_eq!(calls, 3);
}

struct Counter {
    calls: u32,
    fail_until: u32,
}

impl Counter {
    #[retryable(attempts = 5, base = "0ms")]
    fn by_mut_ref(&mut self) -> Result<u32, Flaky> {
        self.calls += 1;
        if self.calls < self.fail_until {
            return Err(Flaky::Again);
        }
        Ok(self.calls)
    }

    #[retryable(attempts = 2, base = "0ms")]
    fn by_ref(&self, seen: &mut Vec<u32>) -> Result<(), Flaky> {
        seen.push(self.calls);
        Err(Flaky::Again)
    }

    #[retryable(attempts = 3, base = "0ms")]
    fn by_value(self, attempts: &std::cell::Cell<u32>) -> Result<u32, Flaky> {
        // `self` is only read, so every attempt borrows it afresh.
        attempts.set(attempts.get() + 1);
        if attempts.get() < 3 {
            Err(Flaky::Again)
        } else {
            Ok(self.calls)
        }
    }

    #[retryable(attempts = 4, base = "0ms")]
    async fn async_by_mut_ref(&mut self, extra: &mut u32) -> Result<u32, Flaky> {
        tokio::task::yield_now().await;
        self.calls += 1;
        *extra += 10;
        if self.calls < self.fail_until {
            Err(Flaky::Again)
        } else {
            Ok(self.calls)
        }
    }
}

#[test]
fn methods_with_every_receiver_retry() {
    let mut c = Counter {
        calls: 0,
        fail_until: 4,
    };
    assert_eq!(c.by_mut_ref(), Ok(4));
    let mut seen = Vec::new();
    assert_eq!(c.by_ref(&mut seen), Err(Flaky::Again));
    assert_eq!(seen, [4, 4]);
    // The by-value receiver is retried: three attempts, each reading the same `self`.
    let attempts = std::cell::Cell::new(0);
    assert_eq!(
        Counter {
            calls: 7,
            fail_until: 0
        }
        .by_value(&attempts),
        Ok(7)
    );
    assert_eq!(attempts.get(), 3);
}

#[tokio::test(start_paused = true)]
async fn async_method_with_mut_self_and_mut_argument_retries() {
    let mut c = Counter {
        calls: 0,
        fail_until: 3,
    };
    let mut extra = 0;
    assert_eq!(c.async_by_mut_ref(&mut extra).await, Ok(3));
    assert_eq!(extra, 30);
}

#[retryable(attempts = 2, base = "0ms")]
fn generic<'a, T: Clone + 'a, U>(
    items: &'a [T],
    _unused: U,
    count: &mut usize,
) -> Result<Vec<T>, Flaky>
where
    U: Copy,
{
    *count += 1;
    if *count == 1 {
        Err(Flaky::Again)
    } else {
        Ok(items.to_vec())
    }
}

#[test]
fn generics_lifetimes_and_where_clauses_are_carried_through() {
    let mut count = 0;
    assert_eq!(generic(&[1, 2], 'x', &mut count), Ok(vec![1, 2]));
    assert_eq!(count, 2);
}

#[retryable(attempts = 3, base = "0ms")]
fn impl_trait_and_patterns(
    source: &mut impl Iterator<Item = Result<u8, Flaky>>,
    (lo, hi): (u8, u8),
) -> Result<u8, Flaky> {
    let v = source.next().unwrap_or(Err(Flaky::Broken))?;
    Ok(v.clamp(lo, hi))
}

#[test]
fn impl_trait_arguments_patterns_and_question_mark_work() {
    let mut source = vec![Err(Flaky::Again), Ok(200)].into_iter();
    assert_eq!(impl_trait_and_patterns(&mut source, (1, 100)), Ok(100));
}

#[retryable(attempts = 3, base = "0ms")]
fn io_alias(errors: &mut Vec<io::ErrorKind>) -> io::Result<usize> {
    match errors.pop() {
        Some(kind) => Err(kind.into()),
        None => Ok(errors.len()),
    }
}

#[test]
fn result_aliases_are_accepted() {
    let mut errors = vec![io::ErrorKind::ConnectionReset, io::ErrorKind::Interrupted];
    assert_eq!(io_alias(&mut errors).unwrap(), 0);
    let mut errors = vec![io::ErrorKind::NotFound];
    assert_eq!(
        io_alias(&mut errors).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
}

trait Store {
    async fn load(&mut self, key: &str) -> Result<String, Flaky>;
    fn save(&mut self) -> Result<(), Flaky>;
}

struct Db {
    fails: u32,
}

impl Store for Db {
    #[retryable(attempts = 3, base = "10ms")]
    async fn load(&mut self, key: &str) -> Result<String, Flaky> {
        if self.fails > 0 {
            self.fails -= 1;
            return Err(Flaky::Again);
        }
        Ok(key.to_uppercase())
    }

    #[retryable(attempts = 3, base = "1s", jitter = "none")]
    fn save(&mut self) -> Result<(), Flaky> {
        if self.fails > 0 {
            self.fails -= 1;
            Err(Flaky::Again)?;
        }
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn trait_impl_methods_sync_and_native_async_retry() {
    let mut db = Db { fails: 2 };
    assert_eq!(db.load("k").await, Ok("K".to_string()));
    let mut db = Db { fails: 2 };
    let (result, slept) = testing::record_sleeps(|| db.save());
    assert_eq!(result, Ok(()));
    assert_eq!(slept, [1, 2].map(std::time::Duration::from_secs));
}

fn assert_send<T: Send>(_: &T) {}

#[retryable(attempts = 2)]
async fn send_future(x: &u32) -> Result<u32, Flaky> {
    tokio::task::yield_now().await;
    Ok(*x)
}

#[test]
fn async_future_is_send_when_the_body_is() {
    let x = 1;
    let fut = send_future(&x);
    assert_send(&fut);
}

fn always_permanent(_: &Flaky) -> ErrorClass {
    ErrorClass::Permanent
}

#[retryable(attempts = 5, classify = always_permanent)]
fn classified_by_function(calls: &mut u32) -> Result<(), Flaky> {
    *calls += 1;
    Err(Flaky::Again)
}

#[test]
fn classify_function_overrides_the_trait() {
    let mut calls = 0;
    assert_eq!(classified_by_function(&mut calls), Err(Flaky::Again));
    assert_eq!(calls, 1);
}

/// A repository behind `Arc<dyn Trait>`, as services write them with `#[async_trait]`.
#[async_trait::async_trait]
trait Repository: Send + Sync {
    async fn load(&self, id: u32, failures: &std::sync::Mutex<u32>) -> Result<String, Flaky>;
    async fn store(&mut self, row: String, mut version: u32) -> Result<u32, Flaky>;
}

struct Rows {
    rows: Vec<String>,
    failures: u32,
}

#[async_trait::async_trait]
impl Repository for Rows {
    #[retryable(attempts = 3, base = "0ms")]
    async fn load(&self, id: u32, failures: &std::sync::Mutex<u32>) -> Result<String, Flaky> {
        {
            let mut left = failures.lock().unwrap();
            if *left > 0 {
                *left -= 1;
                return Err(Flaky::Again);
            }
        }
        tokio::task::yield_now().await;
        Ok(format!("row {id}"))
    }

    #[retryable(attempts = 3, base = "0ms")]
    async fn store(&mut self, row: String, mut version: u32) -> Result<u32, Flaky> {
        version += 1;
        tokio::task::yield_now().await;
        if self.failures > 0 {
            self.failures -= 1;
            return Err(Flaky::Again);
        }
        self.rows.push(row.clone());
        Ok(version)
    }
}

#[tokio::test]
async fn async_trait_methods_retry_behind_a_dyn_trait_and_stay_send() {
    let repo: std::sync::Arc<dyn Repository> = std::sync::Arc::new(Rows {
        rows: Vec::new(),
        failures: 0,
    });
    let failures = std::sync::Mutex::new(2);
    // `tokio::spawn` requires the boxed future to be `Send`.
    let loaded = {
        let repo = repo.clone();
        let failures = std::sync::Arc::new(failures);
        tokio::spawn(async move { repo.load(7, &failures).await })
            .await
            .unwrap()
    };
    assert_eq!(loaded, Ok("row 7".to_owned()));

    let mut rows = Rows {
        rows: Vec::new(),
        failures: 2,
    };
    // Owned and `mut` arguments: the row is borrowed afresh by each attempt, the version copied.
    assert_eq!(rows.store("a".to_owned(), 1).await, Ok(2));
    assert_eq!(rows.rows, ["a"]);
    assert_eq!(rows.failures, 0);
}
