//! The shapes `results/fleet/` reports, kept: Brooker's experiment (1 000 calls per second over
//! 100 or 1 000 clients, a service failing a share f of attempts) run with the crate's own types
//! by `examples/fleet/sim.rs`, at f = 0.5, and the same shapes in the committed
//! `results/fleet/fleet.csv`. Virtual time, seeded: the same numbers on every run.
#![deny(warnings, unused_qualifications)]

#[path = "../examples/fleet/sim.rs"]
#[allow(dead_code)]
mod sim;

use sim::{Backing, Config, Strategy};

fn load(clients: usize, failure_rate: f64, strategy: Strategy) -> f64 {
    let config = Config {
        clients,
        failure_rate,
        strategy,
        seconds: 10.0,
        seed: 2022,
    };
    sim::run(&config, &Backing::Memory).load()
}

/// The shapes, for a `load(clients, f, strategy)` from anywhere.
fn assert_shapes(source: &str, load: impl Fn(usize, f64, Strategy) -> f64) {
    for clients in [100, 1000] {
        let retries = load(clients, 0.5, Strategy::Retries3);
        assert!(
            (retries / 1.875 - 1.0).abs() <= 0.05,
            "{source}: three retries at f = 0.5, {clients} clients: {retries} (1 + f + f² + f³ = 1.875)"
        );
        let none = load(clients, 0.5, Strategy::None);
        assert_eq!(none, 1.0, "{source}: no retries, {clients} clients");
        let fleet = load(clients, 0.5, Strategy::FleetBudget);
        assert!(
            fleet <= 1.15,
            "{source}: the fleet budget at {clients} clients: {fleet}"
        );
    }
    // One token bucket per client holds the load down when each client sees enough calls ...
    let budget_100 = load(100, 0.5, Strategy::Budget);
    assert!(
        budget_100 <= 1.15,
        "{source}: per-client budgets, 100 clients: {budget_100}"
    );
    // ... and lets nearly every retry through when the same load is spread over 1 000.
    let budget_1000 = load(1000, 0.5, Strategy::Budget);
    assert!(
        budget_1000 >= 1.6,
        "{source}: per-client budgets, 1 000 clients: {budget_1000}"
    );
}

#[test]
fn per_client_budgets_fail_at_a_thousand_clients_and_the_fleet_budget_does_not() {
    assert_shapes("simulation", load);
}

#[test]
fn the_committed_results_show_the_same_shapes() {
    let csv = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/results/fleet/fleet.csv"))
        .expect("results/fleet/fleet.csv, written by `cargo run --release --example fleet --features redis`");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("clients,failure_rate,strategy,load,success")
    );
    let rows: Vec<(usize, f64, String, f64)> = lines
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].to_owned(),
                f[3].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows.len(),
        2 * 6 * 7,
        "every client count, failure rate and strategy"
    );
    assert_shapes("results/fleet/fleet.csv", |clients, f, strategy| {
        rows.iter()
            .find(|r| r.0 == clients && r.1 == f && r.2 == strategy.label())
            .map(|r| r.3)
            .unwrap_or_else(|| panic!("no row {clients},{f},{}", strategy.label()))
    });
}
