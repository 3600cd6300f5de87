//! The tables of benches/README.md, from the same cases as `overhead.rs`:
//!
//! 1. allocations per call of every contender in every case, counted by a global allocator;
//! 2. `size_of_val` of each async retry future over the future it retries, with a 16 B and a
//!    1 KiB inner future;
//! 3. the medians and ratios to the hand loop of the timing runs saved by `run.sh` (criterion
//!    baselines named `run*`), with the targets checked.
//!
//! `--only GROUP/CONTENDER --iters N` instead runs that one case N times and prints nothing, for
//! counting instructions under callgrind (`benches/instructions.sh`); `--sizes` prints only the
//! future sizes. With the `metrics` feature, `--recorder` first installs a recorder as the
//! global one (otherwise measurements go to the facade's no-op recorder): a map of counters
//! behind a read-write lock, as exporters keep them (Prometheus's starts a clock whose
//! calibration spins for a varying time, which callgrind would count in with the case).

#[macro_use]
mod cases;

use cases::*;
use retry_kit::retryable;
use std::collections::BTreeMap;
use std::future::Future;
use std::hint::black_box;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

mod breaker_peers;
mod callgrind_args;
mod counting;
mod hand_policy;
mod layer_cases;
#[cfg(feature = "metrics")]
mod map_recorder;

#[global_allocator]
static GLOBAL: counting::Counting = counting::Counting;

/// The column order of every table.
const CONTENDERS: [&str; 8] = [
    "hand",
    "hand+ctx",
    "macro",
    "fn",
    "backon",
    "tokio-retry2",
    "retry",
    "backoff",
];

/// The shared-protection cases `benches/instructions.sh` counts (issue 26, items 1 and 5): a call
/// through a `static` breaker, through a `PerKey` entry found in a full table of 64 keys, and
/// through the peers' closed breakers (`breaker_peers.rs`); with the `metrics` feature, the
/// floor of a measured call: a kept `metrics::Counter` incremented (in the recorder of
/// `--recorder`, or the facade's no-op one).
fn protection_case(only: &str, iters: u64) -> bool {
    use retry_kit::per_key::HashedKey as PerKeyHash;
    use retry_kit::{CircuitBreaker, PerKey};
    use std::time::Duration;
    static BREAKER: CircuitBreaker = CircuitBreaker::new(5, Duration::from_secs(30));
    static HOSTS: PerKey<CircuitBreaker> =
        PerKey::new(CircuitBreaker::new(5, Duration::from_secs(30)));
    let call = |breaker: &CircuitBreaker| {
        if let Ok(permit) = breaker.try_acquire() {
            permit.succeeded();
        }
    };
    match only {
        "protection/breaker" => {
            for _ in 0..iters {
                call(black_box(&BREAKER));
            }
        }
        "protection/per_key" | "protection/per_key_churned" => {
            // Every key in turn: where a key's place is depends on the process's random hash
            // seed, so one key's probe length (and count) changed from run to run; the mean over
            // a full table's keys varies far less. Churned: the keys come after three other
            // sets of 64 took the table in turn, so each has the place of a key it replaced,
            // anywhere in the table (a service whose hosts change).
            let rounds = if only == "protection/per_key" { 0 } else { 3 };
            for round in 0..rounds {
                for i in 0..64 {
                    let _ = HOSTS.get(&format!("old-{round}-{i}.example"));
                }
            }
            let keys: Vec<String> = (0..64).map(|i| format!("api-{i}.example")).collect();
            for key in &keys {
                let _ = HOSTS.get(key.as_str());
            }
            for i in 0..iters {
                let key = keys[(i % 64) as usize].as_str();
                let entry = black_box(&HOSTS).get(black_box(key));
                if let Ok(permit) = entry.try_acquire() {
                    permit.succeeded();
                }
            }
        }
        "protection/per_key_hashed" => {
            // One key of the full table, hashed once beforehand (`HashedKey`, what a client of
            // one upstream keeps), as `breaker` calls one static breaker: the entry is found at
            // the place the key remembers, whatever the hash seed.
            let keys: Vec<PerKeyHash> = (0..64)
                .map(|i| PerKeyHash::new(&format!("api-{i}.example")))
                .collect();
            for key in &keys {
                let _ = HOSTS.get_hashed(key);
            }
            // Chosen once, as a client keeps its upstream's key: the loop indexes nothing.
            let key = &keys[17];
            for _ in 0..iters {
                let entry = black_box(&HOSTS).get_hashed(black_box(key));
                if let Ok(permit) = entry.try_acquire() {
                    permit.succeeded();
                }
            }
        }
        "protection/failsafe" => {
            let mut breaker = breaker_peers::failsafe_handle();
            for _ in 0..iters {
                breaker_peers::failsafe_closed_call(&mut breaker);
            }
        }
        "protection/tower_resilience" => {
            let mut service = breaker_peers::tower_resilience_handle();
            for _ in 0..iters {
                breaker_peers::tower_resilience_closed_call(&mut service);
            }
        }
        // A success through a `static RetryBudget`, and through a `static FleetBudget` (feature
        // `redis`, never connected: its exchange runs on another task and costs a call nothing),
        // both by `#[retryable(budget = ..)]`: what the fleet adds to a call is finding its
        // local bucket.
        "protection/budget" => {
            for i in 0..iters {
                let _ = black_box(budget_success(black_box(i)));
            }
        }
        #[cfg(feature = "redis")]
        "protection/fleet_budget" => {
            for i in 0..iters {
                let _ = black_box(fleet_budget_success(black_box(i)));
            }
        }

        #[cfg(feature = "metrics")]
        "protection/metrics_floor" => {
            let counter = metrics::counter!("retry_kit_bench_floor");
            for _ in 0..iters {
                black_box(&counter).increment(1);
            }
        }
        _ => return false,
    }
    true
}

