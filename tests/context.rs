//! `current_attempt()`: attempt numbers and idempotency keys in sync and async bodies, across
//! `.await` points, interleaved calls, nesting and panics; and the deadline an inner call
//! inherits.

use retry_kit::{Classify, IdempotencyKey, current_attempt, retryable, testing};
use std::collections::HashSet;
use std::time::Duration;

#[derive(Debug, PartialEq, Classify)]
#[classify(transient)]
struct Again;

#[retryable(attempts = 4, base = "0ms")]
fn sync_body(seen: &mut Vec<(u32, IdempotencyKey)>) -> Result<(), Again> {
    let a = current_attempt().expect("inside an attempt");
    seen.push((a.number(), a.idempotency_key()));
    if a.number() < 4 { Err(Again) } else { Ok(()) }
}

#[test]
fn sync_attempts_are_numbered_from_one_and_share_one_key_per_call() {
    assert!(current_attempt().is_none());
    let mut first = Vec::new();
    sync_body(&mut first).unwrap();
    assert_eq!(first.iter().map(|s| s.0).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert!(first.iter().all(|s| s.1 == first[0].1));
    let mut second = Vec::new();
    sync_body(&mut second).unwrap();
    assert_ne!(first[0].1, second[0].1, "a new call gets a new key");
    assert!(
        current_attempt().is_none(),
        "the context is gone after the call"
    );
}

#[test]
fn keys_display_as_32_hex_digits_and_do_not_repeat() {
    let mut keys = HashSet::new();
    for _ in 0..1000 {
        let mut seen = Vec::new();
        sync_body(&mut seen).unwrap();
        let text = seen[0].1.to_string();
        assert_eq!(text.len(), 32);
        assert!(
            text.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_eq!(
            u128::from_str_radix(&text, 16).unwrap(),
            seen[0].1.as_u128()
        );
        assert!(keys.insert(seen[0].1));
    }
}

#[test]
fn seeding_the_jitter_does_not_make_keys_predictable() {
    testing::seed_jitter(1);
    let mut a = Vec::new();
    sync_body(&mut a).unwrap();
    testing::seed_jitter(1);
    let mut b = Vec::new();
    sync_body(&mut b).unwrap();
    assert_ne!(a[0].1, b[0].1);
}

#[retryable(attempts = 3, base = "10ms")]
async fn async_body(
    tag: u32,
    seen: &std::sync::Mutex<Vec<(u32, u32, IdempotencyKey)>>,
) -> Result<u32, Again> {
    let before = current_attempt().expect("inside an attempt");
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(u64::from(tag))).await;
    let after = current_attempt().expect("still inside after awaits");
    assert_eq!(before, after);
    seen.lock()
        .unwrap()
        .push((tag, after.number(), after.idempotency_key()));
    if after.number() < 3 {
        Err(Again)
    } else {
        Ok(tag)
    }
}

#[tokio::test(start_paused = true)]
async fn async_attempts_keep_their_context_across_awaits_and_interleaving() {
    let seen = std::sync::Mutex::new(Vec::new());
    let (a, b) = tokio::join!(async_body(1, &seen), async_body(2, &seen));
    assert_eq!((a, b), (Ok(1), Ok(2)));
    let seen = seen.into_inner().unwrap();
    for tag in [1, 2] {
        let mine: Vec<_> = seen.iter().filter(|s| s.0 == tag).collect();
        assert_eq!(mine.iter().map(|s| s.1).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(mine.iter().all(|s| s.2 == mine[0].2));
    }
    let key = |tag| seen.iter().find(|s| s.0 == tag).unwrap().2;
    assert_ne!(key(1), key(2));
    assert!(current_attempt().is_none());
}

#[retryable(attempts = 2, base = "0ms")]
fn inner(log: &mut Vec<String>) -> Result<(), Again> {
    let a = current_attempt().unwrap();
    log.push(format!("inner {}", a.number()));
    if a.number() == 1 { Err(Again) } else { Ok(()) }
}

#[retryable(attempts = 2, base = "0ms")]
fn outer(log: &mut Vec<String>) -> Result<(), Again> {
    let before = current_attempt().unwrap();
    inner(log)?;
    let after = current_attempt().unwrap();
    assert_eq!(
        before, after,
        "the outer context is restored after the inner call"
    );
    log.push(format!("outer {}", after.number()));
    if after.number() == 1 {
        Err(Again)
    } else {
        Ok(())
    }
}

#[test]
fn a_nested_call_sees_its_own_attempts_and_restores_the_outer_ones() {
    let mut log = Vec::new();
    outer(&mut log).unwrap();
    assert_eq!(
        log,
        [
            "inner 1", "inner 2", "outer 1", "inner 1", "inner 2", "outer 2"
        ]
    );
}

#[retryable(attempts = 3, base = "0ms")]
fn panics() -> Result<(), Again> {
    assert!(current_attempt().is_some());
    panic!("boom");
}

#[test]
fn a_panicking_body_is_not_retried_and_leaves_no_context_behind() {
    let result = std::panic::catch_unwind(panics);
    assert!(result.is_err());
    assert!(current_attempt().is_none());
    let mut seen = Vec::new();
    sync_body(&mut seen).unwrap();
    assert_eq!(seen[0].0, 1);
}

#[retryable(attempts = 10, backoff = "fixed", base = "3s", jitter = "none")]
fn inner_without_deadline(calls: &mut u32) -> Result<(), Again> {
    *calls += 1;
    Err(Again)
}

#[retryable(attempts = 2, base = "0ms", deadline = "7s")]
fn outer_with_deadline(calls: &mut u32) -> Result<(), Again> {
    inner_without_deadline(calls)
}

#[test]
fn an_inner_call_never_sleeps_past_the_outer_deadline() {
    let mut calls = 0;
    let (result, slept) = testing::record_sleeps(|| outer_with_deadline(&mut calls));
    assert_eq!(result, Err(Again));
    // Inner sleeps 3 s twice (to 6 s); a third would end at 9 s, past the outer 7 s, so the
    // inner call stops; the outer's zero-length retry fits, and its inner call stops at once.
    let total: Duration = slept.iter().sum();
    assert!(total <= Duration::from_secs(7), "{slept:?}");
    assert_eq!(
        slept
            .iter()
            .filter(|d| **d == Duration::from_secs(3))
            .count(),
        2
    );
    assert_eq!(calls, 4);
}

#[retryable(attempts = 5, backoff = "fixed", base = "10s", jitter = "none")]
async fn slow_attempts(hang_first: bool) -> Result<u32, Again> {
    let a = current_attempt().unwrap();
    if hang_first && a.number() == 1 {
        std::future::pending::<()>().await;
    }
    if a.number() < 2 {
        Err(Again)
    } else {
        Ok(a.number())
    }
}

#[tokio::test(start_paused = true)]
async fn dropping_a_call_mid_attempt_or_mid_sleep_leaves_no_context_behind() {
    // Mid-attempt: the first attempt never finishes.
    let cancelled = tokio::time::timeout(Duration::from_secs(1), slow_attempts(true)).await;
    assert!(cancelled.is_err());
    assert!(current_attempt().is_none());
    // Mid-sleep: the first attempt fails and the 10 s sleep is cut short.
    let cancelled = tokio::time::timeout(Duration::from_secs(5), slow_attempts(false)).await;
    assert!(cancelled.is_err());
    assert!(current_attempt().is_none());
    // A fresh call starts from attempt 1 again.
    assert_eq!(slow_attempts(false).await, Ok(2));
}

static PANICKING_ATTEMPTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

#[retryable(attempts = 3, base = "0ms")]
async fn panics_async() -> Result<(), Again> {
    PANICKING_ATTEMPTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    tokio::task::yield_now().await;
    assert!(current_attempt().is_some());
    panic!("boom");
}

#[tokio::test(start_paused = true)]
async fn an_async_panic_propagates_unretried_and_leaves_no_context_behind() {
    let joined = tokio::spawn(panics_async()).await;
    assert!(joined.unwrap_err().is_panic());
    assert_eq!(
        PANICKING_ATTEMPTS.load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    assert!(current_attempt().is_none());
    assert_eq!(slow_attempts(false).await, Ok(2));
}

/// Keys made from a value are a fixed function of the value and the operation: the same in
/// every process, build, platform and version of the crate (a task re-run after a crash sends
/// the key its first run sent). These values are pinned: a change of hash, of the bytes fed to
/// it, or of how nested keys derive from it fails here.
#[test]
fn keys_made_from_a_value_are_pinned_across_builds_and_platforms() {
    use retry_kit::run::operation_id;
    let export = operation_id("billing::export");
    let cases: [(IdempotencyKey, &str); 4] = [
        (
            IdempotencyKey::of(&("2026-12-03", "billing-export"), export),
            "ba055c3e8891feab3fa9b5eb000c53a6",
        ),
        (
            IdempotencyKey::of(&42u64, export),
            "05f3535ef5e02abee103b57ef33c4daf",
        ),
        (
            IdempotencyKey::of(&42usize, export),
            "05f3535ef5e02abee103b57ef33c4daf",
        ),
        (
            IdempotencyKey::of("", 0),
            "00d1ab473a10c210145a74c27606c993",
        ),
    ];
    for (key, pinned) in cases {
        assert_eq!(key.to_string(), pinned);
    }
}
