//! [`DurableRetry`]: one task's run under the layer, from reading its state to the status its
//! row is stored with.

use super::classify::Read;
use super::identity::{OPERATION, successor_id, task_key};
use super::in_attempt::InAttempt;
use super::layer::{DurableRetryLayer, Settings};
use super::metadata::{STATE_KEY, with_state};
use super::outcome::{Ended, HandedBack};
use crate::class::ErrorClass;
use crate::clock;
use crate::context::{CallCtx, IdempotencyKey};
use crate::durable::{Plan, RetryState};
use crate::policy::RetryPolicy;
use crate::stop::StopReason;
use apalis_core::backend::finalize::Durable;
use apalis_core::backend::{FetchById, TaskSink};
use apalis_core::error::BoxDynError;
use apalis_core::task::builder::TaskBuilder;
use apalis_core::task::metadata::Metadata;
use apalis_core::task::status::Status;
use apalis_core::task::task_id::TaskId;
use apalis_core::task::{ExecutionContext, Task};
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tower_service::Service;

/// The service [`DurableRetryLayer`](super::DurableRetryLayer) wraps a worker's handler in.
/// Plumbing: a worker names it only through the layer.
#[derive(Clone)]
pub struct DurableRetry<Inner, S> {
    pub(crate) inner: Inner,
    pub(crate) storage: S,
    pub(crate) settings: Arc<Settings>,
}

/// The layer makes the service, here beside it: the service holds the layer's settings, so
/// the layer's own file need not know the service.
impl<Inner, S: Clone> tower_layer::Layer<Inner> for DurableRetryLayer<S> {
    type Service = DurableRetry<Inner, S>;

    fn layer(&self, inner: Inner) -> Self::Service {
        DurableRetry {
            inner,
            storage: self.storage.clone(),
            settings: Arc::clone(&self.settings),
        }
    }
}

impl<Inner, S> std::fmt::Debug for DurableRetry<Inner, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableRetry").finish_non_exhaustive()
    }
}

/// The future of one task's run (boxed: it awaits the handler, sleeps and database calls).
pub type RunFuture<R> = Pin<Box<dyn Future<Output = Result<R, BoxDynError>> + Send>>;

impl<Inner, S, Args> Service<Task<Args>> for DurableRetry<Inner, S>
where
    Inner: Service<Task<Args>> + Clone + Send + 'static,
    Inner::Error: Into<BoxDynError>,
    Inner::Future: Send + 'static,
    Inner::Response: Send + 'static,
    S: TaskSink<Args, Durable> + FetchById + Clone + Send + 'static,
    Args: Clone + Send + Sync + 'static,
{
    type Response = Inner::Response;
    type Error = BoxDynError;
    type Future = RunFuture<Inner::Response>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxDynError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, task: Task<Args>) -> Self::Future {
        // tower's rule: the instance polled ready serves this call; a clone waits for the next.
        let fresh = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, fresh);
        let run = Run {
            inner,
            storage: self.storage.clone(),
            settings: Arc::clone(&self.settings),
        };
        Box::pin(run.task(task))
    }
}

/// What a run of the policy decided once the slot is to be given up.
enum Next {
    /// Hand the task back to run after `wait`, because of `why`.
    HandBack { wait: Duration, why: String },
    /// The task ends: quarantined, stopped or done.
    End(Plan),
}

struct Run<Inner, S> {
    inner: Inner,
    storage: S,
    settings: Arc<Settings>,
}

