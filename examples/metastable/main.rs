//! A metastable failure, reproduced on tokio's paused clock and driven by the crate's own retry
//! code (`Retry` with `attempt_timeout`, and its `RetryBudget`, `CircuitBreaker` and
//! `AdaptivePolicy`), then ended by its protection.
//!
//! ```text
//! cargo run --release --example metastable               # writes results/metastable/
//! cargo run --release --example metastable -- /tmp/out   # elsewhere
//! ```
//!
//! A server completes 100 requests per second from a FIFO queue of 200; clients start 75
//! requests per second (Poisson), each one call with a 1 s `attempt_timeout`. A request that
//! waited past its client's timeout is still served: the work is wasted. A full queue rejects
//! at once (a transient error). At t = 20 s the capacity halves for 10 s, then returns; the run
//! lasts 120 s. Each row is the same run with another retry setting. The example writes
//! `metastable.csv`, `metastable.svg` and `README.md` into `results/metastable/` (or the
//! directory given) and prints the table; every figure in them comes from this run.

mod chart;
mod sim;

use sim::{Config, Protection, Row};
use std::fmt::Write as _;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// The run of the table: the load at 75 % of capacity, four attempts per call.
fn config() -> Config {
    Config {
        capacity: 100,
        queue: 200,
        load: 75.0,
        timeout: Duration::from_secs(1),
        attempts: 4,
        trigger_start: 20,
        trigger_len: 10,
        run: 120,
        seed: 0x5eed_2021,
    }
}

/// The row's column name in the CSV.
fn column(p: Protection) -> &'static str {
    match p {
        Protection::NoRetries => "no_retries",
        Protection::Retries => "retries",
        Protection::Budget => "budget",
        Protection::Breaker => "breaker",
        Protection::Adaptive => "adaptive",
    }
}

fn csv(rows: &[Row], config: &Config) -> String {
    let mut out = String::from("t");
    for r in rows {
        let _ = write!(out, ",{}", column(r.protection));
    }
    out.push('\n');
    for t in 0..config.run as usize {
        let _ = write!(out, "{t}");
        for r in rows {
            let _ = write!(out, ",{}", r.goodput[t]);
        }
        out.push('\n');
    }
    out
}

fn recovery(row: &Row, config: &Config, steady: &Row) -> String {
    match row.recovery(config, steady) {
        Some(s) => format!("{s} s"),
        None => "never".into(),
    }
}

fn table(rows: &[Row], config: &Config, steady: &Row) -> String {
    let (start, end, run) = (config.trigger_start, config.trigger_end(), config.run);
    let mut out = String::from(
        "| row | goodput before | during | last 10 s | attempts per call during | after | recovery |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "| {} | {:.1}/s | {:.1}/s | {:.1}/s | {:.2} | {:.2} | {} |",
            r.protection.label(),
            r.level_before(config),
            r.goodput_between(start, end),
            r.goodput_between(run - 10, run),
            r.amplification(start, end),
            r.amplification(end, run),
            recovery(r, config, steady),
        );
    }
    out
}

fn find(rows: &[Row], p: Protection) -> &Row {
    rows.iter()
        .find(|r| r.protection == p)
        .expect("every row is run")
}

/// How a row ended, in words, from its numbers.
fn verdict(row: &Row, config: &Config, steady: &Row) -> String {
    match row.recovery(config, steady) {
        Some(0) => format!(
            "is back as soon as the trigger ends, at {:.2} attempts per call after it",
            row.amplification(config.trigger_end(), config.run)
        ),
        Some(s) => format!(
            "recovers {s} s after the trigger ends, at {:.2} attempts per call after it",
            row.amplification(config.trigger_end(), config.run)
        ),
        None => format!(
            "never recovers: {:.1} calls/s succeed over the last 10 s against {:.1}/s before, \
             at {:.2} attempts per call",
            row.goodput_between(config.run - 10, config.run),
            row.level_before(config),
            row.amplification(config.trigger_end(), config.run)
        ),
    }
}