/// Calls per case when counting allocations.
const CALLS: u64 = 1000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--recorder") {
        #[cfg(feature = "metrics")]
        metrics::set_global_recorder(map_recorder::MapRecorder::default())
            .expect("the only global recorder");
        #[cfg(not(feature = "metrics"))]
        panic!("--recorder needs `--features metrics`");
    }
    let only = callgrind_args::only(&args);
    // A case that sleeps needs the paused clock (a zero sleep on the real clock waits for
    // tokio's 1 ms tick); the others read the clock as production does (see
    // `real_clock_runtime`).
    let rt = match only {
        Some(case) if !case.contains("retry3") => real_clock_runtime(),
        _ => paused_runtime(),
    };
    let _in_runtime = rt.enter();

    if let Some(only) = only {
        let iters = callgrind_args::iters(&args);
        let mut found = protection_case(only, iters) || layer_cases::run(only, iters, &rt);
        macro_rules! only {
            ($group:expr, $name:literal, sync($f:expr)) => {
                if *only == format!("{}/{}", $group, $name) {
                    found = true;
                    let f = $f;
                    for _ in 0..iters {
                        black_box(f());
                    }
                }
            };
            ($group:expr, $name:literal, async($f:expr)) => {
                if *only == format!("{}/{}", $group, $name) {
                    found = true;
                    let f = $f;
                    for _ in 0..iters {
                        black_box(f(&rt));
                    }
                }
            };
        }
        for_each_case!(only);
        assert!(found, "no case named {only}");
        return;
    }

    if args.iter().any(|a| a == "--sizes") {
        sizes();
        return;
    }

    // Allocations per call; each case's result is checked on the way.
    let mut allocs: BTreeMap<String, BTreeMap<&str, f64>> = BTreeMap::new();
    macro_rules! count {
        ($group:expr, $name:literal, sync($f:expr)) => {{
            let f = $f;
            count_case(&mut allocs, $group, $name, || f());
        }};
        ($group:expr, $name:literal, async($f:expr)) => {{
            let f = $f;
            count_case(&mut allocs, $group, $name, || f(&rt));
        }};
    }
    for_each_case!(count);
    println!("## Allocations per call ({CALLS} calls per case, after 3 warm-up calls)\n");
    print_table(&allocs, |v| format!("{v}"));

    println!("\n## Async future size over the inner future (bytes)\n");
    sizes();

    println!("\n## Timing: median ns per call (ratio to hand in the same run)\n");
    timing();
}

fn count_case(
    table: &mut BTreeMap<String, BTreeMap<&'static str, f64>>,
    group: &str,
    name: &'static str,
    f: impl Fn() -> u64,
) {
    let expected = if group.contains("success") { 1 } else { 7 };
    assert_eq!(f(), expected, "{group}/{name} returned a wrong value");
    for _ in 0..2 {
        black_box(f());
    }
    let before = counting::allocations();
    for _ in 0..CALLS {
        black_box(f());
    }
    let after = counting::allocations();
    table
        .entry(group.to_string())
        .or_default()
        .insert(name, (after - before) as f64 / CALLS as f64);
}

