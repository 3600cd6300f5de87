//! A worker process for the multi-process tests: runs the export job under
//! `DurableRetryLayer` on the queue its environment names, until its standard input closes
//! (or it is killed). See `retry_kit_durable::process`.

use apalis_postgres::PostgresStorage;
use apalis_sqlite::SqliteStorage;
use retry_kit::apalis::DurableRetryLayer;
use retry_kit_durable::db::{postgres_config, sqlite_config};
use retry_kit_durable::process::{Settings, policy};
use retry_kit_durable::{Export, ExportError, Target, export_worker};
use tokio::io::AsyncReadExt;

#[tokio::main]
async fn main() {
    let settings = Settings::from_env();
    let target = Target {
        receiver: settings.receiver,
        worker: settings.name.clone(),
    };
    // Until the parent closes our standard input (or goes away).
    let stop = async {
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 64];
        while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
        Ok::<(), std::io::Error>(())
    };
    let policy = policy(&settings.policy);
    let result = match settings.backend.as_str() {
        "sqlite" => {
            // The test made the tables: two processes migrating one SQLite file at once would
            // find it locked.
            let pool = apalis_sqlite::SqlitePool::connect(&settings.url)
                .await
                .unwrap_or_else(|e| panic!("cannot open {}: {e}", settings.url));
            let storage: SqliteStorage<Export> =
                SqliteStorage::new(&pool).with_config(sqlite_config(&settings.queue));
            let layer = DurableRetryLayer::new(policy, storage.clone())
                .hold_slot_up_to(settings.hold)
                .classify_as::<ExportError>();
            export_worker!(storage, layer, target, settings.slots)
                .run_until(stop)
                .await
        }
        "postgres" => {
            let pool = apalis_postgres::PgPool::connect(&settings.url)
                .await
                .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", settings.url));
            let storage: PostgresStorage<Export> =
                PostgresStorage::new(&pool).with_config(postgres_config(&settings.queue));
            let layer = DurableRetryLayer::new(policy, storage.clone())
                .hold_slot_up_to(settings.hold)
                .classify_as::<ExportError>();
            export_worker!(storage, layer, target, settings.slots)
                .run_until(stop)
                .await
        }
        other => panic!("RK_BACKEND is `{other}`; expected `sqlite` or `postgres`"),
    };
    if let Err(e) = result {
        eprintln!("worker {} failed: {e}", settings.name);
        std::process::exit(1);
    }
}