fn readme(rows: &[Row], config: &Config, steady: &Row) -> String {
    let none = find(rows, Protection::NoRetries);
    let retries = find(rows, Protection::Retries);
    let budget = find(rows, Protection::Budget);
    let breaker = find(rows, Protection::Breaker);
    let adaptive = find(rows, Protection::Adaptive);
    let (budget_tokens, budget_ratio) = sim::BUDGET;
    let after = config.trigger_end() as usize;
    let (breaker_failures, breaker_open, breaker_probes) = sim::BREAKER;
    format!(
        "# A metastable failure, and the protection that ends it\n\n\
         Output of [`examples/metastable`](../../examples/metastable/main.rs) \
         (`cargo run --release --example metastable`), written by the example itself: the \
         crate's own retry loop (`Retry` with `attempt_timeout`) on tokio's paused clock, with \
         seeded arrivals and jitter, so every run writes the same files.\n\n\
         **The system.** A server completes {capacity} requests per second, one at a time, from \
         a FIFO queue of {queue}; a full queue rejects at once (a transient error). Clients \
         start {load} requests per second (Poisson arrivals, {util:.0} % of capacity), each one \
         call with a {timeout} s `attempt_timeout`. A request that waited past its client's \
         timeout is still served, and its answer is thrown away. **The trigger:** from \
         t = {start} s to t = {end} s the capacity halves, then the same load continues until \
         t = {run} s.\n\n\
         **The rows.** The same run, with: one attempt per call; {attempts} attempts with \
         exponential backoff from 100 ms and full jitter (timeouts retried: the requests are \
         idempotent), unprotected; the same with a `RetryBudget::new({budget_tokens}, \
         {budget_ratio})`; with a `CircuitBreaker::new({breaker_failures}, {open:?})` (closing \
         after {breaker_probes} probe successes, {breaker_probes} at once); and with an \
         `AdaptivePolicy` whose rule makes one attempt while more than {rate:.0} % of the \
         last 100 attempts (none older than 10 s) failed.\n\n\
         **The measures.** Goodput is calls that succeeded (an attempt answered within its \
         timeout) per second of virtual time. Attempts per call is attempts the server received \
         (served or rejected) over calls started, during the trigger and after it. Recovery is \
         the time from the end of the trigger until goodput is back within 5 % of its level \
         before it and stays there for {window} s: the level is the goodput of the same \
         arrivals without the trigger (in the steady state every call succeeds at once, so \
         this takes the noise of the Poisson arrivals out of the comparison), both taken over \
         2-second windows.\n\n\
         {table}\n\
         ![goodput per second, one line per row, the trigger shaded](metastable.svg)\n\n\
         Data: [`metastable.csv`](metastable.csv) (goodput per second, one column per row).\n\n\
         ## Against the papers\n\n\
         Bronson et al. (\"Metastable Failures in Distributed Systems\", HotOS 2021) describe a \
         system that a trigger pushes out of its stable state into a bad one where it stays \
         after the trigger is gone, held there by a *sustaining effect*; their canonical one is \
         retries, which multiply the work while the work done for callers who have given up is \
         wasted. Huang et al. (\"Metastable Failures in the Wild\", OSDI 2022) find the same \
         pattern in production incidents: triggers that are load spikes or capacity losses, \
         retries as the most common sustaining effect, and recovery by removing the sustaining \
         effect (shedding load, cutting retries) rather than the trigger, which has usually \
         already passed.\n\n\
         The run shows both states. Without retries the system is not metastable: it {none}. \
         With unprotected retries the 10-second trigger is enough: the row {retries}. The \
         queue stays full, every admitted request waits longer than its timeout, so the server \
         works at full speed on answers nobody reads, while each call sends up to {attempts} \
         attempts: the load the server sees stays above its capacity although the clients' own \
         load is back at {util:.0} % of it. The trigger ended at t = {end} s; the sustaining \
         effect did not.\n\n\
         Each protection removes the sustaining effect. With the budget \
         the row {budget}: the budget let {budget_during:.2} attempts per call through during \
         the trigger (against {retries_during:.2} unprotected), so the load stayed the clients' \
         own and the queue drained once capacity returned. The adaptive policy does the same by \
         another route, {adaptive_during:.2} attempts per call during the trigger; the row \
         {adaptive}. After the trigger both serve {same} the row without retries: in this model \
         no failure is one a second attempt could fix (every error is overload), so the best a \
         protection can do is to retry no more than once, and what it buys is the retries it \
         keeps in the steady state, where real errors are transient. The breaker is the only \
         row that serves more during the trigger than without retries ({breaker_during:.1} \
         calls/s against {none_during:.1}): while it is open, calls fail at once without \
         reaching the server ({breaker_amp:.2} attempts per call), which drains the queue \
         instead of filling it, so when capacity returns there is no backlog to work off; the \
         row {breaker}. The price is the calls it refuses, which are failures for their \
         callers.\n",
        capacity = config.capacity,
        queue = config.queue,
        load = config.load,
        util = config.load / f64::from(config.capacity) * 100.0,
        timeout = config.timeout.as_secs_f64(),
        start = config.trigger_start,
        end = config.trigger_end(),
        run = config.run,
        attempts = config.attempts,
        open = breaker_open,
        rate = sim::ADAPTIVE_FAILURE_RATE * 100.0,
        window = sim::RECOVERY_WINDOW,
        same = if [budget, adaptive]
            .iter()
            .all(|r| r.goodput[after..] == none.goodput[after..])
        {
            "exactly what"
        } else {
            "about what"
        },
        budget_during = budget.amplification(config.trigger_start, config.trigger_end()),
        retries_during = retries.amplification(config.trigger_start, config.trigger_end()),
        adaptive_during = adaptive.amplification(config.trigger_start, config.trigger_end()),
        breaker_during = breaker.goodput_between(config.trigger_start, config.trigger_end()),
        none_during = none.goodput_between(config.trigger_start, config.trigger_end()),
        breaker_amp = breaker.amplification(config.trigger_start, config.trigger_end()),
        table = table(rows, config, steady),
        none = verdict(none, config, steady),
        retries = verdict(retries, config, steady),
        budget = verdict(budget, config, steady),
        breaker = verdict(breaker, config, steady),
        adaptive = verdict(adaptive, config, steady),
    )
}

fn main() -> io::Result<()> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "results/metastable".into()),
    );
    let config = config();
    let rows: Vec<Row> = Protection::ALL
        .iter()
        .map(|p| sim::run(&config, *p))
        .collect();
    let steady = sim::steady(&config);

    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("metastable.csv"), csv(&rows, &config))?;
    std::fs::write(out.join("metastable.svg"), chart::svg(&rows, &config))?;
    std::fs::write(out.join("README.md"), readme(&rows, &config, &steady))?;
    print!("{}", table(&rows, &config, &steady));
    println!("\nwrote {}", out.display());
    Ok(())
}