/// Rows in case order (main cases first, then each option), columns in contender order.
fn print_table(table: &BTreeMap<String, BTreeMap<&str, f64>>, cell: impl Fn(f64) -> String) {
    let used: Vec<&str> = CONTENDERS
        .iter()
        .copied()
        .filter(|c| table.values().any(|row| row.contains_key(c)))
        .collect();
    println!("| case | {} |", used.join(" | "));
    println!("| --- |{}", " ---: |".repeat(used.len()));
    for group in ordered_groups(table.keys()) {
        let row = &table[&group];
        let cells: Vec<String> = used
            .iter()
            .map(|c| row.get(c).map_or("—".to_string(), |v| cell(*v)))
            .collect();
        println!("| {group} | {} |", cells.join(" | "));
    }
}

fn ordered_groups<'a>(groups: impl Iterator<Item = &'a String>) -> Vec<String> {
    let rank = |g: &str| {
        let option = ["_deadline", "_hook", "_breaker"]
            .iter()
            .position(|s| g.ends_with(s))
            .map_or(0, |p| p + 1);
        let base = [
            "sync_success",
            "async_success",
            "sync_retry3",
            "async_retry3",
        ]
        .iter()
        .position(|b| g.starts_with(b))
        .unwrap_or(9);
        (option, base)
    };
    let mut groups: Vec<String> = groups.cloned().collect();
    groups.sort_by_key(|g| rank(g));
    groups
}

// ---------------------------------------------------------------------------------------------
// Future sizes.

/// A future of exactly `N` bytes that is ready at once with `Ok`, in whichever result type the
/// crate under test wants from its operation.
struct Inner<const N: usize, O> {
    data: [u8; N],
    out: PhantomData<fn() -> O>,
}

impl<const N: usize, O> Inner<N, O> {
    fn new() -> Self {
        Inner {
            data: [1; N],
            out: PhantomData,
        }
    }
}

trait Ok64 {
    fn ok(v: u64) -> Self;
}
impl Ok64 for Result<u64, BenchError> {
    fn ok(v: u64) -> Self {
        Ok(v)
    }
}
impl Ok64 for Result<u64, tokio_retry2::RetryError<BenchError>> {
    fn ok(v: u64) -> Self {
        Ok(v)
    }
}
impl Ok64 for Result<u64, backoff::Error<BenchError>> {
    fn ok(v: u64) -> Self {
        Ok(v)
    }
}

impl<const N: usize, O: Ok64> Future for Inner<N, O> {
    type Output = O;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<O> {
        Poll::Ready(O::ok(u64::from(self.data[N - 1])))
    }
}

type Plain<const N: usize> = Inner<N, Result<u64, BenchError>>;

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none")]
async fn macro_inner_16() -> Result<u64, BenchError> {
    Plain::<16>::new().await
}

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none")]
async fn macro_inner_1k() -> Result<u64, BenchError> {
    Plain::<1024>::new().await
}

/// The same, hedged after 50 ms (issue 26, item 2): the call keeps its first attempt and the
/// hedge timer in place, so that a hedge that never fires allocates nothing.
#[retryable(
    attempts = 3,
    backoff = "fixed",
    base = "0ms",
    jitter = "none",
    idempotent,
    hedge = "50ms"
)]
async fn macro_inner_16_hedged() -> Result<u64, BenchError> {
    Plain::<16>::new().await
}

static RETRY_BUDGET: retry_kit::RetryBudget = retry_kit::RetryBudget::new(100, 0.1);

// Out of line, both: a copy inlined into the loop was counted with whatever the optimiser made
// of the loop around it (the same function measured 61 and 75 in two builds).
#[inline(never)]
#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none", budget = RETRY_BUDGET)]
fn budget_success(x: u64) -> Result<u64, BenchError> {
    Ok(x)
}

#[cfg(feature = "redis")]
static FLEET_BUDGET: retry_kit::fleet::FleetBudget =
    retry_kit::fleet::FleetBudget::new("bench", 100, 0.1);

#[cfg(feature = "redis")]
#[inline(never)]
#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none", budget = FLEET_BUDGET)]
fn fleet_budget_success(x: u64) -> Result<u64, BenchError> {
    Ok(x)
}

#[retryable(attempts = 3, backoff = "fixed", base = "0ms", jitter = "none", circuit = BREAKER)]
async fn macro_inner_16_breaker() -> Result<u64, BenchError> {
    Plain::<16>::new().await
}

