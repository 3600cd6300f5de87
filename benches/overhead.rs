//! What retrying costs when nothing fails, and when it fails twice: `#[retryable]` and the
//! non-macro form against a hand-written loop (the floor) and the popular crates, in one run.
//!
//! Run with `bash benches/run.sh` (see benches/README.md), which runs this twice and prints the
//! medians and ratios; `cargo bench -p retry-kit-benches --bench overhead`
//! alone gives criterion's own report. With `--features metrics` and `RETRY_KIT_RECORDER=1`, the
//! cases run with a recorder installed as the global one.
//!
//! Async cases run on a current-thread tokio runtime with its clock paused: on a real clock
//! tokio rounds a zero-length sleep up to its 1 ms timer tick, so a crate that sleeps for zero
//! would measure the tick rather than its own cost. The success cases poll the future once with
//! a no-op waker inside the runtime (a `block_on` would cost more than what is measured); the
//! retry3 cases use `block_on`, the same for every contender.

#[macro_use]
mod cases;
#[cfg(feature = "metrics")]
mod map_recorder;

use cases::*;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

fn overhead(c: &mut Criterion) {
    // `RETRY_KIT_RECORDER=1` (with `--features metrics`): measure with a recorder installed as
    // the global one (see `map_recorder.rs`), what a service with an exporter pays.
    #[cfg(feature = "metrics")]
    if std::env::var_os("RETRY_KIT_RECORDER").is_some() {
        metrics::set_global_recorder(map_recorder::MapRecorder::default())
            .expect("the only global recorder");
    }
    let rt = paused_runtime();
    // Entered once for every case: see `poll_ready`.
    let _in_runtime = rt.enter();
    macro_rules! time {
        ($group:expr, $name:literal, sync($f:expr)) => {{
            let f = $f;
            c.benchmark_group($group)
                .bench_function($name, |b| b.iter(|| black_box(f())));
        }};
        ($group:expr, $name:literal, async($f:expr)) => {{
            let f = $f;
            let rt = &rt;
            c.benchmark_group($group)
                .bench_function($name, |b| b.iter(|| black_box(f(rt))));
        }};
    }
    for_each_case!(time);
}

criterion_group! {
    name = benches;
    // Short runs: the whole matrix takes a few minutes; `run.sh` repeats it for medians.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .without_plots();
    targets = overhead
}
criterion_main!(benches);
