//! Jobs per second through `DurableRetryLayer` and through apalis's own retry layer (tower's
//! retry with `apalis::layers::retry::RetryPolicy`), on the same backend (SQLite in a file,
//! one worker in this process, 8 slots, polled every 10 ms), all jobs succeeding and with 10 %
//! transient failures (retried at once in the slot by both); and the same on PostgreSQL (a
//! database of the run's own on 127.0.0.1:5432).
//!
//! ```text
//! cargo bench -p retry-kit-durable --bench throughput
//! ```
//!
//! The figures are in benches/README.md ("The apalis layer").

use apalis::layers::WorkerBuilderExt;
use apalis::layers::retry::RetryPolicy as ApalisRetry;
use apalis_core::backend::TaskSink;
use apalis_core::backend::ext::BackendExt;
use apalis_core::task::attempt::Attempt;
use apalis_core::worker::builder::WorkerBuilder;
use apalis_postgres::PostgresStorage;
use apalis_sqlite::SqliteStorage;
use retry_kit::apalis::DurableRetryLayer;
use retry_kit::{Classify, ErrorClass, RetryPolicy};
use retry_kit_durable::db::{
    PgDatabase, SqliteFile, postgres_config, postgres_pool, sqlite_config,
};
use std::time::{Duration, Instant};

const JOBS: u32 = 2000;
const RUNS: usize = 3;

#[derive(Debug)]
struct Flaky;

impl std::fmt::Display for Flaky {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("flaky")
    }
}

impl std::error::Error for Flaky {}

impl Classify for Flaky {
    fn class(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

/// Fails one attempt in `1 / rate` (0: never), decided by the job and its attempt number.
async fn job(
    n: u32,
    attempt: Attempt,
    rate: apalis_core::task::data::Data<u32>,
) -> Result<(), Flaky> {
    let rate = *rate;
    let h =
        (u64::from(n) * 0x9E37_79B9_7F4A_7C15) ^ (attempt.current() as u64 * 0xBF58_476D_1CE4_E5B9);
    if rate > 0 && (h >> 7) % 100 < u64::from(rate) {
        Err(Flaky)
    } else {
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
enum Layer {
    Durable,
    ApalisRetry,
}

/// Push the jobs to `$storage`, run one worker under `$layer` until none is open, and give
/// the jobs per second.
macro_rules! measure {
    ($storage:expr, $pool:expr, $jobs_table:literal, $layer:expr, $percent:expr) => {{
        let mut storage = $storage;
        for n in 0..JOBS {
            storage
                .push_task(retry_kit::apalis::task(n).max_attempts(25).build())
                .await
                .expect("push");
        }
        let watcher = $pool.clone();
        let done = async move {
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                let open: i64 = sqlx::query_scalar(concat!(
                    "SELECT count(*) FROM ",
                    $jobs_table,
                    " WHERE status IN ('Pending', 'Queued', 'Running')"
                ))
                .fetch_one(&watcher)
                .await
                .expect("count");
                if open == 0 {
                    return Ok::<(), std::io::Error>(());
                }
            }
        };
        let started = Instant::now();
        let builder = WorkerBuilder::new(retry_kit_durable::worker_name("bench"))
            .backend(
                storage
                    .clone()
                    .poll_with_interval(Duration::from_millis(10)),
            )
            .data($percent)
            .concurrency(8);
        match $layer {
            Layer::Durable => {
                let policy = RetryPolicy::fixed(Duration::ZERO).attempts(6);
                builder
                    .layer(DurableRetryLayer::new(policy, storage.clone()).classify_as::<Flaky>())
                    .build(job)
                    .run_until(done)
                    .await
            }
            Layer::ApalisRetry => {
                builder
                    .retry(ApalisRetry::retries(5))
                    .build(job)
                    .run_until(done)
                    .await
            }
        }
        .expect("the worker");
        let elapsed = started.elapsed();
        let failed: i64 = sqlx::query_scalar(concat!(
            "SELECT count(*) FROM ",
            $jobs_table,
            " WHERE status != 'Done'"
        ))
        .fetch_one(&$pool)
        .await
        .expect("count");
        assert!(failed <= i64::from(JOBS) / 100, "{failed} jobs not done");
        f64::from(JOBS) / elapsed.as_secs_f64()
    }};
}

async fn sqlite(layer: Layer, percent: u32) -> f64 {
    let file = SqliteFile::new("throughput");
    let pool = file.pool().await;
    let storage: SqliteStorage<u32> = SqliteStorage::new(&pool).with_config(sqlite_config("bench"));
    measure!(storage, pool, "Jobs", layer, percent)
}

async fn postgres(layer: Layer, percent: u32) -> f64 {
    let db = PgDatabase::create("throughput").await;
    let pool = postgres_pool(&db.url()).await;
    let storage: PostgresStorage<u32> =
        PostgresStorage::new(&pool).with_config(postgres_config("bench"));
    let rate = measure!(storage, pool, "apalis.jobs", layer, percent);
    pool.close().await;
    db.drop().await;
    rate
}

#[tokio::main]
async fn main() {
    println!("{JOBS} jobs, one worker, 8 slots, median of {RUNS} runs (jobs per second)");
    println!("| backend | layer | all succeed | 10 % transient failures |");
    println!("| --- | --- | --- | --- |");
    for backend in ["SQLite", "PostgreSQL"] {
        for layer in [Layer::ApalisRetry, Layer::Durable] {
            let mut row = Vec::new();
            for percent in [0, 10] {
                let mut runs = Vec::new();
                for _ in 0..RUNS {
                    runs.push(match backend {
                        "SQLite" => sqlite(layer, percent).await,
                        _ => postgres(layer, percent).await,
                    });
                }
                runs.sort_by(f64::total_cmp);
                row.push(runs[RUNS / 2]);
            }
            println!("| {backend} | {layer:?} | {:.0} | {:.0} |", row[0], row[1]);
        }
    }
}
