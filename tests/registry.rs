//! `registry::snapshot()`: every named breaker and budget that has been used, with its state,
//! and (feature `serde`) the JSON a health endpoint serves. Every test names its own breakers:
//! the registry is the process's, shared by the tests running beside each other.
#![deny(warnings, unused_qualifications)]

use retry_kit::registry::{self, BreakerStatus, BudgetStatus};
use retry_kit::{
    BreakerSettings, BudgetSettings, CircuitBreaker, CircuitOpen, CircuitState, Classify,
    RetryBudget, retryable, testing,
};
use std::time::Duration;

const S: fn(u64) -> Duration = Duration::from_secs;

fn breaker(name: &str) -> Option<BreakerStatus> {
    registry::snapshot()
        .breakers
        .into_iter()
        .find(|b| b.name == Some(name))
}

fn budget(name: &str) -> Option<BudgetStatus> {
    registry::snapshot()
        .budgets
        .into_iter()
        .find(|b| b.name == Some(name))
}

#[derive(Debug, Classify)]
enum Down {
    #[classify(transient)]
    Unavailable,
    #[classify(delegate)]
    Open(CircuitOpen),
}

impl From<CircuitOpen> for Down {
    fn from(open: CircuitOpen) -> Self {
        Down::Open(open)
    }
}

