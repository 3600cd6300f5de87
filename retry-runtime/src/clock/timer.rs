//! A timer that needs no async runtime: what the default async sleep uses when no tokio
//! runtime is current (a `futures` executor, smol, async-std), so a retry sleeps correctly on
//! any executor instead of panicking at the first failure. One background thread, started on
//! first use, keeps the deadlines in order and wakes each sleep's task when its time comes.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// A sleep until a deadline on the system's clock, woken by the timer thread.
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    deadline: Instant,
    /// Its registration with the timer thread, once it has waited.
    id: Option<u64>,
}

impl Sleep {
    /// A sleep of `d` from now (saturating: a wait too long to represent never ends).
    pub fn new(d: Duration) -> Self {
        let now = Instant::now();
        Sleep {
            deadline: now.checked_add(d).unwrap_or_else(|| far_future(now)),
            id: None,
        }
    }
}

/// About thirty years from `now`: as good as never, and representable.
fn far_future(now: Instant) -> Instant {
    now.checked_add(Duration::from_secs(86_400 * 365 * 30))
        .unwrap_or(now)
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            if let Some(id) = self.id.take() {
                timer().cancel(id);
            }
            return Poll::Ready(());
        }
        let deadline = self.deadline;
        timer().register(deadline, &mut self.id, cx.waker());
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            timer().cancel(id);
        }
    }
}

/// The timer thread's state.
struct Timer {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Deadlines in order, earliest first; an entry whose waker is gone is skipped.
    queue: BinaryHeap<Reverse<(Instant, u64)>>,
    wakers: HashMap<u64, Waker>,
    next_id: u64,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<&'static Timer> = OnceLock::new();
    TIMER.get_or_init(|| {
        let timer: &'static Timer = Box::leak(Box::new(Timer {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        }));
        // If the thread cannot be started, sleeps are still correct, only never woken by
        // it: registering wakes the task at once instead (see `register`).
        let started = std::thread::Builder::new()
            .name("retry-kit-timer".into())
            .spawn(move || timer.run());
        if started.is_err() {
            timer.lock().next_id = u64::MAX;
        }
        timer
    })
}

impl Timer {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while the lock is held but `Waker::clone`; the state is consistent
        // between statements, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wake `waker` at `deadline`; `id` is the sleep's registration (made here the first time).
    fn register(&self, deadline: Instant, id: &mut Option<u64>, waker: &Waker) {
        let mut state = self.lock();
        if state.next_id == u64::MAX {
            // No timer thread: poll again at once (a busy wait, but never a lost wake-up).
            drop(state);
            waker.wake_by_ref();
            return;
        }
        let key = *id.get_or_insert_with(|| {
            state.next_id += 1;
            state.next_id
        });
        match state.wakers.get_mut(&key) {
            Some(registered) => registered.clone_from(waker),
            None => {
                // New, or woken already and polled early: queue it (again).
                state.wakers.insert(key, waker.clone());
                let earliest = state
                    .queue
                    .peek()
                    .is_none_or(|Reverse((first, _))| deadline < *first);
                state.queue.push(Reverse((deadline, key)));
                if earliest {
                    self.changed.notify_one();
                }
            }
        }
    }

    fn cancel(&self, id: u64) {
        self.lock().wakers.remove(&id);
    }

    fn run(&self) {
        let mut state = self.lock();
        loop {
            let now = Instant::now();
            let mut due = Vec::new();
            while let Some(&Reverse((deadline, id))) = state.queue.peek() {
                if deadline > now {
                    break;
                }
                state.queue.pop();
                if let Some(waker) = state.wakers.remove(&id) {
                    due.push(waker);
                }
            }
            if !due.is_empty() {
                drop(state);
                due.into_iter().for_each(Waker::wake);
                state = self.lock();
                continue;
            }
            state = match state.queue.peek() {
                Some(&Reverse((deadline, _))) => {
                    let wait = deadline.saturating_duration_since(now);
                    self.changed
                        .wait_timeout(state, wait)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
                None => self.changed.wait(state).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }
}
