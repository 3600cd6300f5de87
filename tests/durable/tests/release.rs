//! The seeds' release test, across processes: a worker process is killed (SIGKILL) after the
//! receiver accepted the export and before the worker acknowledged the task; the job runs
//! again in another worker process with the same key, and the receiver holds one export. On
//! PostgreSQL with two worker processes, and on SQLite.

use apalis_core::backend::finalize::Durable;
use apalis_core::backend::{FetchById, TaskSink, WaitForCompletion};
use apalis_core::task::Task;
use apalis_postgres::PostgresStorage;
use apalis_sqlite::SqliteStorage;
use retry_kit::apalis::{Outcome, run_log};
use retry_kit_durable::db::{
    PgDatabase, SqliteFile, postgres_config, postgres_pool, sqlite_config,
};
use retry_kit_durable::process::{Settings, WorkerProcess};
use retry_kit_durable::receiver::{Answer, Receiver};
use retry_kit_durable::{Export, worker_name};
use std::sync::Arc;
use std::time::Duration;

const WORKER: &str = env!("CARGO_BIN_EXE_durable-worker");
const QUEUE: &str = "exports";

fn settings(backend: &str, url: &str, receiver: &Receiver, role: &str) -> Settings {
    Settings {
        backend: backend.into(),
        url: url.into(),
        queue: QUEUE.into(),
        receiver: receiver.addr(),
        name: worker_name(role),
        policy: "5x50".into(),
        hold: Duration::from_secs(1),
        slots: 4,
    }
}

async fn killed_after_the_receiver_accepted<S, C>(backend: &str, url: &str, mut storage: S)
where
    S: TaskSink<Export, Durable>
        + FetchById<Task = Task<C>>
        + WaitForCompletion<serde_json::Value>
        + Clone,
{
    // The first request of a key is stored and never answered; a repeat is answered `200`.
    let receiver = Receiver::start(Arc::new(|r: &retry_kit_durable::receiver::Request| {
        if r.earlier == 0 {
            Answer::StoreThenHold
        } else {
            Answer::Store
        }
    }))
    .await;
    let a = WorkerProcess::spawn(WORKER, &settings(backend, url, &receiver, "a"));
    let b = WorkerProcess::spawn(WORKER, &settings(backend, url, &receiver, "b"));

    let task = retry_kit::apalis::task(Export {
        interval: "2026-12-03".into(),
        rows: 42,
    })
    .idempotency_key("2026-12-03/billing-export")
    .build();
    let id = task.task_id().cloned().expect("task() names the task");
    storage.push_task(task).await.expect("the push");

    tokio::time::timeout(Duration::from_secs(30), receiver.held())
        .await
        .expect("a worker to post the export within 30 s");
    let holder = receiver.seen()[0].worker.clone();
    let (killed, survivor) = if holder == a.name { (a, b) } else { (b, a) };
    assert_eq!(killed.name, holder);
    killed.kill().await;

    // The row stays running under the dead worker until the survivor's heartbeat re-enqueues
    // it (about 2 s: heartbeat 1 s, 2 missed), then the survivor runs it.
    let mut log = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while tokio::time::Instant::now() < deadline {
        let read = run_log(&mut storage, &id).await.expect("a run log");
        if read.outcome() == &Outcome::Done {
            log = Some(read);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let survivor_name = survivor.name.clone();
    assert!(
        survivor.stop().await.success(),
        "the surviving worker exits cleanly"
    );
    let log = log.expect("the task done by the surviving worker within 30 s");

    let seen = receiver.seen();
    assert_eq!(seen.len(), 2, "posted once by each worker: {seen:?}");
    assert_eq!(seen[0].key, seen[1].key, "the same key in both processes");
    assert_eq!(seen[0].key, log.idempotency_key().to_string());
    assert_eq!(seen[1].worker, survivor_name);
    receiver.ledger(|l| {
        assert_eq!(l.stored.len(), 1, "the receiver holds one export");
        assert_eq!(l.repeats, 1);
    });
    // The killed run is counted (apalis counted it when it re-enqueued the row).
    assert_eq!(log.attempts(), 2, "{log}");
    println!("{backend}: {log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_after_the_receiver_accepted_leaves_one_export_on_sqlite() {
    let file = SqliteFile::new("release");
    let pool = file.pool().await;
    let storage: SqliteStorage<Export> =
        SqliteStorage::new(&pool).with_config(sqlite_config(QUEUE));
    killed_after_the_receiver_accepted("sqlite", &file.url(), storage).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_after_the_receiver_accepted_leaves_one_export_on_postgres() {
    let db = PgDatabase::create("release").await;
    let pool = postgres_pool(&db.url()).await;
    let storage: PostgresStorage<Export> =
        PostgresStorage::new(&pool).with_config(postgres_config(QUEUE));
    killed_after_the_receiver_accepted("postgres", &db.url(), storage).await;
    pool.close().await;
    db.drop().await;
}
