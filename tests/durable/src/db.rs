//! The queues: SQLite in a temporary file (in process, shared by worker processes), and a
//! PostgreSQL database of its own per test run on the server at 127.0.0.1:5432, dropped after
//! (apalis's schema name is fixed, so a run cannot have a schema of its own).

use apalis_postgres::PostgresStorage;
use apalis_sqlite::SqliteStorage;
use sqlx::{Connection, PgConnection, PgPool, SqlitePool};
use std::path::PathBuf;
use std::time::Duration;

/// Heartbeats every second, a worker missing five is dead: its rows are re-enqueued about 5 s
/// after it died (apalis counts whole seconds; never set it below 1 s).
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// How many heartbeats a dead worker misses before its rows are re-enqueued. Two was too few
/// on this 2-core machine: counted in whole seconds, a live worker's heartbeat one second
/// late had its rows re-enqueued and run a second time beside it (at least once with one key,
/// as the layer documents; the 1 000-job test then saw 13 to 20 exports posted again and 997
/// or 1 002 final rows, in 5 of 15 runs). With five, 10 runs of 10 had none.
pub const MISSED: usize = 5;
/// How often an idle worker looks for due tasks.
pub const POLL: Duration = Duration::from_millis(50);

/// The SQLite configuration the tests use for `queue`.
pub fn sqlite_config(queue: &str) -> apalis_sqlite::Config {
    apalis_sqlite::Config::default()
        .queue(queue)
        .heartbeat_interval(HEARTBEAT)
        .missed_heartbeats(MISSED)
}

/// The PostgreSQL configuration the tests use for `queue`.
pub fn postgres_config(queue: &str) -> apalis_postgres::Config {
    apalis_postgres::Config::default()
        .queue(queue)
        .heartbeat_interval(HEARTBEAT)
        .missed_heartbeats(MISSED)
}

/// A SQLite database in a file of its own, removed when dropped.
pub struct SqliteFile {
    /// The file.
    pub path: PathBuf,
}

impl SqliteFile {
    /// A fresh file named for `name`.
    pub fn new(name: &str) -> SqliteFile {
        let path =
            std::env::temp_dir().join(format!("retry-kit-{name}-{}.db", crate::worker_name("db")));
        SqliteFile { path }
    }

    /// Its URL, creating the file if needed.
    pub fn url(&self) -> String {
        format!("sqlite:{}?mode=rwc", self.path.display())
    }

    /// A pool on it with apalis's tables.
    pub async fn pool(&self) -> SqlitePool {
        sqlite_pool(&self.url()).await
    }
}

impl Drop for SqliteFile {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.path.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A pool on the SQLite database at `url`, with apalis's tables.
pub async fn sqlite_pool(url: &str) -> SqlitePool {
    let pool = SqlitePool::connect(url)
        .await
        .unwrap_or_else(|e| panic!("cannot open the SQLite database {url}: {e}"));
    SqliteStorage::setup(&pool)
        .await
        .unwrap_or_else(|e| panic!("cannot create apalis's tables in {url}: {e}"));
    pool
}

/// A pool on the PostgreSQL database at `url`, with apalis's tables.
pub async fn postgres_pool(url: &str) -> PgPool {
    let pool = PgPool::connect(url)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"));
    PostgresStorage::setup(&pool)
        .await
        .unwrap_or_else(|e| panic!("cannot create apalis's tables in {url}: {e}"));
    pool
}

/// The server every PostgreSQL test uses.
pub const POSTGRES: &str = "postgres://postgres@127.0.0.1:5432";

/// A PostgreSQL database of this test run's own, dropped by [`drop`](Self::drop) (or, if the
/// test panicked first, when this value is dropped).
pub struct PgDatabase {
    /// Its name.
    pub name: String,
    dropped: bool,
}

impl PgDatabase {
    /// Create one. Fails, saying what to do, when the server is not there: these tests do not
    /// skip.
    pub async fn create(test: &str) -> PgDatabase {
        let name = format!("rk_{test}_{}", crate::worker_name("db").replace('-', "_"));
        let mut admin = admin().await;
        // The name is made of this crate's own characters (letters, digits, `_`).
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .unwrap_or_else(|e| panic!("cannot create the database {name} on {POSTGRES}: {e}"));
        PgDatabase {
            name,
            dropped: false,
        }
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("{POSTGRES}/{}", self.name)
    }

    /// Drop it (closing whatever is still connected to it).
    pub async fn drop(mut self) {
        drop_database(&self.name).await;
        self.dropped = true;
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        // A test that panicked: drop it from a runtime of our own.
        let name = self.name.clone();
        let _ = std::thread::spawn(move || {
            if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                rt.block_on(drop_database(&name));
            }
        })
        .join();
    }
}

async fn admin() -> PgConnection {
    let url = format!("{POSTGRES}/postgres");
    PgConnection::connect(&url).await.unwrap_or_else(|e| {
        panic!(
            "PostgreSQL is needed at {url} (user postgres, trust authentication) and cannot be \
             reached: {e}. Start the server (for example `service postgresql start`); these \
             tests never skip"
        )
    })
}

async fn drop_database(name: &str) {
    let mut admin = admin().await;
    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&mut admin)
    .await;
}
