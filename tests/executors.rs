//! Async retries on an executor that is not tokio: the default sleep is tokio's inside a tokio
//! runtime and a portable timer elsewhere, so the first retry does not panic with "there is no
//! reactor running". The waits here are 1 ms of real time: the portable timer is what is
//! under test, and the assertions are about outcomes, never durations.
#![deny(warnings, unused_qualifications)]

use retry_kit::{Classify, Retry, RetryPolicy, retryable};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Duration;

/// The smallest executor: poll on this thread, park until woken.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

#[derive(Debug, PartialEq, Classify)]
#[classify(transient)]
struct Flaky;

#[retryable(attempts = 4, backoff = "fixed", base = "1ms")]
async fn flaky(calls: &mut u32) -> Result<u32, Flaky> {
    *calls += 1;
    if *calls < 3 { Err(Flaky) } else { Ok(*calls) }
}

#[test]
fn a_retryable_async_fn_retries_on_an_executor_that_is_not_tokio() {
    // Before the fix the first retry panicked: "there is no reactor running".
    let mut calls = 0;
    assert_eq!(block_on(flaky(&mut calls)), Ok(3));
    assert_eq!(calls, 3);
}

#[test]
fn the_builder_retries_on_an_executor_that_is_not_tokio() {
    let policy = RetryPolicy::fixed(Duration::from_millis(1)).attempts(3);
    let mut calls = 0;
    let result: Result<u32, Flaky> = block_on(Retry::new(&policy).call_async(|| {
        calls += 1;
        let n = calls;
        async move { if n < 2 { Err(Flaky) } else { Ok(n) } }
    }));
    assert_eq!(result, Ok(2));
}

#[test]
fn many_sleeps_on_other_threads_are_each_woken() {
    // The portable timer is one thread for every sleep in the process.
    let threads: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(|| {
                let mut calls = 0;
                block_on(flaky(&mut calls))
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), Ok(3));
    }
}