fn sizes() {
    fn row<const N: usize>(name: &str, size: usize) -> (String, usize, usize) {
        (name.to_string(), size, size - N)
    }
    fn all<const N: usize>(macro_size: usize) -> Vec<(String, usize, usize)> {
        use backon::Retryable;
        let strategy =
            tokio_retry2::strategy::FixedInterval::new(DELAY).take(ATTEMPTS as usize - 1);
        vec![
            row::<N>("hand", size_of_val(&hand_async(Plain::<N>::new))),
            row::<N>("hand+ctx", size_of_val(&hand_ctx_async(Plain::<N>::new))),
            row::<N>("macro", macro_size),
            row::<N>("fn", size_of_val(&POLICY.call_async(Plain::<N>::new))),
            row::<N>(
                "backon",
                size_of_val(
                    &(|| Plain::<N>::new())
                        .retry(backon_policy())
                        .sleep(backon::TokioSleeper)
                        .when(transient),
                ),
            ),
            row::<N>(
                "tokio-retry2",
                size_of_val(&tokio_retry2::Retry::spawn(strategy, || {
                    Inner::<N, Result<u64, tokio_retry2::RetryError<BenchError>>>::new()
                })),
            ),
            row::<N>(
                "backoff",
                size_of_val(&backoff::future::retry(backoff_policy(), || {
                    Inner::<N, Result<u64, backoff::Error<BenchError>>>::new()
                })),
            ),
        ]
    }
    let small = all::<16>(size_of_val(&macro_inner_16()));
    let large = all::<1024>(size_of_val(&macro_inner_1k()));
    let hand = (small[0].2, large[0].2);
    println!(
        "| future | size, 16 B inner | overhead | size, 1 KiB inner | overhead | overhead − hand's |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for (s, l) in small.iter().zip(&large) {
        println!(
            "| {} | {} | {} | {} | {} | {:+} / {:+} |",
            s.0,
            s.1,
            s.2,
            l.1,
            l.2,
            s.2 as i64 - hand.0 as i64,
            l.2 as i64 - hand.1 as i64,
        );
    }
    // With a circuit breaker: the call carries its protection state (breaker, budget and
    // adaptive slots, the permit) across every await.
    let breaker = [
        ("hand", size_of_val(&hand_async_breaker(Plain::<16>::new))),
        ("macro", size_of_val(&macro_inner_16_breaker())),
        ("fn", size_of_val(&fn_async_breaker(Plain::<16>::new))),
    ];
    let hedged = size_of_val(&macro_inner_16_hedged());
    println!();
    println!("| future with a breaker | size, 16 B inner | overhead − hand's |");
    println!("| --- | ---: | ---: |");
    for (name, size) in breaker {
        println!(
            "| {name} | {size} | {:+} |",
            size as i64 - breaker[0].1 as i64
        );
    }
    // Hedged: the first attempt, the hedge timer and the attempts' records are kept in place.
    println!();
    println!("| future, hedged | size, 16 B inner | over the unhedged macro's |");
    println!("| --- | ---: | ---: |");
    println!(
        "| macro | {hedged} | {:+} |",
        hedged as i64 - small[2].1 as i64
    );
}

// ---------------------------------------------------------------------------------------------
// Timing summary from the criterion baselines `run.sh` saved.

