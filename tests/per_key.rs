//! `PerKey`: one breaker or budget per key — a failing host opens only its own breaker, drains
//! only its own budget — for at most `N` keys, the least recently used replaced.
#![deny(warnings, unused_qualifications)]

use retry_kit::{
    CircuitBreaker, CircuitOpen, CircuitState, Classify, PerKey, Retry, RetryBudget, RetryPolicy,
    retryable,
};
use std::time::Duration;

#[derive(Debug, PartialEq, Classify)]
enum HostError {
    #[classify(transient)]
    Refused,
    #[classify(transient)]
    Open,
}

impl From<CircuitOpen> for HostError {
    fn from(_: CircuitOpen) -> Self {
        HostError::Open
    }
}

static HOSTS: PerKey<CircuitBreaker> = PerKey::new(CircuitBreaker::new(3, Duration::from_secs(60)));

#[retryable(attempts = 3, base = "0ms", circuit = HOSTS, key = host)]
fn fetch(host: &str, up: bool, calls: &mut u32) -> Result<&'static str, HostError> {
    *calls += 1;
    if up {
        Ok("ok")
    } else {
        Err(HostError::Refused)
    }
}

#[test]
fn a_failing_host_opens_only_its_own_breaker() {
    let mut calls = 0;
    assert_eq!(
        fetch("down.example", false, &mut calls),
        Err(HostError::Refused)
    );
    assert_eq!(calls, 3);
    assert_eq!(HOSTS.get("down.example").state(), CircuitState::Open);
    // Another host is untouched, through the attribute and by hand.
    assert_eq!(fetch("up.example", true, &mut calls), Ok("ok"));
    assert_eq!(HOSTS.get("up.example").state(), CircuitState::Closed);
    let policy = RetryPolicy::fixed(Duration::ZERO).attempts(2);
    let breaker = HOSTS.get("other.example");
    let by_hand: Result<u8, HostError> = Retry::new(&policy).circuit(&breaker).call(|| Ok(1));
    assert_eq!(by_hand, Ok(1));
    // The failing host's breaker refuses at once: no attempt is made.
    let before = calls;
    assert_eq!(
        fetch("down.example", true, &mut calls),
        Err(HostError::Open)
    );
    assert_eq!(calls, before);
}

static TWO: PerKey<CircuitBreaker, 2> =
    PerKey::new(CircuitBreaker::new(1, Duration::from_secs(60)));

#[test]
fn a_new_key_beyond_the_bound_replaces_the_least_recently_used() {
    TWO.get("a").try_acquire().unwrap().failed(); // a: open
    TWO.get("b").try_acquire().unwrap().failed(); // b: open
    assert_eq!(TWO.get("a").state(), CircuitState::Open); // a used after b
    let c = TWO.get("c"); // replaces b, the least recently used
    assert_eq!(c.state(), CircuitState::Closed);
    assert_eq!(TWO.len(), 2);
    assert_eq!(
        TWO.get("a").state(),
        CircuitState::Open,
        "a kept its breaker"
    );
    // b comes back with a fresh breaker (replacing c, now the least recently used).
    assert_eq!(TWO.get("b").state(), CircuitState::Closed);
    assert_eq!(TWO.len(), 2);
}

static TENANTS: PerKey<RetryBudget, 8> = PerKey::new(RetryBudget::new(4, 0.5));

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

#[retryable(attempts = 10, base = "0ms", budget = TENANTS, key = tenant)]
fn charge(tenant: u32, calls: &mut u32) -> Result<(), Busy> {
    *calls += 1;
    Err(Busy)
}

#[test]
fn each_key_has_its_own_budget() {
    let mut noisy = 0;
    for _ in 0..5 {
        let _ = charge(1, &mut noisy);
    }
    // Four tokens: retries only while more than two are left, so 1 retry, then none.
    assert_eq!(noisy, 2 + 4);
    assert!(!TENANTS.get(&1u32).allows_retry());
    // Tenant 2 still has its whole budget.
    let mut quiet = 0;
    let _ = charge(2, &mut quiet);
    assert_eq!(quiet, 2);
    assert_eq!(TENANTS.get(&2u32).tokens(), 2.0);
}

static CONTENDED: PerKey<CircuitBreaker, 4> =
    PerKey::new(CircuitBreaker::new(1_000_000, Duration::from_secs(1)));

#[test]
fn eight_threads_over_sixteen_keys_never_hold_more_than_the_bound() {
    std::thread::scope(|s| {
        for t in 0..8u32 {
            s.spawn(move || {
                for i in 0..2_000u32 {
                    let breaker = CONTENDED.get(&((t * 7 + i) % 16));
                    breaker.try_acquire().unwrap().succeeded();
                }
            });
        }
    });
    assert_eq!(CONTENDED.len(), 4);
}

#[test]
fn len_is_empty_and_debug_count_the_keys_in_use() {
    let tenants: PerKey<RetryBudget, 2> = PerKey::new(RetryBudget::new(4, 0.1));
    assert!(tenants.is_empty());
    assert_eq!(
        format!("{tenants:?}"),
        "PerKey { keys: 0, capacity: 2, .. }"
    );
    for tenant in ["a", "b", "c"] {
        let _ = tenants.get(tenant);
    }
    assert!(!tenants.is_empty());
    assert_eq!(tenants.len(), 2);
    assert_eq!(
        format!("{tenants:?}"),
        "PerKey { keys: 2, capacity: 2, .. }"
    );
}

