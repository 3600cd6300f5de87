//! Worker processes failing the way they really do: killed between handing a task back and
//! acknowledging its row, and racing each other for the same jobs.

use apalis_core::backend::TaskSink;
use apalis_postgres::PostgresStorage;
use apalis_sqlite::SqliteStorage;
use retry_kit::apalis::{Outcome, run_log};
use retry_kit_durable::db::{
    PgDatabase, SqliteFile, postgres_config, postgres_pool, sqlite_config,
};
use retry_kit_durable::process::{Settings, WorkerProcess};
use retry_kit_durable::receiver::{Answer, Receiver, Request};
use retry_kit_durable::{Export, until, worker_name};
use sqlx::Connection;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const WORKER: &str = env!("CARGO_BIN_EXE_durable-worker");
const QUEUE: &str = "exports";

fn settings(backend: &str, url: &str, receiver: &Receiver, policy: &str, hold: u64) -> Settings {
    Settings {
        backend: backend.into(),
        url: url.into(),
        queue: QUEUE.into(),
        receiver: receiver.addr(),
        name: worker_name(backend),
        policy: policy.into(),
        hold: Duration::from_millis(hold),
        slots: 4,
    }
}

/// The crash window of a hand-back: the successor is committed, the row not yet acknowledged.
/// A transaction of the test's holds the row's lock, so apalis's acknowledgement (an `UPDATE
/// ... WHERE lock_by = <worker>`) waits; the worker is killed while it waits. The row is
/// re-enqueued by the surviving worker, which finds the successor there and runs nothing; the
/// successor runs once. Nothing is lost, nothing runs twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_between_handing_back_and_its_ack_loses_nothing_and_repeats_nothing() {
    let db = PgDatabase::create("window").await;
    let pool = postgres_pool(&db.url()).await;
    let mut storage: PostgresStorage<Export> =
        PostgresStorage::new(&pool).with_config(postgres_config(QUEUE));
    // The first request waits for the test, then fails (503); later ones are stored.
    let receiver = Receiver::start(Arc::new(|r: &Request| {
        if r.earlier == 0 {
            Answer::HoldThenStatus(503)
        } else {
            Answer::Store
        }
    }))
    .await;
    // Every retry is handed back (1 s, none held in the slot).
    let a = WorkerProcess::spawn(
        WORKER,
        &settings("postgres", &db.url(), &receiver, "3x1000", 0),
    );
    let task = retry_kit::apalis::task(Export {
        interval: "2026-12-03".into(),
        rows: 42,
    })
    .build();
    let id = task.task_id().cloned().expect("named");
    storage.push_task(task).await.expect("the push");

    tokio::time::timeout(Duration::from_secs(30), receiver.held())
        .await
        .expect("worker a to post within 30 s");
    // The row is fetched (its fetch committed); take its lock before the handler answers.
    let mut blocker = sqlx::PgConnection::connect(&db.url())
        .await
        .expect("a connection");
    let mut lock = blocker.begin().await.expect("a transaction");
    sqlx::query("SELECT id FROM apalis.jobs WHERE id = $1 FOR UPDATE")
        .bind(id.to_string())
        .fetch_one(&mut *lock)
        .await
        .expect("the row's lock");
    receiver.release();
    // The successor is committed (its push does not touch the locked row)...
    until(
        Duration::from_secs(20),
        "the successor to be pushed",
        || {
            let pool = pool.clone();
            async move {
                sqlx::query_scalar::<_, i64>("SELECT count(*) FROM apalis.jobs")
                    .fetch_one(&pool)
                    .await
                    .expect("a count")
                    == 2
            }
        },
    )
    .await;
    // ... and the row is still unacknowledged: kill the worker in that window.
    let status: String = sqlx::query_scalar("SELECT status FROM apalis.jobs WHERE id = $1")
        .bind(id.to_string())
        .fetch_one(&pool)
        .await
        .expect("the row");
    assert_ne!(
        status, "Done",
        "acknowledged before the kill: no crash window tested"
    );
    a.kill().await;
    lock.rollback().await.expect("the lock released");

    let b = WorkerProcess::spawn(
        WORKER,
        &settings("postgres", &db.url(), &receiver, "3x1000", 0),
    );
    // Until the task is done and the killed worker's row, re-enqueued, is closed (30 s).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let log = loop {
        let read = run_log(&mut storage, &id).await.expect("a run log");
        let root: String = sqlx::query_scalar("SELECT status FROM apalis.jobs WHERE id = $1")
            .bind(id.to_string())
            .fetch_one(&pool)
            .await
            .expect("the row");
        if read.outcome() == &Outcome::Done && root == "Done" {
            break read;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not over after 30 s (row {root}):\n{read}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(b.stop().await.success());
    let seen = receiver.seen();
    assert_eq!(
        seen.len(),
        2,
        "the failed attempt, then the successor's; nothing repeated: {seen:?}"
    );
    assert_eq!(seen[0].key, seen[1].key);
    assert_eq!(receiver.ledger(|l| l.stored.len()), 1);
    assert_eq!(log.rows().len(), 2, "one successor: {log}");
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM apalis.jobs")
        .fetch_one(&pool)
        .await
        .expect("a count");
    assert_eq!(rows, 2, "the re-enqueued row pushed no second successor");
    // Closed by the survivor's run, which found the successor (not by the killed worker's
    // acknowledgement, which died with it).
    let result: String =
        sqlx::query_scalar("SELECT last_result::text FROM apalis.jobs WHERE id = $1")
            .bind(id.to_string())
            .fetch_one(&pool)
            .await
            .expect("the row");
    assert!(
        result.contains("cut short, had handed the task back"),
        "{result}"
    );
    drop(blocker);
    pool.close().await;
    db.drop().await;
}

/// Two worker processes polling one queue: every job is run by exactly one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_worker_processes_racing_for_the_same_jobs_run_each_once() {
    let file = SqliteFile::new("race");
    let pool = file.pool().await;
    let mut storage: SqliteStorage<Export> =
        SqliteStorage::new(&pool).with_config(sqlite_config(QUEUE));
    let receiver = Receiver::storing().await;
    let workers = [
        WorkerProcess::spawn(
            WORKER,
            &settings("sqlite", &file.url(), &receiver, "3x50", 1000),
        ),
        WorkerProcess::spawn(
            WORKER,
            &settings("sqlite", &file.url(), &receiver, "3x50", 1000),
        ),
    ];
    const JOBS: u32 = 200;
    for n in 0..JOBS {
        let task = retry_kit::apalis::task(Export {
            interval: format!("job-{n}"),
            rows: n,
        })
        .build();
        storage.push_task(task).await.expect("the push");
    }
    until(Duration::from_secs(60), "every job stored", || async {
        receiver.ledger(|l| l.stored.len()) == JOBS as usize
    })
    .await;
    for worker in workers {
        assert!(worker.stop().await.success());
    }
    let seen = receiver.seen();
    let mut per_key: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &seen {
        *per_key.entry(&s.key).or_default() += 1;
    }
    assert_eq!(seen.len(), JOBS as usize, "no job run twice");
    assert!(per_key.values().all(|&n| n == 1));
    let open: i64 = sqlx::query_scalar("SELECT count(*) FROM Jobs WHERE status != 'Done'")
        .fetch_one(&pool)
        .await
        .expect("a count");
    assert_eq!(open, 0);
}