/// `<target>/criterion/GROUP/CONTENDER/BASELINE/estimates.json` → median point estimate in ns.
fn timing() {
    // Where criterion saved them: $CRITERION_HOME (run.sh sets it), else as criterion looks,
    // $CARGO_TARGET_DIR/criterion, else the workspace's target/ (this crate is `benches/`).
    let root = std::path::PathBuf::from(std::env::var("CRITERION_HOME").unwrap_or_else(|_| {
        let target = std::env::var("CARGO_TARGET_DIR")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../target").to_string());
        format!("{target}/criterion")
    }));
    // run -> group -> contender -> median ns
    let mut runs: BTreeMap<String, BTreeMap<String, BTreeMap<String, f64>>> = BTreeMap::new();
    for group in read_dirs(&root) {
        for contender in read_dirs(&group) {
            for baseline in read_dirs(&contender) {
                let run = file_name(&baseline);
                if !run.starts_with("run") {
                    continue;
                }
                let Ok(json) = std::fs::read_to_string(baseline.join("estimates.json")) else {
                    continue;
                };
                if let Some(median) = median_of(&json) {
                    runs.entry(run)
                        .or_default()
                        .entry(file_name(&group))
                        .or_default()
                        .insert(file_name(&contender), median);
                }
            }
        }
    }
    if runs.is_empty() {
        println!(
            "(no saved runs under {}: `bash benches/run.sh` makes them)",
            root.display()
        );
        return;
    }
    println!(
        "runs: {}\n",
        runs.keys().cloned().collect::<Vec<_>>().join(", ")
    );
    let mut cells: BTreeMap<String, BTreeMap<String, RunsOf>> = BTreeMap::new();
    for run in runs.values() {
        for (group, row) in run {
            let hand = row.get("hand").copied();
            for (contender, ns) in row {
                let cell = cells
                    .entry(group.clone())
                    .or_default()
                    .entry(contender.clone())
                    .or_default();
                cell.0.push(*ns);
                if let Some(hand) = hand {
                    cell.1.push(ns / hand);
                }
            }
        }
    }
    let used: Vec<&str> = CONTENDERS
        .iter()
        .copied()
        .filter(|c| cells.values().any(|row| row.contains_key(*c)))
        .collect();
    println!("| case | {} |", used.join(" | "));
    println!("| --- |{}", " ---: |".repeat(used.len()));
    for group in ordered_groups(cells.keys()) {
        let row = &cells[&group];
        let line: Vec<String> = used
            .iter()
            .map(|c| match row.get(*c) {
                None => "—".to_string(),
                Some((ns, ratios)) => {
                    format!("{} ({:.2}×)", fmt_ns(median(ns)), median(ratios))
                }
            })
            .collect();
        println!("| {group} | {} |", line.join(" | "));
    }

    println!("\nPer-run ratios to hand (macro, fn):\n");
    for group in ordered_groups(cells.keys()) {
        let row = &cells[&group];
        let show = |c: &str| {
            row.get(c).map_or(String::new(), |(_, r)| {
                r.iter()
                    .map(|x| format!("{x:.2}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        };
        println!("- {group}: macro {} | fn {}", show("macro"), show("fn"));
    }

    println!("\nTargets of issue 13 (median ratio to hand):\n");
    for (group, target) in [("sync_success", 2.0), ("sync_retry3", 1.5)] {
        for contender in ["macro", "fn"] {
            if let Some((_, ratios)) = cells.get(group).and_then(|row| row.get(contender)) {
                let r = median(ratios);
                let verdict = if r <= target { "met" } else { "MISSED" };
                println!("- {group} {contender}: {r:.2}× (target ≤ {target}×) {verdict}");
            }
        }
    }

    // Per run, one contender's time over another's; the median of those.
    let versus = |row: &BTreeMap<String, RunsOf>, a: &str, b: &str| -> Option<f64> {
        let (a, b) = (&row.get(a)?.0, &row.get(b)?.0);
        let ratios: Vec<f64> = a.iter().zip(b).map(|(a, b)| a / b).collect();
        Some(median(&ratios))
    };
    println!("\nThe fn form against the macro form (median ratio; target ≤ 1.10):\n");
    for group in ordered_groups(cells.keys()) {
        if let Some(r) = versus(&cells[&group], "fn", "macro") {
            let verdict = if r <= 1.10 { "met" } else { "MISSED" };
            println!("- {group}: {r:.2}× {verdict}");
        }
    }
    println!("\nAgainst the floor of publishing the attempt context (median ratio to hand+ctx):\n");
    for group in ordered_groups(cells.keys()) {
        let row = &cells[&group];
        if let (Some(m), Some(f)) = (
            versus(row, "macro", "hand+ctx"),
            versus(row, "fn", "hand+ctx"),
        ) {
            println!("- {group}: macro {m:.2}×, fn {f:.2}×");
        }
    }
}

/// One cell of the timing table: its median ns in each run, and its ratio to hand in each run.
type RunsOf = (Vec<f64>, Vec<f64>);

fn read_dirs(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned())
}

/// The `median.point_estimate` of criterion's `estimates.json`.
fn median_of(json: &str) -> Option<f64> {
    let rest = &json[json.find("\"median\"")?..];
    let rest = &rest[rest.find("\"point_estimate\":")? + "\"point_estimate\":".len()..];
    let end = rest.find([',', '}'])?;
    rest[..end].trim().parse().ok()
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 1000.0 {
        format!("{:.2} µs", ns / 1000.0)
    } else {
        format!("{ns:.1} ns")
    }
}
