//! Slot release, shown by counts: with one slot, a job that defers for an hour does not stop
//! five quick jobs behind it from finishing.

use apalis_core::backend::TaskSink;
use apalis_sqlite::SqliteStorage;
use retry_kit::RetryPolicy;
use retry_kit::apalis::{DurableRetryLayer, Outcome, run_log};
use retry_kit_durable::db::{SqliteFile, sqlite_config};
use retry_kit_durable::receiver::{Answer, Receiver, Request};
use retry_kit_durable::{Export, ExportError, Target, spawn_worker, until, worker_name};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_slot_a_job_deferred_for_an_hour_and_five_quick_jobs_behind_it_finish() {
    let file = SqliteFile::new("slots");
    let pool = file.pool().await;
    let mut storage: SqliteStorage<Export> =
        SqliteStorage::new(&pool).with_config(sqlite_config("exports"));
    let receiver = Receiver::start(Arc::new(|r: &Request| {
        if r.interval == "deferred" {
            Answer::RateLimit(3600)
        } else {
            Answer::Store
        }
    }))
    .await;
    // A policy that waits as long as the receiver asks, up to two hours.
    let policy = RetryPolicy::fixed(Duration::from_secs(1))
        .max_delay(Duration::from_secs(7200))
        .attempts(3);
    let layer = DurableRetryLayer::new(policy, storage.clone()).classify_as::<ExportError>();
    let target = Target {
        receiver: receiver.addr(),
        worker: worker_name("slots"),
    };

    // The deferred job first (a higher priority: fetched before the others).
    let first = retry_kit::apalis::task(Export {
        interval: "deferred".into(),
        rows: 1,
    })
    .priority(10)
    .build();
    let deferred = first.task_id().cloned().expect("named");
    storage.push_task(first).await.expect("the push");
    let mut quick = Vec::new();
    for n in 0..5 {
        let task = retry_kit::apalis::task(Export {
            interval: format!("quick-{n}"),
            rows: n,
        })
        .build();
        quick.push(task.task_id().cloned().expect("named"));
        storage.push_task(task).await.expect("the push");
    }
    let worker = spawn_worker!(storage, layer, target, 1);

    until(
        Duration::from_secs(30),
        "the five quick jobs to finish",
        || {
            let (mut storage, quick) = (storage.clone(), quick.clone());
            async move {
                for id in &quick {
                    if run_log(&mut storage, id).await.unwrap().outcome() != &Outcome::Done {
                        return false;
                    }
                }
                true
            }
        },
    )
    .await;
    worker.stop().await;

    let seen = receiver.seen();
    assert_eq!(seen.len(), 6, "each job tried once: {seen:?}");
    assert_eq!(
        seen[0].interval, "deferred",
        "the deferred job took the one slot first"
    );
    let log = run_log(&mut storage, &deferred).await.unwrap();
    assert_eq!(log.attempts(), 1);
    assert_eq!(log.rows().len(), 2, "handed back: {log}");
    let Outcome::Waiting { due } = *log.outcome() else {
        panic!("the deferred job waits in the queue: {log}");
    };
    let ahead = due.duration_since(SystemTime::now()).unwrap_or_default();
    assert!(
        ahead > Duration::from_secs(3500),
        "due in an hour, not {ahead:?}"
    );
}
