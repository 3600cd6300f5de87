//! The seeds' nightly export pipeline, on apalis with `DurableRetryLayer`:
//!
//! ```text
//! cargo run -p retry-kit-durable --example nightly_export
//! ```
//!
//! Five nightly intervals are queued on an embedded SQLite queue (a temporary file), and a
//! worker posts each interval's export to a receiver over HTTP (in this process, on loopback),
//! with the interval's identity as the idempotency key. The receiver misbehaves as the seeds
//! describe: one interval is flaky (two 503s, then fine), one has a schema error (422: retrying
//! cannot help), one is rate limited for two hours (longer than the policy allows), one is
//! stored and then its answer lost (the uncertain outcome). At the end, each interval's run log
//! is printed as an operator reads it: the task, its attempts, the last error, the next action.

use apalis_core::backend::TaskSink;
use apalis_sqlite::SqliteStorage;
use retry_kit::apalis::{DurableRetryLayer, Outcome, run_log};
use retry_kit::{Jitter, RetryPolicy};
use retry_kit_durable::db::{SqliteFile, sqlite_config};
use retry_kit_durable::receiver::{Answer, Receiver, Request};
use retry_kit_durable::{Export, ExportError, Target, spawn_worker, worker_name};
use std::sync::Arc;
use std::time::Duration;

#[tokio::main]
pub async fn main() {
    let file = SqliteFile::new("nightly-export");
    let pool = file.pool().await;
    let mut storage: SqliteStorage<Export> =
        SqliteStorage::new(&pool).with_config(sqlite_config("nightly-export"));

    // The receiver, as the seeds' dependencies misbehave.
    let receiver = Receiver::start(Arc::new(|r: &Request| match r.interval.as_str() {
        "2026-12-02" if r.earlier < 2 => Answer::Status(503),
        "2026-12-03" => Answer::Status(422),
        "2026-12-04" => Answer::RateLimit(2 * 3600),
        "2026-12-05" if r.earlier == 0 => Answer::StoreThenDrop,
        _ => Answer::Store,
    }))
    .await;

    // The seeds' schedule, shortened to run in seconds: exponential from 1 s, capped at 8 s, 4
    // attempts, no jitter. Waits up to 1 s stay in the slot; longer ones go back to the queue.
    // The export is idempotent: the receiver deduplicates by the key.
    let policy = RetryPolicy::exponential(Duration::from_secs(1))
        .max_delay(Duration::from_secs(8))
        .jitter(Jitter::None)
        .attempts(4)
        .idempotent(true);
    let layer = DurableRetryLayer::new(policy, storage.clone()).classify_as::<ExportError>();
    let target = Target {
        receiver: receiver.addr(),
        worker: worker_name("nightly"),
    };
    let worker = spawn_worker!(storage, layer, target, 2);

    let mut tasks = Vec::new();
    for day in 1..=5 {
        let interval = format!("2026-12-{day:02}");
        let task = retry_kit::apalis::task(Export {
            interval: interval.clone(),
            rows: 1000 + day,
        })
        // The interval is the task's identity, and so its idempotency key's.
        .idempotency_key(format!("{interval}/billing-export"))
        .build();
        tasks.push((interval, task.task_id().cloned().expect("task() names it")));
        storage.push_task(task).await.expect("queue the interval");
    }

    // Wait (at most a minute) for every interval to end: done, quarantined or stopped.
    let mut logs = Vec::new();
    for (interval, id) in &tasks {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let log = run_log(&mut storage, id).await.expect("a run log");
            if !matches!(log.outcome(), Outcome::Waiting { .. } | Outcome::Running) {
                logs.push((interval.clone(), log));
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{interval} did not end:\n{log}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    worker.stop().await;

    // What the seeds ask for: the schema error quarantined, the rate limit stopping its
    // interval with the input kept, the flaky and the uncertain intervals exported once each.
    let outcome = |i: usize| logs[i].1.outcome().clone();
    assert_eq!(outcome(0), Outcome::Done);
    assert_eq!(outcome(1), Outcome::Done);
    assert_eq!(outcome(2), Outcome::Quarantined);
    assert_eq!(
        outcome(3),
        Outcome::Stopped(retry_kit::StopReason::RetryAfterTooLong)
    );
    assert_eq!(outcome(4), Outcome::Done);
    assert_eq!(
        logs[1].1.attempts(),
        3,
        "the flaky interval: two 503s, then stored"
    );

    println!("Nightly export, one run log per interval:\n");
    for (interval, log) in &logs {
        println!("{interval}\n{log}\n");
    }
    receiver.ledger(|l| {
        let mut held: Vec<&str> = l.stored.values().map(|e| e.interval.as_str()).collect();
        held.sort_unstable();
        println!(
            "The receiver saw {} requests and holds {} exports, one per interval: {}",
            l.seen.len(),
            l.stored.len(),
            held.join(", ")
        );
        println!(
            "({} repeated request recognised by its key and not stored again)",
            l.repeats
        );
        assert_eq!(held, ["2026-12-01", "2026-12-02", "2026-12-05"]);
        assert_eq!(
            l.repeats, 1,
            "the lost answer's retry, recognised by its key"
        );
    });
}