impl<Inner, S> Run<Inner, S> {
    async fn task<Args>(mut self, task: Task<Args>) -> Result<Inner::Response, BoxDynError>
    where
        Inner: Service<Task<Args>>,
        Inner::Error: Into<BoxDynError>,
        S: TaskSink<Args, Durable> + FetchById,
        Args: Clone,
    {
        let ctx = Arc::clone(task.ctx());
        let Some(id) = ctx.task_id().cloned() else {
            return Err(
                "retry-kit: apalis gave this task no id; DurableRetryLayer needs a \
                        backend that stores its tasks by id, such as apalis-sqlite or \
                        apalis-postgres"
                    .into(),
            );
        };
        let mut state = match RetryState::extract(ctx.metadata()) {
            Ok(state) => state,
            Err(e) => {
                // Running it again would start its attempts and key afresh: set it aside.
                ctx.raw_status().store(Status::Killed);
                return Err(format!(
                    "retry-kit: the retry state stored with task {id} under `{STATE_KEY}` \
                     cannot be read ({e}); the task is set aside (Killed) with its input"
                )
                .into());
            }
        };
        let key = *state.key.get_or_insert_with(|| task_key(&ctx, &id));
        let mut row = Row {
            ctx: &ctx,
            id,
            key,
            args: &task.args,
        };

        // A row pushed only to record how the task ended (see `end`).
        if let Some(plan) = recorded_end(&state) {
            ctx.raw_status().store(status_of(plan));
            return Err(Box::new(Ended { state, plan }));
        }
        if ctx.attempt() > 0 {
            // Fetched before: re-enqueued after its worker died, or fetched again by apalis.
            // If that run got as far as handing the task back, it goes on as its successor.
            let successor = successor_id(key, &row.id);
            if fetch(&mut self.storage, &successor).await?.is_some() {
                ctx.raw_status().store(Status::Done);
                return Err(Box::new(HandedBack {
                    successor,
                    run_at: clock::wall_now(),
                    why: "an earlier run of this row, cut short, had handed the task back".into(),
                    to_record_end: false,
                }));
            }
        }
        let settings = Arc::clone(&self.settings);
        // Read once per run: a reload reaches the task's next run, never the middle of one.
        let policy = &settings.policy.current();
        // A handed-back task's first attempt here is a retry: the budget may refuse it.
        if state.attempts() > 0 && settings.budget.is_some_and(|b| !b.allows_retry()) {
            set_last_next(&mut state, Plan::Stop(StopReason::BudgetExhausted));
            return self
                .end(&mut row, state, Plan::Stop(StopReason::BudgetExhausted))
                .await;
        }

        let next = loop {
            let permit = match settings.circuit.map(|b| b.try_acquire()) {
                None => None,
                Some(Ok(permit)) => Some(permit),
                Some(Err(open)) => {
                    break Next::HandBack {
                        wait: open.retry_after(),
                        why: "the circuit breaker is open".into(),
                    };
                }
            };
            // After the breaker, as in the engine: a request the breaker refuses is not one
            // the throttle counts. Rejected, no attempt is made and the slot is released.
            if let Some(throttle) = settings.throttle {
                if let Err(rejected) = throttle.try_admit() {
                    drop(permit);
                    break Next::HandBack {
                        wait: rejected.retry_after(),
                        why: "the adaptive throttle rejected the attempt".into(),
                    };
                }
            }
            state.start_attempt();
            let attempt = CallCtx::persisted(
                key,
                state.attempts().saturating_add(1),
                deadline(policy, &state),
                OPERATION,
            );
            poll_fn(|cx| self.inner.poll_ready(cx))
                .await
                .map_err(Into::into)?;
            let result = InAttempt::new(attempt, self.inner.call(task.clone()))
                .await
                .map_err(Into::into);
            let error: BoxDynError = match result {
                Ok(response) => {
                    if let Some(permit) = permit {
                        permit.succeeded();
                    }
                    if let Some(budget) = settings.budget {
                        budget.record_success();
                    }
                    if let Some(throttle) = settings.throttle {
                        throttle.accepted();
                    }
                    return Ok(response);
                }
                Err(e) => e,
            };
            let (class, retry_after) = ((settings.class)(&error), (settings.retry_after)(&error));
            if let Some(permit) = permit {
                permit.record(class);
            }
            let retryable = matches!(class, ErrorClass::Transient | ErrorClass::IdempotentOnly);
            if let Some(budget) = settings.budget {
                if retryable {
                    budget.record_failure();
                }
            }
            // A permanent error is an answer: the backend accepted the request.
            if let (Some(throttle), false) = (settings.throttle, retryable) {
                throttle.accepted();
            }
            let read = Read {
                error: &error,
                class,
                retry_after,
            };
            match policy.plan(&mut state, &read) {
                Plan::Retry { after } => {
                    let budget_allows = settings.budget.is_none_or(|b| b.allows_retry());
                    if after <= settings.hold && budget_allows {
                        if !after.is_zero() && !clock::virtual_sleep(after) {
                            clock::tokio_sleep(after).await;
                        }
                        continue;
                    }
                    let mut why = format!("attempt {} failed ({class}): {error}", state.attempts());
                    if !budget_allows {
                        why.push_str("; the retry budget is spent, so the slot is released");
                    }
                    break Next::HandBack { wait: after, why };
                }
                plan => break Next::End(plan),
            }
        };
        match next {
            Next::HandBack { wait, why } => {
                self.hand_back(&mut row, state, policy, wait, why).await
            }
            Next::End(plan) => self.end(&mut row, state, plan).await,
        }
    }

