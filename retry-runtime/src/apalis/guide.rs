use apalis_core::backend::TaskSink;
use apalis_core::backend::ext::BackendExt;
use apalis_core::worker::builder::WorkerBuilder;
use apalis_sqlite::{SqlitePool, SqliteStorage};
use retry_kit::apalis::{DurableRetryLayer, Outcome, run_log};
use retry_kit::{Classify, ErrorClass, RetryPolicy, current_attempt};
use std::time::Duration;

#[derive(Debug)]
struct Unavailable;

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the receiver answered 503")
    }
}

impl std::error::Error for Unavailable {}

impl Classify for Unavailable {
    fn class(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

/// The handler: the first attempt fails, the second succeeds. Every attempt, in any run on any
/// worker, sends the same key (here only printed).
async fn export(interval: String) -> Result<(), Unavailable> {
    let attempt = current_attempt().expect("run under DurableRetryLayer");
    println!(
        "{interval}: attempt {} with key {}",
        attempt.number(),
        attempt.idempotency_key()
    );
    if attempt.number() == 1 {
        Err(Unavailable)
    } else {
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pool = SqlitePool::connect("sqlite::memory:").await?;
    SqliteStorage::setup(&pool).await?;
    let config = apalis_sqlite::Config::default()
        .queue("exports")
        .heartbeat_interval(Duration::from_secs(1))
        .missed_heartbeats(2);
    let mut storage: SqliteStorage<String> = SqliteStorage::new(&pool).with_config(config);

    // The producer: the interval's identity is the task's, and so its key's.
    let task = retry_kit::apalis::task("2026-12-03".to_owned())
        .idempotency_key("2026-12-03/billing-export")
        .build();
    let id = task.task_id().cloned().expect("the builder names the task");
    storage.push_task(task).await?;

    // 3 attempts, 2 s apart: longer than the 1 s held in the slot, so the retry is handed back.
    let policy = RetryPolicy::fixed(Duration::from_secs(2)).attempts(3);
    let worker = WorkerBuilder::new(format!("exporter-{}", std::process::id()))
        .backend(
            storage
                .clone()
                .poll_with_interval(Duration::from_millis(100)),
        )
        .layer(DurableRetryLayer::new(policy, storage.clone()).classify_as::<Unavailable>())
        .build(export);

    let mut reader = storage.clone();
    worker
        .run_until(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let log = run_log(&mut reader, &id)
                    .await
                    .map_err(std::io::Error::other)?;
                if !matches!(log.outcome(), Outcome::Waiting { .. } | Outcome::Running) {
                    println!("{log}");
                    return Ok::<(), std::io::Error>(());
                }
            }
        })
        .await?;
    Ok(())
}
