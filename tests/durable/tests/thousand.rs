//! 1 000 jobs through two worker processes on PostgreSQL, the receiver failing 30 % of the
//! requests with a transient 503 and rejecting one interval in a hundred with a schema error.
//! At the end every job is done, quarantined or stopped exactly once, no export is stored
//! twice, and the attempts the run logs record equal the requests the receiver saw, job by
//! job.

use apalis_core::backend::TaskSink;
use apalis_postgres::PostgresStorage;
use retry_kit::IdempotencyKey;
use retry_kit::apalis::{Outcome, run_log};
use retry_kit::run::operation_id;
use retry_kit_durable::db::{PgDatabase, postgres_config, postgres_pool};
use retry_kit_durable::process::{Settings, WorkerProcess};
use retry_kit_durable::receiver::{Answer, Receiver, Request};
use retry_kit_durable::{Export, worker_name};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const WORKER: &str = env!("CARGO_BIN_EXE_durable-worker");
const QUEUE: &str = "exports";
const JOBS: u32 = 1000;

/// 30 % of requests fail: decided by the request's key and how many came before it, so the
/// run is reproducible whatever order the workers take the jobs in.
fn transient(r: &Request) -> bool {
    let h = IdempotencyKey::of(&(r.key.as_str(), r.earlier), operation_id("thousand")).as_u128();
    h % 100 < 30
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_jobs_with_30_percent_transient_failures_through_two_worker_processes() {
    let db = PgDatabase::create("thousand").await;
    let pool = postgres_pool(&db.url()).await;
    let mut storage: PostgresStorage<Export> =
        PostgresStorage::new(&pool).with_config(postgres_config(QUEUE));
    let receiver = Receiver::start(Arc::new(|r: &Request| {
        if r.interval.ends_with("-00") {
            Answer::Status(422)
        } else if transient(r) {
            Answer::Status(503)
        } else {
            Answer::Store
        }
    }))
    .await;
    // 5 attempts; the first retry after 600 ms is slept in the slot, the later ones (1.2 s,
    // 2.4 s, 4.8 s) go back to the queue.
    let settings = |role: &str| Settings {
        backend: "postgres".into(),
        url: db.url(),
        queue: QUEUE.into(),
        receiver: receiver.addr(),
        name: worker_name(role),
        policy: "5e600".into(),
        hold: Duration::from_secs(1),
        slots: 16,
    };
    let workers = [
        WorkerProcess::spawn(WORKER, &settings("a")),
        WorkerProcess::spawn(WORKER, &settings("b")),
    ];

    let mut ids = Vec::new();
    for n in 0..JOBS {
        let task = retry_kit::apalis::task(Export {
            interval: format!("job-{n:04}-{:02}", n % 100),
            rows: n,
        })
        .build();
        ids.push(task.task_id().cloned().expect("task() names it"));
        storage.push_task(task).await.expect("the push");
    }

    // Until no row is waiting or running (at most 5 minutes).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
    loop {
        let open: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM apalis.jobs WHERE status IN ('Pending', 'Queued', 'Running')",
        )
        .fetch_one(&pool)
        .await
        .expect("a count");
        if open == 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{open} rows still open after 5 minutes"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for worker in workers {
        assert!(worker.stop().await.success());
    }

    let mut outcomes = BTreeMap::new();
    let mut recorded = BTreeMap::new();
    for id in &ids {
        let log = run_log(&mut storage, id).await.expect("a run log");
        let outcome = match log.outcome() {
            Outcome::Done => "done",
            Outcome::Quarantined => "quarantined",
            Outcome::Stopped(_) => "stopped",
            other => panic!("task {id} ended {other:?}:\n{log}"),
        };
        *outcomes.entry(outcome).or_insert(0u32) += 1;
        recorded.insert(log.idempotency_key().to_string(), (log.attempts(), outcome));
    }
    // Exactly once: one final row per job (the others handed their task on).
    let finals: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM apalis.jobs WHERE status IN ('Killed', 'Failed') \
         OR (status = 'Done' AND last_result ? 'Ok')",
    )
    .fetch_one(&pool)
    .await
    .expect("a count");
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM apalis.jobs")
        .fetch_one(&pool)
        .await
        .expect("a count");

    let (seen, stored, repeats) =
        receiver.ledger(|l| (l.seen.clone(), l.stored.clone(), l.repeats));
    let mut seen_per_key: BTreeMap<String, u32> = BTreeMap::new();
    for s in &seen {
        *seen_per_key.entry(s.key.clone()).or_default() += 1;
    }
    println!(
        "{JOBS} jobs: {outcomes:?}; {rows} rows; {} requests ({} failed), {} exports stored, \
         {repeats} repeats",
        seen.len(),
        seen.iter().filter(|s| s.answer != Answer::Store).count(),
        stored.len()
    );
    assert_eq!(outcomes.values().sum::<u32>(), JOBS);
    assert_eq!(finals, i64::from(JOBS), "one final row per job");
    assert_eq!(
        outcomes.get("quarantined"),
        Some(&(JOBS / 100)),
        "one in a hundred: 422"
    );
    assert_eq!(repeats, 0, "no export was posted again after it was stored");
    assert_eq!(
        stored.len() as u32,
        outcomes["done"],
        "one export per job done"
    );
    for (key, (attempts, outcome)) in &recorded {
        assert_eq!(
            seen_per_key.get(key).copied().unwrap_or(0),
            *attempts,
            "the attempts recorded for {key} ({outcome}) are the requests the receiver saw"
        );
        assert_eq!(stored.contains_key(key), *outcome == "done");
    }
    let total: u32 = recorded.values().map(|(a, _)| a).sum();
    assert_eq!(total as usize, seen.len());
    pool.close().await;
    db.drop().await;
}