    /// Give the slot up: push the successor (the same input, the state, due after `wait`),
    /// then let this row be stored `Done`. The push is committed before this run's future
    /// ends, and apalis acknowledges the row only after that: a crash between the two runs the
    /// task again with the same key, never not at all.
    async fn hand_back<Args, R>(
        &mut self,
        row: &mut Row<'_, Args>,
        mut state: RetryState,
        policy: &RetryPolicy,
        wait: Duration,
        why: String,
    ) -> Result<R, BoxDynError>
    where
        S: TaskSink<Args, Durable> + FetchById,
        Args: Clone,
    {
        if let (Some(deadline), Some(started)) = (policy.deadline, state.started()) {
            // A wait the policy's plan did not weigh (an open breaker's) must end within the
            // deadline too.
            let elapsed = clock::wall_now()
                .duration_since(started)
                .unwrap_or_default();
            if elapsed.saturating_add(wait) > deadline {
                set_last_next(&mut state, Plan::Stop(StopReason::DeadlineExceeded));
                return self
                    .end(row, state, Plan::Stop(StopReason::DeadlineExceeded))
                    .await;
            }
        }
        let run_at = whole_seconds_after(clock::wall_now(), wait);
        state.resume_at = Some(run_at);
        let successor = successor_id(row.key, &row.id);
        self.push(row, &successor, &state, run_at, 1).await?;
        row.ctx.raw_status().store(Status::Done);
        Err(Box::new(HandedBack {
            successor,
            run_at,
            why,
            to_record_end: false,
        }))
    }

    /// The task ends with `plan`: quarantined (`Killed`), done (`Done`) or stopped
    /// (`Failed`). apalis fetches a `Failed` row again while its attempts are below its
    /// `max_attempts`; a row with attempts to spare (a producer's row with apalis's default
    /// 25) hands the stop to a successor that records it instead, whose `max_attempts` of 0
    /// makes its `Failed` final.
    async fn end<Args, R>(
        &mut self,
        row: &mut Row<'_, Args>,
        state: RetryState,
        plan: Plan,
    ) -> Result<R, BoxDynError>
    where
        S: TaskSink<Args, Durable> + FetchById,
        Args: Clone,
    {
        let status = status_of(plan);
        let max = row.ctx.max_attempts();
        if status == Status::Failed && max.is_none_or(|max| row.ctx.attempt() < max) {
            let successor = successor_id(row.key, &row.id);
            let now = whole_seconds_after(clock::wall_now(), Duration::ZERO);
            self.push(row, &successor, &state, now, 0).await?;
            row.ctx.raw_status().store(Status::Done);
            let Plan::Stop(reason) = plan else {
                unreachable!("only a stop is stored Failed")
            };
            return Err(Box::new(HandedBack {
                successor,
                run_at: now,
                why: format!("stopped ({reason}) after attempt {}", state.attempts()),
                to_record_end: true,
            }));
        }
        row.ctx.raw_status().store(status);
        Err(Box::new(Ended { state, plan }))
    }

    /// Push the successor `id` of `row`, with `state`, due at `run_at`, allowed
    /// `max_attempts` by apalis. A push that fails is tried again twice; one that fails because
    /// the row is there already (a repeated run's, after a crash: PostgreSQL refuses the second
    /// insert, SQLite ignores it) has succeeded.
    async fn push<Args>(
        &mut self,
        row: &Row<'_, Args>,
        id: &TaskId,
        state: &RetryState,
        run_at: SystemTime,
        max_attempts: usize,
    ) -> Result<(), BoxDynError>
    where
        S: TaskSink<Args, Durable> + FetchById,
        Args: Clone,
    {
        let metadata = with_state(row.ctx.metadata(), state)?;
        let mut builder = TaskBuilder::new(row.args.clone())
            .task_id(id.clone())
            .run_at_timestamp(unix_seconds(run_at))
            .max_attempts(max_attempts)
            .idempotency_key(format!("retry-kit:{id}"))
            .with_metadata(metadata);
        if let Some(priority) = row.ctx.priority() {
            builder = builder.priority(priority);
        }
        let successor = builder.build();
        let mut failure = String::new();
        for pause in [
            Duration::ZERO,
            Duration::from_millis(100),
            Duration::from_millis(500),
        ] {
            if !pause.is_zero() {
                clock::tokio_sleep(pause).await;
            }
            match self.storage.push_task(successor.clone()).await {
                Ok(()) => return Ok(()),
                Err(e) => failure = e.to_string(),
            }
            if matches!(fetch(&mut self.storage, id).await, Ok(Some(_))) {
                return Ok(());
            }
        }
        // Not handed back: apalis fetches this row again while its attempts are below its
        // `max_attempts` (a producer's row); a successor's row stays failed, input kept.
        row.ctx.raw_status().store(Status::Failed);
        Err(format!(
            "retry-kit: could not hand task {} back to the queue as task {id} ({failure}); \
             it is stored failed with its input, and apalis runs it again if its attempts \
             allow",
            row.id
        )
        .into())
    }
}

