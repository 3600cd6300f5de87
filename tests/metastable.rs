//! The metastable-failure simulation of `examples/metastable`, in a short version: after a
//! capacity halving, unprotected retries keep the server overloaded for the rest of the run,
//! while a retry budget lets it recover. Runs on tokio's paused clock (virtual time).

#[path = "../examples/metastable/sim.rs"]
mod sim;

use sim::{Config, Protection};
use std::time::Duration;

/// The example's system, with a shorter run: 10 s of steady load, the 10 s trigger, 30 s after.
fn short() -> Config {
    Config {
        capacity: 100,
        queue: 200,
        load: 75.0,
        timeout: Duration::from_secs(1),
        attempts: 4,
        trigger_start: 10,
        trigger_len: 10,
        run: 50,
        seed: 0x5eed_2021,
    }
}

#[test]
fn unprotected_retries_stay_degraded_and_a_budget_recovers() {
    let config = short();
    let rows: Vec<sim::Row> = Protection::ALL
        .iter()
        .map(|p| sim::run(&config, *p))
        .collect();
    let steady = sim::steady(&config);
    let row = |p: Protection| rows.iter().find(|r| r.protection == p).unwrap();
    let (end, run) = (config.trigger_end(), config.run);

    for r in &rows {
        assert!(
            r.level_before(&config) > 65.0,
            "{}: the steady state serves the load",
            r.protection.label()
        );
    }

    let retries = row(Protection::Retries);
    assert_eq!(retries.recovery(&config, &steady), None, "{retries:?}");
    assert!(retries.goodput_between(run - 10, run) < 5.0, "{retries:?}");
    assert!(retries.amplification(end, run) > 3.5, "{retries:?}");

    let budget = row(Protection::Budget);
    let recovered = budget.recovery(&config, &steady);
    assert!(
        recovered.is_some_and(|s| s <= 15),
        "{recovered:?}: {budget:?}"
    );
    assert!(budget.amplification(end, run) < 1.1, "{budget:?}");

    let none = row(Protection::NoRetries);
    assert!(none.recovery(&config, &steady).is_some(), "{none:?}");
}
