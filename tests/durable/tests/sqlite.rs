//! `DurableRetryLayer` on the embedded SQLite queue, one worker in this process: what each
//! outcome leaves in the queue, the run log, and what the receiver saw.

use apalis_core::backend::{FetchById, TaskSink};
use apalis_core::task::Task;
use apalis_core::task::builder::TaskBuilder;
use apalis_core::task::status::Status;
use apalis_core::task::task_id::TaskId;
use apalis_sqlite::SqliteStorage;
use retry_kit::apalis::{DurableRetryLayer, Outcome, RunLog, run_log};
use retry_kit::run::operation_id;
use retry_kit::{
    AdaptiveThrottle, CircuitBreaker, ErrorClass, IdempotencyKey, Jitter, PolicyCell, RetryBudget,
    RetryPolicy, StopReason,
};
use retry_kit_durable::db::{SqliteFile, sqlite_config};
use retry_kit_durable::receiver::{Answer, Receiver, Request};
use retry_kit_durable::{Export, ExportError, Target, spawn_worker, task_id, until, worker_name};
use std::sync::Arc;
use std::time::Duration;

type Storage = SqliteStorage<Export>;

const QUEUE: &str = "exports";

async fn queue(name: &str) -> (SqliteFile, Storage) {
    let file = SqliteFile::new(name);
    let pool = file.pool().await;
    (
        file,
        SqliteStorage::new(&pool).with_config(sqlite_config(QUEUE)),
    )
}

fn export(interval: &str) -> Export {
    Export {
        interval: interval.into(),
        rows: 42,
    }
}

/// The seeds' policy: exponential from 6 s, capped at 48 s, 4 attempts, no jitter; the export
/// is idempotent (the receiver deduplicates by key).
fn seeds_policy() -> RetryPolicy {
    RetryPolicy::exponential(Duration::from_secs(6))
        .max_delay(Duration::from_secs(48))
        .jitter(Jitter::None)
        .attempts(4)
        .idempotent(true)
}

fn layer(storage: &Storage, policy: RetryPolicy) -> DurableRetryLayer<Storage> {
    DurableRetryLayer::new(policy, storage.clone()).classify_as::<ExportError>()
}

fn target(receiver: &Receiver) -> Target {
    Target {
        receiver: receiver.addr(),
        worker: worker_name("sqlite"),
    }
}

async fn push(storage: &mut Storage, task: Task<Export>) -> TaskId {
    let id = task.task_id().cloned().expect("the test names its tasks");
    storage.push_task(task).await.expect("the push");
    id
}

fn task(job: Export) -> TaskBuilder<Export> {
    TaskBuilder::new(job).task_id(task_id())
}

