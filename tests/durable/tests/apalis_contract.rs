//! What `retry_kit::apalis` relies on in apalis 1.0.0 that apalis does not promise, pinned so
//! that an upgrade which changes it fails here first (see the "What the layer relies on"
//! section of the module's docs). The layer writes no table itself; these are the schema and
//! the behaviours its public-API design stands on.

use apalis_core::backend::TaskSink;
use apalis_core::backend::ext::BackendExt;
use apalis_core::task::builder::TaskBuilder;
use apalis_core::worker::builder::WorkerBuilder;
use apalis_postgres::PostgresStorage;
use apalis_sqlite::SqliteStorage;
use retry_kit_durable::db::{PgDatabase, SqliteFile, postgres_pool, sqlite_config};
use retry_kit_durable::{until, worker_name};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

#[tokio::test]
async fn the_sqlite_schema_is_the_one_the_layer_was_built_against() {
    let file = SqliteFile::new("contract");
    let pool = file.pool().await;
    let last = SqliteStorage::<()>::migrations()
        .iter()
        .map(|m| m.version)
        .max()
        .expect("migrations");
    assert_eq!(
        last, 20260804103122,
        "apalis-sqlite's schema moved on: recheck the layer"
    );
    let columns: Vec<(String, String)> =
        sqlx::query_as("SELECT name, type FROM pragma_table_info('Jobs') ORDER BY cid")
            .fetch_all(&pool)
            .await
            .expect("the columns");
    let expected = [
        ("job", "BLOB"),
        ("id", "TEXT"),
        ("job_type", "TEXT"),
        ("status", "TEXT"),
        ("attempts", "INTEGER"),
        ("max_attempts", "INTEGER"),
        ("run_at", "INTEGER"),
        ("last_result", "TEXT"),
        ("lock_at", "INTEGER"),
        ("lock_by", "TEXT"),
        ("done_at", "INTEGER"),
        ("priority", "INTEGER"),
        ("metadata", "TEXT"),
        ("idempotency_key", "TEXT"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    assert_eq!(columns, expected);
}

#[tokio::test]
async fn the_postgres_schema_is_the_one_the_layer_was_built_against() {
    let db = PgDatabase::create("contract").await;
    let pool = postgres_pool(&db.url()).await;
    let last = PostgresStorage::<()>::migrations()
        .iter()
        .map(|m| m.version)
        .max()
        .expect("migrations");
    assert_eq!(
        last, 20260902075949,
        "apalis-postgres's schema moved on: recheck the layer"
    );
    let columns: Vec<(String, String)> = sqlx::query_as(
        "SELECT column_name::text, udt_name::text FROM information_schema.columns \
         WHERE table_schema = 'apalis' AND table_name = 'jobs' ORDER BY ordinal_position",
    )
    .fetch_all(&pool)
    .await
    .expect("the columns");
    pool.close().await;
    db.drop().await;
    let expected = [
        ("job", "bytea"),
        ("id", "text"),
        ("job_type", "text"),
        ("status", "text"),
        ("attempts", "int4"),
        ("max_attempts", "int4"),
        ("run_at", "timestamptz"),
        ("last_result", "jsonb"),
        ("lock_at", "timestamptz"),
        ("lock_by", "text"),
        ("done_at", "timestamptz"),
        ("priority", "int4"),
        ("idempotency_key", "text"),
        ("metadata", "hstore"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    assert_eq!(columns, expected);
}

static RUNS: AtomicU32 = AtomicU32::new(0);

async fn always_fails(_: u32) -> Result<(), std::io::Error> {
    RUNS.fetch_add(1, Ordering::SeqCst);
    Err(std::io::Error::other("no"))
}

/// Why a stop on a producer's row is recorded on a successor: apalis fetches a `Failed` row
/// again, at once, while its attempts are below its `max_attempts`, and never after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_row_is_fetched_again_until_its_max_attempts_and_then_never() {
    let file = SqliteFile::new("refetch");
    let pool = file.pool().await;
    let mut storage: SqliteStorage<u32> =
        SqliteStorage::new(&pool).with_config(sqlite_config("contract"));
    storage
        .push_task(TaskBuilder::new(7).max_attempts(3).build())
        .await
        .expect("the push");
    let worker = WorkerBuilder::new(worker_name("contract"))
        .backend(
            storage
                .clone()
                .poll_with_interval(Duration::from_millis(20)),
        )
        .build(always_fails);
    let watch = pool.clone();
    let run = tokio::spawn(worker.run_until(async move {
        until(Duration::from_secs(20), "the row to be final", || {
            let watch = watch.clone();
            async move {
                let (status, attempts): (String, i64) =
                    sqlx::query_as("SELECT status, attempts FROM Jobs")
                        .fetch_one(&watch)
                        .await
                        .expect("the row");
                status == "Failed" && attempts == 3
            }
        })
        .await;
        // A few more polls: a row fetched once more would run a fourth time.
        tokio::time::sleep(Duration::from_millis(200)).await;
        Ok::<(), std::io::Error>(())
    }));
    run.await.expect("the worker task").expect("the worker");
    assert_eq!(RUNS.load(Ordering::SeqCst), 3);
}