/// The row being run.
struct Row<'a, Args> {
    ctx: &'a ExecutionContext,
    id: TaskId,
    key: IdempotencyKey,
    args: &'a Args,
}

/// The status a row ends with for `plan`.
fn status_of(plan: Plan) -> Status {
    match plan {
        Plan::Quarantine => Status::Killed,
        Plan::Stop(_) => Status::Failed,
        _ => Status::Done,
    }
}

/// How the task ended, if `state`'s last attempt ended it (a row that records the end).
fn recorded_end(state: &RetryState) -> Option<Plan> {
    match state.run_log().next_back()?.next() {
        plan @ (Plan::Quarantine | Plan::Stop(_)) => Some(plan),
        _ => None,
    }
}

/// Record `next` as what came after the last attempt (a stop decided without an attempt).
fn set_last_next(state: &mut RetryState, next: Plan) {
    if let Some(last) = state.tail.back_mut().or(state.head.last_mut()) {
        last.next = next;
    }
    state.resume_at = None;
}

/// The policy's deadline, counted from the task's first attempt on the wall clock, as an
/// instant on this process's clock: what retryable calls inside the handler inherit.
fn deadline(policy: &crate::policy::RetryPolicy, state: &RetryState) -> Option<std::time::Instant> {
    let (deadline, started) = (policy.deadline?, state.started()?);
    let elapsed = clock::wall_now()
        .duration_since(started)
        .unwrap_or_default();
    Some(clock::saturating_add(
        clock::now(),
        deadline.saturating_sub(elapsed),
    ))
}

/// `now + wait`, rounded up to a whole second: apalis stores `run_at` in seconds, and a task
/// must not run before its wait is over.
fn whole_seconds_after(now: SystemTime, wait: Duration) -> SystemTime {
    let due = now.checked_add(wait).unwrap_or(now);
    let since = due.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() + u64::from(since.subsec_nanos() > 0);
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn unix_seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

async fn fetch<S: FetchById>(storage: &mut S, id: &TaskId) -> Result<Option<S::Task>, BoxDynError> {
    storage.fetch_by_id(id).await.map_err(|e| {
        format!("retry-kit: could not read task {id} from the queue's storage: {e}").into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handed_back_task_is_never_due_before_its_wait_is_over() {
        let at = |secs: u64, nanos: u32| UNIX_EPOCH + Duration::new(secs, nanos);
        // apalis counts whole seconds: a wait ending inside a second is due at its end.
        assert_eq!(
            whole_seconds_after(at(100, 0), Duration::from_millis(10)),
            at(101, 0)
        );
        assert_eq!(
            whole_seconds_after(at(100, 500_000_000), Duration::from_millis(500)),
            at(101, 0)
        );
        assert_eq!(whole_seconds_after(at(100, 1), Duration::ZERO), at(101, 0));
        assert_eq!(
            whole_seconds_after(at(100, 0), Duration::from_secs(3600)),
            at(3700, 0)
        );
    }

    #[test]
    fn a_row_records_an_end_only_when_its_last_attempt_ended_the_task() {
        let policy = crate::RetryPolicy::fixed(Duration::from_secs(5)).attempts(2);
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        let mut state = RetryState::default();
        assert_eq!(recorded_end(&state), None);
        policy.plan(&mut state, &reset);
        assert_eq!(recorded_end(&state), None, "a retry is no end");
        policy.plan(&mut state, &reset);
        assert_eq!(
            recorded_end(&state),
            Some(Plan::Stop(StopReason::AttemptsExhausted))
        );
        let mut state = RetryState::default();
        policy.plan(&mut state, &reset);
        set_last_next(&mut state, Plan::Stop(StopReason::BudgetExhausted));
        assert_eq!(
            recorded_end(&state),
            Some(Plan::Stop(StopReason::BudgetExhausted))
        );
        assert_eq!(state.resume_at(), None);
    }
}