/// The run log once the task has ended (done, quarantined, stopped), waiting at most 20 s.
async fn ended(storage: &Storage, id: &TaskId) -> RunLog {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let log = run_log(&mut storage.clone(), id)
            .await
            .expect("a readable run log");
        if !matches!(log.outcome(), Outcome::Waiting { .. } | Outcome::Running) {
            return log;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited 20 s for task {id} to end, in vain:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn script(
    f: impl Fn(&Request) -> Answer + Send + Sync + 'static,
) -> retry_kit_durable::receiver::Script {
    Arc::new(f)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_wait_is_slept_in_the_slot_and_the_retry_sends_the_same_key() {
    let (_file, mut storage) = queue("short").await;
    let receiver = Receiver::start(script(|r| {
        if r.earlier == 0 {
            Answer::Status(503)
        } else {
            Answer::Store
        }
    }))
    .await;
    let policy = RetryPolicy::fixed(Duration::from_millis(200))
        .attempts(3)
        .idempotent(true);
    let worker = spawn_worker!(storage, layer(&storage, policy), target(&receiver), 1);
    let id = push(&mut storage, task(export("2026-12-03")).build()).await;

    let log = ended(&storage, &id).await;
    worker.stop().await;
    assert_eq!(log.outcome(), &Outcome::Done);
    assert_eq!(
        log.rows(),
        std::slice::from_ref(&id),
        "slept in the slot: no row handed back to"
    );
    assert_eq!(log.attempts(), 2);
    let seen = receiver.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].key, seen[1].key);
    assert_eq!((seen[0].attempt, seen[1].attempt), (1, 2));
    assert_eq!(receiver.ledger(|l| l.stored.len()), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_wait_hands_the_task_back_with_its_state_and_key() {
    let (_file, mut storage) = queue("long").await;
    let receiver = Receiver::start(script(|r| {
        if r.earlier == 0 {
            Answer::Status(503)
        } else {
            Answer::Store
        }
    }))
    .await;
    // A 1 s wait, longer than the 0 s the slot is held: handed back (apalis's smallest step).
    let policy = RetryPolicy::fixed(Duration::from_secs(1)).attempts(3);
    let layer = layer(&storage, policy).hold_slot_up_to(Duration::ZERO);
    let worker = spawn_worker!(storage, layer, target(&receiver), 1);
    let id = push(&mut storage, task(export("2026-12-03")).build()).await;

    let log = ended(&storage, &id).await;
    worker.stop().await;
    assert_eq!(log.outcome(), &Outcome::Done);
    assert_eq!(log.rows().len(), 2, "{log}");
    assert_eq!(log.attempts(), 2);
    let first = log.records().next().expect("the failed attempt's record");
    assert_eq!(first.number(), 1);
    assert_eq!(first.class(), Some(ErrorClass::Transient));
    assert_eq!(first.error(), Some("the receiver answered 503"));

    // The first row is done (it handed the task back); the successor carries the state.
    let root = storage.fetch_by_id(&id).await.unwrap().unwrap();
    assert_eq!(root.status(), Status::Done);
    let successor = storage.fetch_by_id(&log.rows()[1]).await.unwrap().unwrap();
    assert_eq!(successor.status(), Status::Done);
    assert!(
        successor
            .metadata()
            .get(retry_kit::apalis::STATE_KEY)
            .is_some()
    );
    assert_eq!(
        serde_json::from_slice::<Export>(&successor.args).unwrap(),
        export("2026-12-03")
    );

    let seen = receiver.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0].key, seen[1].key,
        "the successor sends the task's key"
    );
    assert_eq!(seen[0].key, log.idempotency_key().to_string());
    assert_eq!(
        (seen[0].attempt, seen[1].attempt),
        (1, 2),
        "attempts count across runs"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permanent_error_quarantines_the_task_with_its_input_and_class() {
    let (_file, mut storage) = queue("schema").await;
    let receiver = Receiver::start(script(|_| Answer::Status(422))).await;
    let worker = spawn_worker!(
        storage,
        layer(&storage, seeds_policy()),
        target(&receiver),
        1
    );
    let id = push(&mut storage, task(export("2026-12-03")).build()).await;

    let log = ended(&storage, &id).await;
    worker.stop().await;
    assert_eq!(log.outcome(), &Outcome::Quarantined, "{log}");
    assert_eq!(log.attempts(), 1);
    assert_eq!(
        log.last_error(),
        Some((ErrorClass::Permanent, "the receiver answered 422"))
    );
    assert_eq!(receiver.seen().len(), 1, "never retried");
    let row = storage.fetch_by_id(&id).await.unwrap().unwrap();
    assert_eq!(row.status(), Status::Killed);
    assert_eq!(
        serde_json::from_slice::<Export>(&row.args).unwrap(),
        export("2026-12-03")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_longer_than_the_budget_stops_the_task_with_its_input() {
    let (_file, mut storage) = queue("ratelimit").await;
    // Two hours: longer than the policy's 48 s `max_delay`.
    let receiver = Receiver::start(script(|_| Answer::RateLimit(7200))).await;
    let worker = spawn_worker!(
        storage,
        layer(&storage, seeds_policy()),
        target(&receiver),
        1
    );
    // A producer's row (apalis's default 25 attempts), and one made with `apalis::task`.
    let plain = push(&mut storage, task(export("2026-12-03")).build()).await;
    let single = push(
        &mut storage,
        retry_kit::apalis::task(export("2026-12-04"))
            .task_id(task_id())
            .build(),
    )
    .await;

    for (id, rows) in [(&plain, 2), (&single, 1)] {
        let log = ended(&storage, id).await;
        assert_eq!(
            log.outcome(),
            &Outcome::Stopped(StopReason::RetryAfterTooLong),
            "{log}"
        );
        assert_eq!(log.attempts(), 1);
        // The producer's row would be fetched again if it were `Failed` with attempts to spare:
        // the stop is recorded on a successor instead.
        assert_eq!(log.rows().len(), rows, "{log}");
        let last = storage.fetch_by_id(log.last_row()).await.unwrap().unwrap();
        assert_eq!(last.status(), Status::Failed);
        let kept: Export = serde_json::from_slice(&last.args).unwrap();
        assert_eq!(kept.rows, 42, "the input is kept");
    }
    worker.stop().await;
    assert_eq!(receiver.seen().len(), 2, "one attempt each, never retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_run_out_and_the_task_stops_distinct_from_quarantine() {
    let (_file, mut storage) = queue("exhausted").await;
    let receiver = Receiver::start(script(|_| Answer::Status(503))).await;
    let policy = RetryPolicy::fixed(Duration::from_millis(10)).attempts(3);
    let worker = spawn_worker!(storage, layer(&storage, policy), target(&receiver), 1);
    let id = push(&mut storage, task(export("2026-12-03")).build()).await;

    let log = ended(&storage, &id).await;
    worker.stop().await;
    assert_eq!(
        log.outcome(),
        &Outcome::Stopped(StopReason::AttemptsExhausted),
        "{log}"
    );
    assert_eq!(log.attempts(), 3);
    assert_eq!(log.records().count(), 3);
    assert_eq!(receiver.seen().len(), 3);
    let text = log.to_string();
    assert!(
        text.contains("stopped (attempts_exhausted) after 3 attempts"),
        "{text}"
    );
    assert!(
        text.contains("last error (transient): the receiver answered 503"),
        "{text}"
    );
    assert!(text.contains("next: resume it"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_accepts_then_drops_the_connection_holds_one_export() {
    let (_file, mut storage) = queue("dropped").await;
    let receiver = Receiver::start(script(|r| {
        if r.earlier == 0 {
            Answer::StoreThenDrop
        } else {
            Answer::Store
        }
    }))
    .await;
    let policy = RetryPolicy::fixed(Duration::from_millis(10))
        .attempts(3)
        .idempotent(true);
    let worker = spawn_worker!(storage, layer(&storage, policy), target(&receiver), 1);
    let id = push(&mut storage, task(export("2026-12-03")).build()).await;

    let log = ended(&storage, &id).await;
    worker.stop().await;
    assert_eq!(log.outcome(), &Outcome::Done, "{log}");
    assert_eq!(log.attempts(), 2);
    let seen = receiver.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].key, seen[1].key);
    receiver.ledger(|l| {
        assert_eq!(l.stored.len(), 1, "one export");
        assert_eq!(l.repeats, 1, "the retry was recognised by its key");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outcome_unknown_is_not_retried_unless_the_policy_is_idempotent() {
    let (_file, mut storage) = queue("notidem").await;
    let receiver = Receiver::start(script(|_| Answer::StoreThenDrop)).await;
    let policy = RetryPolicy::fixed(Duration::from_millis(10)).attempts(3);
    let worker = spawn_worker!(storage, layer(&storage, policy), target(&receiver), 1);
    let id = push(&mut storage, task(export("2026-12-03")).build()).await;

    let log = ended(&storage, &id).await;
    worker.stop().await;
    assert_eq!(
        log.outcome(),
        &Outcome::Stopped(StopReason::NotIdempotent),
        "{log}"
    );
    assert_eq!(
        log.last_error().map(|e| e.0),
        Some(ErrorClass::IdempotentOnly)
    );
    assert_eq!(receiver.seen().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_is_the_producers_identity_for_the_task() {
    let (_file, mut storage) = queue("identity").await;
    let receiver = Receiver::storing().await;
    let worker = spawn_worker!(
        storage,
        layer(&storage, seeds_policy()),
        target(&receiver),
        1
    );
    let named = push(
        &mut storage,
        task(export("2026-12-03"))
            .idempotency_key("2026-12-03/billing-export")
            .build(),
    )
    .await;
    let unnamed = push(&mut storage, task(export("2026-12-04")).build()).await;

    ended(&storage, &named).await;
    ended(&storage, &unnamed).await;
    worker.stop().await;
    let op = operation_id("retry_kit::apalis");
    let keys: Vec<String> = receiver.seen().into_iter().map(|s| s.key).collect();
    let expected = [
        IdempotencyKey::of(&(QUEUE, "2026-12-03/billing-export"), op).to_string(),
        IdempotencyKey::of(&(QUEUE, unnamed.to_string().as_str()), op).to_string(),
    ];
    assert_eq!(keys.len(), 2);
    for key in expected {
        assert!(keys.contains(&key), "{key} not in {keys:?}");
    }
}

static BREAKER: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(60));

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_breaker_hands_the_task_back_without_an_attempt() {
    let (_file, mut storage) = queue("breaker").await;
    let receiver = Receiver::start(script(|_| Answer::Status(503))).await;
    let policy = RetryPolicy::fixed(Duration::from_secs(30)).attempts(5);
    let layer = layer(&storage, policy).circuit(&BREAKER);
    let worker = spawn_worker!(storage, layer, target(&receiver), 1);
    // The first fails once (opening the breaker) and is handed back for 30 s; the second
    // finds the breaker open and is handed back without being tried.
    let first = push(&mut storage, task(export("2026-12-03")).build()).await;
    let mut logs = Vec::new();
    until(
        Duration::from_secs(20),
        "the first task to be handed back",
        || {
            let (mut storage, id) = (storage.clone(), first.clone());
            async move { run_log(&mut storage, &id).await.unwrap().rows().len() == 2 }
        },
    )
    .await;
    let second = push(&mut storage, task(export("2026-12-04")).build()).await;
    until(
        Duration::from_secs(20),
        "the second task to be handed back",
        || {
            let (mut storage, id) = (storage.clone(), second.clone());
            async move { run_log(&mut storage, &id).await.unwrap().rows().len() == 2 }
        },
    )
    .await;
    worker.stop().await;
    for id in [&first, &second] {
        logs.push(run_log(&mut storage, id).await.unwrap());
    }
    assert_eq!(logs[0].attempts(), 1);
    assert_eq!(
        logs[1].attempts(),
        0,
        "no attempt while the breaker is open: {}",
        logs[1]
    );
    assert!(matches!(logs[1].outcome(), Outcome::Waiting { .. }));
    assert_eq!(receiver.seen().len(), 1);
}

/// Rejects all but about one attempt in a million once its window holds a million requests
/// and no accepts; an hour's window, so the test's run stays inside it.
static REJECTING: AdaptiveThrottle = AdaptiveThrottle::new(2.0, Duration::from_secs(3600));
/// Lets every attempt through until the backend stops accepting.
static ADMITTING: AdaptiveThrottle = AdaptiveThrottle::new(2.0, Duration::from_secs(3600));

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttle_in_the_budgets_place_hands_back_what_it_rejects_and_hears_what_is_accepted() {
    for _ in 0..1_000_000 {
        REJECTING.record(false);
    }
    let (_file, mut storage) = queue("throttle").await;
    let receiver = Receiver::start(script(|r| match r.interval.as_str() {
        "2026-12-03" => Answer::Status(422),
        _ => Answer::Store,
    }))
    .await;

    // Rejected: no attempt is made, the task waits in the queue for the throttle.
    let rejecting = layer(&storage, seeds_policy()).budget(&REJECTING);
    let worker = spawn_worker!(storage, rejecting, target(&receiver), 1);
    let rejected = push(&mut storage, task(export("2026-12-01")).build()).await;
    until(
        Duration::from_secs(20),
        "the rejected task to be handed back",
        || {
            let (mut storage, id) = (storage.clone(), rejected.clone());
            async move { run_log(&mut storage, &id).await.unwrap().rows().len() == 2 }
        },
    )
    .await;
    worker.stop().await;
    let log = run_log(&mut storage, &rejected).await.unwrap();
    assert_eq!(log.attempts(), 0, "no attempt the throttle rejected: {log}");
    assert!(matches!(log.outcome(), Outcome::Waiting { .. }), "{log}");
    assert!(receiver.seen().is_empty());

    // Admitted: a success and a permanent error are both answers the backend accepted.
    let admitting = layer(&storage, seeds_policy()).budget(&ADMITTING);
    let worker = spawn_worker!(storage, admitting, target(&receiver), 1);
    let stored = push(&mut storage, task(export("2026-12-02")).build()).await;
    let refused = push(&mut storage, task(export("2026-12-03")).build()).await;
    assert_eq!(ended(&storage, &stored).await.outcome(), &Outcome::Done);
    assert_eq!(
        ended(&storage, &refused).await.outcome(),
        &Outcome::Quarantined
    );
    worker.stop().await;
    assert_eq!(ADMITTING.counts_now(), (2, 2), "requests and accepts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_cell_reload_reaches_the_next_run() {
    let (_file, mut storage) = queue("cell").await;
    // Every interval fails once, then is stored.
    let receiver = Receiver::start(script(|r| match r.earlier {
        0 => Answer::Status(503),
        _ => Answer::Store,
    }))
    .await;
    // A cell made at run time, as one per downstream read from a config map would be.
    let cell = Arc::new(PolicyCell::new(
        RetryPolicy::fixed(Duration::ZERO).attempts(1),
    ));
    let layer = DurableRetryLayer::from_cell(Arc::clone(&cell), storage.clone())
        .classify_as::<ExportError>();
    let worker = spawn_worker!(storage, layer, target(&receiver), 1);
    let first = push(&mut storage, task(export("2026-12-01")).build()).await;
    let log = ended(&storage, &first).await;
    assert_eq!(
        log.outcome(),
        &Outcome::Stopped(StopReason::AttemptsExhausted),
        "{log}"
    );
    assert_eq!(log.attempts(), 1);

    cell.set(RetryPolicy::fixed(Duration::ZERO).attempts(2));
    let second = push(&mut storage, task(export("2026-12-02")).build()).await;
    let log = ended(&storage, &second).await;
    worker.stop().await;
    assert_eq!(log.outcome(), &Outcome::Done, "{log}");
    assert_eq!(log.attempts(), 2, "the reloaded policy's second attempt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_task_resumes_with_its_input_and_key() {
    let (_file, mut storage) = queue("resume").await;
    let receiver = Receiver::start(script(|r| {
        if r.earlier == 0 {
            Answer::RateLimit(7200)
        } else {
            Answer::Store
        }
    }))
    .await;
    let worker = spawn_worker!(
        storage,
        layer(&storage, seeds_policy()),
        target(&receiver),
        1
    );
    let id = push(&mut storage, task(export("2026-12-03")).build()).await;
    let stopped = ended(&storage, &id).await;
    assert_eq!(
        stopped.outcome(),
        &Outcome::Stopped(StopReason::RetryAfterTooLong)
    );

    let resumed = retry_kit::apalis::resume(&mut storage, &id)
        .await
        .expect("resumed");
    let log = ended(&storage, &id).await;
    worker.stop().await;
    assert_eq!(log.outcome(), &Outcome::Done, "{log}");
    assert_eq!(log.last_row(), &resumed);
    assert_eq!(log.idempotency_key(), stopped.idempotency_key());
    let seen = receiver.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0].key, seen[1].key,
        "the resumed run sends the task's key"
    );
    assert_eq!(receiver.ledger(|l| l.stored.len()), 1);
    // Only a stopped task resumes.
    let again = retry_kit::apalis::resume(&mut storage, &id)
        .await
        .unwrap_err();
    assert!(again.to_string().contains("only a stopped task"), "{again}");
}

/// Two tokens: one failure leaves too few for a retry.
static BUDGET: RetryBudget = RetryBudget::new(2, 0.1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_budget_releases_the_slot_then_stops_the_task() {
    let (_file, mut storage) = queue("budget").await;
    let receiver = Receiver::start(script(|_| Answer::Status(503))).await;
    let policy = RetryPolicy::fixed(Duration::from_millis(10)).attempts(5);
    let layer = layer(&storage, policy).budget(&BUDGET);
    let worker = spawn_worker!(storage, layer, target(&receiver), 1);
    let id = push(&mut storage, task(export("2026-12-03")).build()).await;

    let log = ended(&storage, &id).await;
    worker.stop().await;
    // The 10 ms retry was not slept in the slot (the budget refused it): handed back; when
    // it came up the budget still refused, and the task stopped, resumable.
    assert_eq!(
        log.outcome(),
        &Outcome::Stopped(StopReason::BudgetExhausted),
        "{log}"
    );
    assert_eq!(log.attempts(), 1);
    assert!(
        log.rows().len() >= 2,
        "handed back before it stopped: {log}"
    );
    assert_eq!(receiver.seen().len(), 1);
}
