//! Worker processes: the `durable-worker` binary, started and stopped (or killed) by a test.

use retry_kit::{Jitter, RetryPolicy};
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, ChildStdin, Command};

/// What a worker process runs, passed in its environment.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `sqlite` or `postgres`.
    pub backend: String,
    /// The database's URL.
    pub url: String,
    /// The queue's name.
    pub queue: String,
    /// The receiver's address.
    pub receiver: SocketAddr,
    /// The worker's name (unique per process).
    pub name: String,
    /// The policy, as [`policy`] reads it.
    pub policy: String,
    /// How long a wait may be slept in the slot.
    pub hold: Duration,
    /// Tasks at a time.
    pub slots: usize,
}

impl Settings {
    /// Read them from the environment (`RK_*`).
    pub fn from_env() -> Settings {
        let var = |name: &str| {
            std::env::var(name).unwrap_or_else(|_| panic!("the worker process needs {name}"))
        };
        Settings {
            backend: var("RK_BACKEND"),
            url: var("RK_URL"),
            queue: var("RK_QUEUE"),
            receiver: var("RK_RECEIVER").parse().expect("RK_RECEIVER: an address"),
            name: var("RK_NAME"),
            policy: var("RK_POLICY"),
            hold: Duration::from_millis(var("RK_HOLD_MS").parse().expect("RK_HOLD_MS: ms")),
            slots: var("RK_SLOTS").parse().expect("RK_SLOTS: a count"),
        }
    }

    fn apply(&self, command: &mut Command) {
        command
            .env("RK_BACKEND", &self.backend)
            .env("RK_URL", &self.url)
            .env("RK_QUEUE", &self.queue)
            .env("RK_RECEIVER", self.receiver.to_string())
            .env("RK_NAME", &self.name)
            .env("RK_POLICY", &self.policy)
            .env("RK_HOLD_MS", self.hold.as_millis().to_string())
            .env("RK_SLOTS", self.slots.to_string());
    }
}

/// The policy named `text`: `"<attempts>x<delay ms>"` for fixed delays, or
/// `"<attempts>e<base ms>"` for exponential ones (doubling, capped at 30 s); without jitter,
/// and idempotent (the receiver deduplicates by key).
pub fn policy(text: &str) -> RetryPolicy {
    let parse = |at: char| {
        let (attempts, ms) = text.split_once(at)?;
        Some((
            attempts.parse::<u32>().ok()?,
            Duration::from_millis(ms.parse().ok()?),
        ))
    };
    let policy = if let Some((attempts, delay)) = parse('x') {
        RetryPolicy::fixed(delay).attempts(attempts)
    } else if let Some((attempts, base)) = parse('e') {
        RetryPolicy::exponential(base).attempts(attempts)
    } else {
        panic!("a policy is `<attempts>x<delay ms>` or `<attempts>e<base ms>`, not `{text}`")
    };
    policy.jitter(Jitter::None).idempotent(true)
}

/// A running worker process.
pub struct WorkerProcess {
    /// Its name.
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
}

impl WorkerProcess {
    /// Start `binary` (the test's `env!("CARGO_BIN_EXE_durable-worker")`) with `settings`.
    pub fn spawn(binary: &str, settings: &Settings) -> WorkerProcess {
        let mut command = Command::new(binary);
        settings.apply(&mut command);
        command.stdin(Stdio::piped()).kill_on_drop(true);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the worker process {binary}: {e}"));
        WorkerProcess {
            name: settings.name.clone(),
            stdin: child.stdin.take(),
            child,
        }
    }

    /// Kill it with SIGKILL, as a crash or the OOM killer would: no cleanup, no acknowledgement.
    pub async fn kill(mut self) {
        self.child.start_kill().expect("SIGKILL");
        let _ = self.child.wait().await;
    }

    /// Ask it to stop (close its input), and wait at most 15 s for it to finish; then kill it.
    pub async fn stop(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        match tokio::time::timeout(Duration::from_secs(15), self.child.wait()).await {
            Ok(status) => status.expect("the worker's exit status"),
            Err(_) => {
                let _ = self.child.start_kill();
                panic!("the worker process {} did not stop within 15 s", self.name);
            }
        }
    }
}