#[test]
fn a_named_breaker_is_listed_once_used_with_its_state() {
    static INVENTORY: CircuitBreaker =
        CircuitBreaker::new(2, Duration::from_secs(30)).name("registry-inventory");

    #[retryable(attempts = 1, circuit = INVENTORY)]
    fn fetch() -> Result<(), Down> {
        Err(Down::Unavailable)
    }

    assert_eq!(breaker("registry-inventory"), None, "not used yet");
    testing::record_sleeps(|| {
        let _ = fetch();
        let listed = breaker("registry-inventory").expect("listed after its first call");
        assert_eq!(listed.state, CircuitState::Closed);
        assert_eq!(listed.settings, BreakerSettings::new(2, S(30)));
        assert_eq!(listed.key, None);

        let _ = fetch();
        let listed = breaker("registry-inventory").unwrap();
        assert_eq!(listed.state, CircuitState::Open);
        // Virtual time stands still: the whole cool-down is left.
        assert_eq!(listed.retry_after, Some(S(30)));
        assert_eq!(listed, INVENTORY.status());
    });
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_open_breaker_past_its_cool_down_is_listed_as_the_next_call_finds_it() {
    static LEDGER: CircuitBreaker =
        CircuitBreaker::new(1, Duration::from_secs(10)).name("registry-ledger");
    LEDGER.try_acquire().unwrap().failed();
    tokio::time::advance(S(4)).await;
    assert_eq!(breaker("registry-ledger").unwrap().retry_after, Some(S(6)));
    tokio::time::advance(S(6)).await;
    let listed = breaker("registry-ledger").unwrap();
    assert_eq!(
        (listed.state, listed.retry_after),
        (CircuitState::HalfOpen, None)
    );
}

#[test]
fn unnamed_breakers_and_budgets_are_not_listed() {
    let before = registry::snapshot();
    let anonymous = CircuitBreaker::new(1, S(1));
    anonymous.try_acquire().unwrap().succeeded();
    RetryBudget::new(3, 1.0).record_failure();
    let after = registry::snapshot();
    assert!(after.breakers.iter().all(|b| b.name.is_some()));
    assert!(after.budgets.iter().all(|b| b.name.is_some()));
    assert!(after.breakers.len() >= before.breakers.len());
}

#[test]
fn a_named_breaker_that_goes_away_leaves_the_registry() {
    let local = CircuitBreaker::new(1, S(1)).name("registry-local");
    local.try_acquire().unwrap().succeeded();
    assert!(breaker("registry-local").is_some());
    // Moved, then dropped: the registry never pointed at it, only at its record.
    let moved = Box::new(local);
    assert!(breaker("registry-local").is_some());
    drop(moved);
    assert_eq!(breaker("registry-local"), None);
}

#[test]
fn a_named_budget_is_listed_with_its_tokens_and_settings() {
    static SEARCH: RetryBudget = RetryBudget::new(10, 0.5).name("registry-search");
    SEARCH.record_success();
    let listed = budget("registry-search").expect("listed after its first use");
    assert_eq!((listed.tokens, listed.allows_retry), (10.0, true));
    for _ in 0..6 {
        SEARCH.record_failure();
    }
    SEARCH.record_success();
    let listed = budget("registry-search").unwrap();
    assert_eq!((listed.tokens, listed.allows_retry), (4.5, false));

    SEARCH.set_settings(BudgetSettings::new(20, 1.0));
    let listed = budget("registry-search").unwrap();
    assert_eq!(listed.tokens, 9.0);
    assert_eq!(listed.settings, BudgetSettings::new(20, 1.0));
    assert_eq!(listed, SEARCH.status());
}

/// Two threads trip, probe and close one breaker and drain and refill one budget at once: when
/// they stop, what the registry lists is the breaker's and the budget's last state.
#[test]
fn the_listing_ends_equal_to_the_state_after_concurrent_changes() {
    static FLAKY: CircuitBreaker = CircuitBreaker::new(1, Duration::ZERO).name("registry-flaky");
    static SHARED: RetryBudget = RetryBudget::new(50, 0.7).name("registry-shared");
    std::thread::scope(|scope| {
        for t in 0..2 {
            scope.spawn(move || {
                for i in 0..5_000 {
                    if let Ok(permit) = FLAKY.try_acquire() {
                        if (i + t) % 3 == 0 {
                            permit.failed();
                        } else {
                            permit.succeeded();
                        }
                    }
                    if (i + t) % 2 == 0 {
                        SHARED.record_failure();
                    } else {
                        SHARED.record_success();
                    }
                }
            });
        }
    });
    assert_eq!(breaker("registry-flaky").unwrap(), FLAKY.status());
    assert_eq!(budget("registry-shared").unwrap(), SHARED.status());
}

#[cfg(feature = "serde")]
#[test]
fn a_snapshot_serializes_as_a_health_endpoint_shows_it() {
    static PAYMENTS: CircuitBreaker =
        CircuitBreaker::new(1, Duration::from_secs(30)).name("registry-json-payments");
    static QUOTES: RetryBudget = RetryBudget::new(100, 0.1).name("registry-json-quotes");
    testing::record_sleeps(|| {
        PAYMENTS.try_acquire().unwrap().failed();
        QUOTES.record_failure();
        let json = serde_json::to_value(registry::snapshot()).unwrap();
        let payments = json["breakers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == "registry-json-payments")
            .unwrap();
        assert_eq!(
            *payments,
            serde_json::json!({
                "name": "registry-json-payments",
                "state": "open",
                "retry_after": "30s",
                "settings": {"failure_threshold": 1, "open_for": "30s", "success_threshold": 1, "half_open_max": 1}
            })
        );
        let quotes = json["budgets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == "registry-json-quotes")
            .unwrap();
        assert_eq!(
            *quotes,
            serde_json::json!({
                "name": "registry-json-quotes",
                "tokens": 99.0,
                "allows_retry": true,
                "settings": {"max_tokens": 100, "token_ratio": 0.1}
            })
        );
    });
}

static HOSTS: retry_kit::PerKey<CircuitBreaker, 2> =
    retry_kit::PerKey::new(CircuitBreaker::new(1, Duration::from_secs(60)).name("registry-hosts"));

#[retryable(attempts = 1, circuit = HOSTS, key = host)]
fn fetch_host(host: &str, up: bool) -> Result<(), Down> {
    if up { Ok(()) } else { Err(Down::Unavailable) }
}

/// Every entry of HOSTS in the snapshot: (key, state), sorted by key.
fn hosts() -> Vec<(Option<String>, CircuitState)> {
    registry::snapshot()
        .breakers
        .into_iter()
        .filter(|b| b.name == Some("registry-hosts"))
        .map(|b| (b.key, b.state))
        .collect()
}

/// A `PerKey`'s entries are listed with their keys (the attribute's key, by `Display`), and an
/// entry given to another key is listed under the new key only: never the old key's state
/// under the new name, never both.
#[test]
fn per_key_entries_are_listed_under_the_key_they_serve_now() {
    testing::record_sleeps(|| {
        let _ = fetch_host("a.example", false);
        let _ = fetch_host("b.example", true);
    });
    assert_eq!(
        hosts(),
        [
            (Some("a.example".to_owned()), CircuitState::Open),
            (Some("b.example".to_owned()), CircuitState::Closed),
        ]
    );
    // A third host takes b.example's place (the idle one): a.example's open breaker stays.
    let _ = fetch_host("c.example", true);
    assert_eq!(
        hosts(),
        [
            (Some("a.example".to_owned()), CircuitState::Open),
            (Some("c.example".to_owned()), CircuitState::Closed),
        ]
    );
}

static LATE: retry_kit::PerKey<CircuitBreaker, 4> =
    retry_kit::PerKey::new(CircuitBreaker::new(1, Duration::from_secs(60)).name("registry-late"));

#[retryable(attempts = 1, circuit = LATE, key = host)]
fn fetch_late(host: &str) -> Result<(), Down> {
    let _ = host;
    Err(Down::Unavailable)
}

/// An entry first made by `PerKey::get` (an admin endpoint reading a host's state before any
/// traffic), which knows no text for its key, is labelled by the first call that does.
#[test]
fn an_entry_made_by_get_is_labelled_by_the_next_call_that_knows_its_key() {
    assert_eq!(LATE.get("d.example").state(), CircuitState::Closed);
    let _ = testing::record_sleeps(|| fetch_late("d.example"));
    let listed: Vec<_> = registry::snapshot()
        .breakers
        .into_iter()
        .filter(|b| b.name == Some("registry-late"))
        .map(|b| (b.key, b.state))
        .collect();
    assert_eq!(listed, [(Some("d.example".to_owned()), CircuitState::Open)]);
}

#[derive(Hash, Debug)]
struct Tenant(u32);

static TENANTS: retry_kit::PerKey<RetryBudget, 4> =
    retry_kit::PerKey::new(RetryBudget::new(10, 0.1).name("registry-tenants"));

#[retryable(attempts = 1, budget = TENANTS, key = tenant)]
fn charge(tenant: &Tenant) -> Result<(), Down> {
    let _ = tenant;
    Err(Down::Unavailable)
}

/// A key without `Display` is labelled by its `Debug` text.
#[test]
fn a_key_without_display_is_listed_by_its_debug_text() {
    let _ = charge(&Tenant(7));
    let listed: Vec<_> = registry::snapshot()
        .budgets
        .into_iter()
        .filter(|b| b.name == Some("registry-tenants"))
        .map(|b| (b.key, b.tokens))
        .collect();
    assert_eq!(listed, [(Some("Tenant(7)".to_owned()), 9.0)]);
}

static BY_GET: retry_kit::PerKey<RetryBudget, 4> =
    retry_kit::PerKey::new(RetryBudget::new(10, 0.1).name("registry-by-get"));

/// Regression: an entry reached only through `PerKey::get` (an admin endpoint, a hand-written
/// loop) was listed with no key. It is listed by the key's text: a string as written, any
/// other key by its `Debug` text.
#[test]
fn an_entry_reached_only_by_get_is_listed_with_its_key() {
    BY_GET.get("billing.internal:443").record_failure();
    BY_GET.get(&Tenant(9)).record_failure();
    BY_GET.get(&("eu", 3)).record_failure();
    let mut listed: Vec<_> = registry::snapshot()
        .budgets
        .into_iter()
        .filter(|b| b.name == Some("registry-by-get"))
        .map(|b| b.key)
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            Some("(\"eu\", 3)".to_owned()),
            Some("Tenant(9)".to_owned()),
            Some("billing.internal:443".to_owned()),
        ]
    );
}