static EIGHT_HOSTS: PerKey<CircuitBreaker, 8> =
    PerKey::new(CircuitBreaker::new(2, Duration::from_secs(3600)));

#[retryable(attempts = 1, circuit = EIGHT_HOSTS, key = host)]
fn fetch_one_of_eight(host: &str, up: bool, calls: &mut u32) -> Result<(), HostError> {
    *calls += 1;
    if up { Ok(()) } else { Err(HostError::Refused) }
}

#[test]
fn an_open_breaker_keeps_its_place_while_healthy_new_hosts_come_and_go() {
    // One failing host among 8 new healthy hosts per round, in a table of 8 places: the
    // healthy hosts have nothing to remember and give their places away first, so the failing
    // host's breaker stays open (2 calls open it) instead of being forgotten every round.
    let mut down_calls = 0;
    for round in 0..100 {
        let _ = fetch_one_of_eight("down.example", false, &mut down_calls);
        for i in 0..8 {
            let mut calls = 0;
            let host = format!("healthy-{round}-{i}.example");
            fetch_one_of_eight(&host, true, &mut calls).unwrap();
        }
    }
    assert_eq!(down_calls, 2);
    assert_eq!(EIGHT_HOSTS.get("down.example").state(), CircuitState::Open);
}

static PER_HOST: PerKey<CircuitBreaker> =
    PerKey::new(CircuitBreaker::new(2, Duration::from_secs(60)));
static ONE_BUDGET: RetryBudget = RetryBudget::new(100, 0.1);

#[retryable(attempts = 2, base = "0ms", circuit = PER_HOST, budget = ONE_BUDGET, key = host)]
fn fetch_mixed(host: &str, up: bool, calls: &mut u32) -> Result<(), HostError> {
    *calls += 1;
    if up { Ok(()) } else { Err(HostError::Refused) }
}

#[test]
fn a_per_host_breaker_beside_one_global_budget() {
    // Refused before the fix: with `key`, both had to be a `PerKey`.
    let mut calls = 0;
    assert!(fetch_mixed("down.example", false, &mut calls).is_err());
    assert_eq!(calls, 2);
    assert_eq!(PER_HOST.get("down.example").state(), CircuitState::Open);
    assert_eq!(PER_HOST.get("up.example").state(), CircuitState::Closed);
    fetch_mixed("up.example", true, &mut calls).unwrap();
    // Both hosts' failures and successes went to the one budget: 2 failures, 1 success.
    assert!(
        (ONE_BUDGET.tokens() - 98.1).abs() < 1e-9,
        "{}",
        ONE_BUDGET.tokens()
    );
}

#[test]
fn keys_that_took_the_places_of_others_each_find_their_own_entry() {
    // Four keys kept in use while forty rounds of four others replace each other around them,
    // so that keys sit wherever a forgotten key was, and the table's index of places is
    // rewritten around the kept keys again and again.
    let table: PerKey<RetryBudget, 8> = PerKey::new(RetryBudget::new(10, 0.1));
    let kept: Vec<String> = (0..4).map(|i| format!("kept-{i}")).collect();
    let entry = |key: &str| &*table.get(key) as *const RetryBudget;
    // A charged budget has something to remember, so the kept keys are never the ones
    // replaced while the passing ones (full budgets) can be.
    let kept_entries: Vec<_> = kept
        .iter()
        .map(|key| {
            table.get(key.as_str()).record_failure();
            entry(key)
        })
        .collect();
    for round in 0..40 {
        let mut entries = Vec::new();
        for i in 0..4 {
            let key = format!("round-{round}-{i}");
            let made = entry(&key);
            assert_eq!(entry(&key), made, "{key} finds the entry it was given");
            entries.push(made);
        }
        for (key, &first) in kept.iter().zip(&kept_entries) {
            assert_eq!(entry(key), first, "{key} kept its entry in round {round}");
        }
        entries.extend(&kept_entries);
        entries.sort();
        entries.dedup();
        assert_eq!(
            entries.len(),
            8,
            "eight keys, eight entries, in round {round}"
        );
        assert_eq!(table.len(), 8);
    }
}

#[test]
fn a_hashed_key_finds_the_entry_get_finds_and_follows_it_to_a_new_place() {
    use retry_kit::per_key::HashedKey;
    let table: PerKey<RetryBudget, 2> = PerKey::new(RetryBudget::new(10, 0.1));
    let a = HashedKey::new("a.example");
    let first = &*table.get_hashed(&a) as *const RetryBudget;
    assert_eq!(&*table.get("a.example") as *const RetryBudget, first);
    assert_eq!(&*table.get_hashed(&a) as *const RetryBudget, first);
    // a.example loses its place to c.example (b.example, charged, is kept), and c.example is
    // charged in it: a hashed key that leased what is at the place it remembers would now
    // count into c.example's entry.
    table.get("b.example").record_failure();
    let c = table.get("c.example");
    assert_eq!(
        &*c as *const RetryBudget, first,
        "c.example took a.example's place"
    );
    c.record_failure();
    let again = table.get_hashed(&a);
    assert_eq!(again.tokens(), 10.0, "a.example's own entry, made afresh");
    assert_eq!(
        table.get("c.example").tokens(),
        9.0,
        "c.example's entry is its own"
    );
    // It remembered the new place: `get` finds the same entry.
    assert_eq!(
        &*table.get("a.example") as *const RetryBudget,
        &*again as *const RetryBudget
    );
}
