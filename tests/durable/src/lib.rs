//! What the tests, the worker process, the example and the bench share: the seeds' export job
//! ([`Export`], [`export`]), the receiver it posts to ([`receiver`]), and the queues
//! ([`db`]).

pub mod db;
pub mod process;
pub mod receiver;

use retry_kit::{Classify, ErrorClass};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

/// One interval's export: the job's input, as the queue stores it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Export {
    /// The interval's identity, such as `2026-12-03`.
    pub interval: String,
    /// How many rows the export carries.
    pub rows: u32,
}

/// Where the handler posts, and who it says it is: the worker's data (`WorkerBuilder::data`).
#[derive(Clone, Debug)]
pub struct Target {
    /// The receiver's address.
    pub receiver: SocketAddr,
    /// The worker's name, sent as `x-worker`.
    pub worker: String,
}

/// Why an export failed, as a receiver's client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportError {
    /// The connection could not be made: nothing was sent.
    Connect(String),
    /// The request was sent and the answer lost (a reset, a connection closed before the
    /// answer): the receiver may have stored the export.
    Lost(String),
    /// The receiver answered with this status (and this `Retry-After`).
    Status {
        /// The HTTP status.
        code: u16,
        /// The receiver's `Retry-After`.
        retry_after: Option<Duration>,
    },
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportError::Connect(e) => write!(f, "could not connect to the receiver: {e}"),
            ExportError::Lost(e) => write!(f, "the receiver's answer was lost: {e}"),
            ExportError::Status {
                code,
                retry_after: Some(wait),
            } => write!(
                f,
                "the receiver answered {code}, retry after {}s",
                wait.as_secs()
            ),
            ExportError::Status { code, .. } => write!(f, "the receiver answered {code}"),
        }
    }
}

impl std::error::Error for ExportError {}

impl Classify for ExportError {
    fn class(&self) -> ErrorClass {
        match self {
            ExportError::Connect(_) => ErrorClass::Transient,
            // It may have been stored: safe to repeat only with the key, which the receiver
            // deduplicates (the policy says `idempotent`).
            ExportError::Lost(_) => ErrorClass::IdempotentOnly,
            ExportError::Status { code, .. } => match hyper::StatusCode::from_u16(*code) {
                Ok(status) => retry_kit::http::status_class(status),
                Err(_) => ErrorClass::Permanent,
            },
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            ExportError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// The job: post the interval's export with the task's idempotency key (the same on every
/// attempt, in every run and process), as the seeds' billing export does.
pub async fn export(
    job: Export,
    target: apalis_core::task::data::Data<Target>,
) -> Result<(), ExportError> {
    let attempt = retry_kit::current_attempt().expect("the worker runs under DurableRetryLayer");
    receiver::post(
        target.receiver,
        &job,
        &attempt.idempotency_key().to_string(),
        attempt.number(),
        &target.worker,
    )
    .await
}

/// Wait until `done()` says so, checking every 20 ms, for at most `limit`; panic with `what`
/// if it never does. Tests wait for counts, never for a time.
pub async fn until<F, Fut>(limit: Duration, what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    while !done().await {
        if tokio::time::Instant::now() > deadline {
            panic!("waited {limit:?} for {what}, in vain");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A name no other worker process has (apalis re-enqueues a dead worker's rows by name).
pub fn worker_name(role: &str) -> String {
    format!(
        "{role}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos()
            % 1_000_000_000
    )
}

/// A worker running the export job on `storage` (a clone of it is polled every
/// [`db::POLL`]), under `layer`, with `slots` tasks at a time, posting as `target` says.
/// `.concurrency(slots)` comes before the layer: apalis's builder stacks each layer inside
/// the ones added before it (tower's `Stack`), so the limit is outside and a wait slept in
/// the slot holds its permit.
#[macro_export]
macro_rules! export_worker {
    ($storage:expr, $layer:expr, $target:expr, $slots:expr) => {{
        use apalis::layers::WorkerBuilderExt as _;
        use apalis_core::backend::ext::BackendExt as _;
        let target: $crate::Target = $target;
        apalis_core::worker::builder::WorkerBuilder::new(target.worker.clone())
            .backend($storage.clone().poll_with_interval($crate::db::POLL))
            .data(target)
            .concurrency($slots)
            .layer($layer)
            .build($crate::export)
    }};
}

/// A worker running in a task of its own until [`Running::stop`].
pub struct Running {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), String>>,
}

impl Running {
    /// Run `worker` (what [`export_worker!`] builds) until stopped.
    pub fn spawn<W, F>(run: W) -> Running
    where
        W: FnOnce(tokio::sync::oneshot::Receiver<()>) -> F,
        F: std::future::Future<Output = Result<(), String>> + Send + 'static,
    {
        let (stop, stopped) = tokio::sync::oneshot::channel();
        Running {
            stop: Some(stop),
            task: tokio::spawn(run(stopped)),
        }
    }

    /// Stop it, and wait (at most 10 s) for it to finish what it holds.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match tokio::time::timeout(Duration::from_secs(10), &mut self.task).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => panic!("the worker failed: {e}"),
            Ok(Err(e)) => panic!("the worker panicked: {e}"),
            Err(_) => panic!("the worker did not stop within 10 s"),
        }
    }
}

/// Spawn an [`export_worker!`] as a [`Running`].
#[macro_export]
macro_rules! spawn_worker {
    ($storage:expr, $layer:expr, $target:expr, $slots:expr) => {{
        let worker = $crate::export_worker!($storage, $layer, $target, $slots);
        $crate::Running::spawn(move |stopped| async move {
            worker
                .run_until(async move {
                    let _ = stopped.await;
                    Ok::<(), std::io::Error>(())
                })
                .await
                .map_err(|e| e.to_string())
        })
    }};
}

/// A fresh task id, as the backends make them.
pub fn task_id() -> apalis_core::task::task_id::TaskId {
    apalis_core::task::task_id::TaskId::from_ulid(ulid::Ulid::generate())
}
