//! `fleet` against a real Redis, failing the way fleets do: several OS processes (this test
//! binary run again as workers) sharing one budget and one breaker, Redis killed mid-run and
//! started again, a process frozen (SIGSTOP) while it holds the only probe lease, two processes
//! tripping the breaker at once, and processes whose clocks disagree.
//!
//! Needs the Redis at 127.0.0.1:6379 (`RETRY_KIT_REDIS` names another): a test fails, with a
//! message saying how to start one, when it is not there. The tests that need Redis *down* start
//! their own `redis-server` on a free port and kill it. Every run keeps its keys under a prefix
//! of its own and deletes them at the end.
//!
//! A harness of its own (`harness = false`): `main` runs the scenarios, or, when started with
//! `RK_FLEET_WORKER` set, is one worker process of a scenario. Real time, as processes and
//! servers need; every wait is bounded, and no assertion is about how long anything took.
#![cfg(feature = "redis")]
#![deny(warnings, unused_qualifications)]

use retry_kit::fleet::{self, FleetBreaker, FleetBudget, Node, RedisStore};
use retry_kit::{CircuitOpen, CircuitState, Classify, retryable};
use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// A scenario's name and body.
type Scenario = (&'static str, fn(&Env));

fn main() {
    if let Ok(role) = std::env::var("RK_FLEET_WORKER") {
        worker(&role);
        return;
    }
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let scenarios: &[Scenario] = &[
        (
            "the_script_and_the_memory_store_agree",
            the_script_and_the_memory_store_agree,
        ),
        ("processes_share_one_budget", processes_share_one_budget),
        (
            "redis_killed_mid_run_then_restarted",
            redis_killed_mid_run_then_restarted,
        ),
        (
            "worker_processes_ride_out_a_redis_restart",
            worker_processes_ride_out_a_redis_restart,
        ),
        (
            "no_call_waits_on_a_hung_redis",
            no_call_waits_on_a_hung_redis,
        ),
        (
            "two_processes_trip_the_breaker_at_once",
            two_processes_trip_the_breaker_at_once,
        ),
        (
            "a_frozen_probe_holder_delays_recovery_by_one_lease",
            a_frozen_probe_holder_delays_recovery_by_one_lease,
        ),
        (
            "clocks_that_differ_between_processes_decide_nothing",
            clocks_that_differ_between_processes_decide_nothing,
        ),
    ];
    let mut failed = 0;
    for (name, scenario) in scenarios {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let env = Env::new(name);
        let outcome = std::panic::catch_unwind(|| scenario(&env));
        env.clean();
        match outcome {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    if failed > 0 {
        std::process::exit(1);
    }
}

/// The shared Redis and a key prefix of this scenario's own.
struct Env {
    url: String,
    prefix: String,
}

impl Env {
    fn new(name: &str) -> Env {
        let url = std::env::var("RETRY_KIT_REDIS").unwrap_or("redis://127.0.0.1:6379".into());
        let mut conn = redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(2)))
            .unwrap_or_else(|e| {
                panic!(
                    "these tests need a Redis server at {url} ({e}); start one with \
                     `redis-server --daemonize yes --port 6379 --save \"\" --appendonly no`"
                )
            });
        let pong: String = redis::cmd("PING").query(&mut conn).expect("PING");
        assert_eq!(pong, "PONG");
        let prefix = format!("rk-test:{}:{}:{name}", std::process::id(), nanos());
        Env { url, prefix }
    }

    fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url.as_str())
            .and_then(|c| c.get_connection())
            .expect("a connection to the shared Redis")
    }

    /// Delete every key of this scenario.
    fn clean(&self) {
        let mut conn = self.conn();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}*", self.prefix))
            .query(&mut conn)
            .unwrap_or_default();
        if !keys.is_empty() {
            let _: () = redis::cmd("DEL").arg(keys).query(&mut conn).unwrap();
        }
    }

    /// Start `n` workers of `role` on `url`, under this scenario's prefix.
    fn workers(&self, role: &str, url: &str, n: usize, extra: &[(&str, String)]) -> Vec<Child> {
        (0..n)
            .map(|i| {
                let mut cmd = Command::new(std::env::current_exe().unwrap());
                cmd.env("RK_FLEET_WORKER", role)
                    .env("RK_FLEET_URL", url)
                    .env("RK_FLEET_PREFIX", &self.prefix)
                    .env("RK_FLEET_INDEX", i.to_string())
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped());
                for (k, v) in extra {
                    cmd.env(k, v);
                }
                cmd.spawn().expect("a worker process")
            })
            .collect()
    }
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// Wait, at most `limit`, for `done`; whether it happened.
fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    done()
}

/// The next line a worker prints, `key=value` words; panics after 20 s.
fn read_line(out: &mut BufReader<std::process::ChildStdout>) -> String {
    let mut line = String::new();
    out.read_line(&mut line).expect("a worker's line");
    line.trim().to_owned()
}

fn field(line: &str, key: &str) -> u64 {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in {line:?}"))
        .parse()
        .unwrap()
}

/// A `redis-server` of this test's own on a free port, to kill, freeze and restart.
struct PrivateRedis {
    port: u16,
    child: Option<Child>,
}

impl PrivateRedis {
    fn start() -> PrivateRedis {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut redis = PrivateRedis { port, child: None };
        redis.restart();
        redis
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn restart(&mut self) {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server is installed (it comes with Redis)");
        self.child = Some(child);
        let port = self.port;
        assert!(
            wait_for(Duration::from_secs(10), || ping(port)),
            "the private redis-server on {port} did not answer"
        );
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().unwrap().id();
        signal_pid(pid, signal);
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            signal_pid(child.id(), "CONT");
        }
        self.kill();
    }
}

fn signal_pid(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal} {pid}");
}

fn ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
    let mut buf = [0; 7];
    s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// EVALSHA and EVAL calls Redis has run since it started.
fn script_calls(conn: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(conn).unwrap();
    info.lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .map(|l| {
            l.split(&[':', ','][..])
                .find_map(|w| w.strip_prefix("calls="))
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum()
}

#[derive(Debug, Classify)]
enum ApiError {
    #[classify(transient)]
    Unavailable,
    #[classify(transient)]
    Open,
}

impl From<CircuitOpen> for ApiError {
    fn from(_: CircuitOpen) -> Self {
        ApiError::Open
    }
}

const MAX_TOKENS: u32 = 40;
static SHARED: FleetBudget =
    FleetBudget::new("shared", MAX_TOKENS, 0.0).sync_every(Duration::from_millis(10));

#[retryable(attempts = 4, backoff = "fixed", base = "5ms", budget = SHARED)]
async fn always_failing(attempts: &AtomicU32) -> Result<(), ApiError> {
    attempts.fetch_add(1, Ordering::Relaxed);
    Err(ApiError::Unavailable)
}

/// The worker processes: `RK_FLEET_WORKER` says which part each plays.
fn worker(role: &str) {
    let url = std::env::var("RK_FLEET_URL").unwrap();
    let prefix = std::env::var("RK_FLEET_PREFIX").unwrap();
    let rt = runtime();
    rt.block_on(async {
        let fleet = fleet::Fleet::builder(&url)
            .prefix(&prefix)
            .timeout(Duration::from_millis(200))
            .connect()
            .await
            .unwrap();
        match role {
            "budget" => budget_worker().await,
            "breaker" => breaker_worker().await,
            "restart" => restart_worker().await,
            _ => panic!("no worker role {role}"),
        }
        fleet.disconnect();
    });
}

/// Wait for a line on stdin (the scenario's "go"), without blocking the runtime.
async fn go() -> String {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).unwrap();
        line.trim().to_owned()
    })
    .await
    .unwrap()
}

async fn budget_worker() {
    // Join and exchange before the run starts, so every process starts from the fleet's count.
    let _ = SHARED.local();
    while SHARED.is_fallback() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    println!("ready");
    go().await;
    let attempts = AtomicU32::new(0);
    let mut calls = 0;
    for _ in 0..40 {
        calls += 1;
        always_failing(&attempts).await.unwrap_err();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Then as many successful calls as it can make in a second: the exchange's cost does not
    // follow the call rate.
    let node = Node::global();
    let before = node.stats();
    let started = Instant::now();
    let mut fast = 0u64;
    while started.elapsed() < Duration::from_secs(1) {
        for _ in 0..1000 {
            SHARED.local().record_success();
            fast += 1;
        }
        tokio::task::yield_now().await;
    }
    let after = node.stats();
    println!(
        "calls={calls} attempts={} fast={fast} exchanges={} total_exchanges={}",
        attempts.load(Ordering::Relaxed),
        after.exchanged + after.failed - before.exchanged - before.failed,
        after.exchanged + after.failed,
    );
}

/// Scenario: four processes, one fleet budget of 40 tokens (no refunds), each making 40 calls
/// that always fail, 4 attempts each. One bucket would let `⌈40/2⌉ − 1 = 19` retries through;
/// four per-process budgets 76; the fleet stays within `19 + 2 × P × n` (n = 3: at most three
/// failures per process in one 10 ms interval). Redis runs one script per exchange, whatever
/// the calls do.
fn processes_share_one_budget(env: &Env) {
    const P: usize = 4;
    let mut conn = env.conn();
    let scripts_before = script_calls(&mut conn);
    let mut workers = env.workers("budget", &env.url, P, &[]);
    let mut outs: Vec<_> = workers
        .iter_mut()
        .map(|w| BufReader::new(w.stdout.take().unwrap()))
        .collect();
    for out in &mut outs {
        assert_eq!(read_line(out), "ready");
    }
    for w in &mut workers {
        writeln!(w.stdin.as_mut().unwrap(), "go").unwrap();
    }
    let lines: Vec<String> = outs.iter_mut().map(read_line).collect();
    for w in &mut workers {
        assert!(w.wait().unwrap().success());
    }
    let scripts = script_calls(&mut conn) - scripts_before;
    let (mut calls, mut attempts, mut fast, mut exchanges) = (0, 0, 0, 0);
    let mut total_exchanges = 0;
    for line in &lines {
        calls += field(line, "calls");
        attempts += field(line, "attempts");
        fast += field(line, "fast");
        exchanges += field(line, "exchanges");
        total_exchanges += field(line, "total_exchanges");
    }
    let retries = attempts - calls;
    let single = u64::from(MAX_TOKENS.div_ceil(2)) - 1;
    let bound = single + 2 * P as u64 * 3;
    println!(
        "  {P} processes: {retries} retries in {calls} calls (one bucket: {single}, bound {bound}, \
         per-process budgets: {}); {fast} successes in the fast second, {exchanges} exchanges \
         then; Redis ran {scripts} scripts for {total_exchanges} exchanges",
        P as u64 * single
    );
    assert!(retries > 0);
    assert!(retries <= bound, "{retries} retries > {bound}");
    // Every exchange is one script (EVALSHA; an EVAL after a script cache miss), and nothing
    // else runs one: the call rate does not show.
    assert!(scripts >= total_exchanges && scripts <= total_exchanges + P as u64);
    assert!(
        fast > 100 * exchanges,
        "{fast} calls, {exchanges} exchanges"
    );
}

/// Scenario: two processes (nodes with their own connections) on a Redis of the test's own,
/// which is killed mid-run and started again (empty, as it keeps nothing). While it is down
/// each falls back once, decides by the local rule, and calls go on; once it answers, each is
/// back on the fleet's state within two exchanges, with what it did meanwhile pushed.
fn redis_killed_mid_run_then_restarted(_env: &Env) {
    let mut redis = PrivateRedis::start();
    let rt = runtime();
    rt.block_on(async {
        let store = |_: usize| {
            RedisStore::open(&redis.url(), "killed")
                .unwrap()
                .timeout(Duration::from_millis(200))
        };
        let stores = [store(0), store(1)];
        let nodes = [Node::new(), Node::new()];
        let budgets = [
            FleetBudget::new("k", 10, 0.5),
            FleetBudget::new("k", 10, 0.5),
        ];
        for (n, b) in nodes.iter().zip(&budgets) {
            n.join(b);
        }
        for (n, s) in nodes.iter().zip(&stores) {
            n.exchange(s).await.unwrap();
        }
        budgets[0].local().record_failure();
        nodes[0].exchange(&stores[0]).await.unwrap();
        nodes[1].exchange(&stores[1]).await.unwrap();
        assert_eq!(budgets[1].local().tokens(), 9.0);

        redis.kill();
        for (n, s) in nodes.iter().zip(&stores) {
            for _ in 0..3 {
                assert!(n.exchange(s).await.is_err());
            }
            assert_eq!(
                n.stats().fallbacks,
                1,
                "one episode, counted (and logged) once"
            );
        }
        assert!(budgets.iter().all(FleetBudget::is_fallback));
        // The local rule, same settings, goes on deciding: 9 → 4 tokens, no retry allowed.
        for _ in 0..5 {
            budgets[1].local().record_failure();
        }
        assert!(!budgets[1].local().allows_retry());

        redis.restart();
        for (i, (n, s)) in nodes.iter().zip(&stores).enumerate() {
            let mut exchanges = 0;
            while n.exchange(s).await.is_err() {
                exchanges += 1;
                assert!(exchanges < 50, "node {i} never came back");
            }
            exchanges += 1;
            println!("  node {i} back on the fleet state after {exchanges} exchange(s)");
            assert!(exchanges <= 2, "{exchanges} exchanges to come back");
            assert!(!budgets[i].is_fallback());
        }
        // The restarted Redis began a full bucket; node 1's five failures were pushed into it.
        nodes[0].exchange(&stores[0]).await.unwrap();
        assert_eq!(budgets[0].local().tokens(), 5.0);
        assert_eq!(budgets[1].tokens(), 5.0);
    });
}

/// A worker that makes calls all along and reports its node's state on request: whether it is
/// on its local rule, how many fallbacks it counted, how many calls it made, and how many
/// exchanges it took to come back after the scenario's `mark`.
async fn restart_worker() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;
    let _ = SHARED.local();
    while SHARED.is_fallback() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let calls = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&calls);
    // Calls go on, whatever Redis does: each a success on the local bucket.
    tokio::spawn(async move {
        loop {
            SHARED.local().record_success();
            counted.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    let node = Node::global();
    let exchanges = || {
        let s = node.stats();
        s.exchanged + s.failed
    };
    let (mut mark, mut back_after) = (None, None);
    say("ready");
    loop {
        // Watch for the return while waiting for the next command.
        let command = tokio::spawn(go());
        tokio::pin!(command);
        let command = loop {
            tokio::select! {
                c = &mut command => break c.unwrap(),
                () = tokio::time::sleep(Duration::from_millis(2)) => {
                    if let (Some(at), None) = (mark, back_after) {
                        if !SHARED.is_fallback() {
                            back_after = Some(exchanges() - at);
                        }
                    }
                }
            }
        };
        match command.as_str() {
            "mark" => {
                mark = Some(exchanges());
                back_after = None;
                say("marked");
            }
            "status" => say(&format!(
                "fallback={} fallbacks={} calls={} back_after={}",
                u8::from(SHARED.is_fallback()),
                node.stats().fallbacks,
                calls.load(Ordering::Relaxed),
                back_after.unwrap_or(0)
            )),
            "quit" => return,
            other => panic!("unknown command {other}"),
        }
    }
}

/// Scenario: two worker processes joined to a Redis of the test's own by `connect` (the
/// background task), making calls all along. Redis is killed: each falls back (once), and its
/// calls go on. Redis starts again: each is back on the fleet state within three exchanges of
/// the restart, having counted one fallback.
fn worker_processes_ride_out_a_redis_restart(env: &Env) {
    let mut redis = PrivateRedis::start();
    let mut workers: Vec<Worker> = env
        .workers("restart", &redis.url(), 2, &[])
        .into_iter()
        .map(|mut child| {
            let out = BufReader::new(child.stdout.take().unwrap());
            let mut w = Worker { child, out };
            assert_eq!(w.line(), "ready");
            w
        })
        .collect();
    let status = |w: &mut Worker| w.ask("status");
    redis.kill();
    for w in &mut workers {
        let mut line = status(w);
        for _ in 0..500 {
            if field(&line, "fallback") == 1 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            line = status(w);
        }
        assert_eq!(field(&line, "fallback"), 1, "{line}");
        // Its calls go on while Redis is gone.
        let before = field(&line, "calls");
        assert!(
            wait_for(Duration::from_secs(5), || field(&status(w), "calls")
                > before + 10),
            "calls stopped while Redis was down"
        );
    }
    redis.restart();
    for w in &mut workers {
        assert_eq!(w.ask("mark"), "marked");
    }
    for (i, w) in workers.iter_mut().enumerate() {
        let mut line = status(w);
        for _ in 0..500 {
            if field(&line, "fallback") == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            line = status(w);
        }
        println!("  worker {i}: {line}");
        assert_eq!(field(&line, "fallback"), 0, "{line}");
        assert_eq!(field(&line, "fallbacks"), 1, "one episode: {line}");
        // Exchanges from the mark (made once Redis answered PING) to the fleet state; 0: back
        // before the mark reached the worker.
        assert!(field(&line, "back_after") <= 3, "{line}");
    }
    for w in workers {
        w.quit();
    }
}

/// Scenario: Redis is frozen (SIGSTOP) while an exchange is under way; calls on the same
/// runtime keep deciding (1 000 of them) while the exchange still waits, and the exchange
/// then fails on its timeout and the node falls back.
fn no_call_waits_on_a_hung_redis(_env: &Env) {
    let redis = PrivateRedis::start();
    let rt = runtime();
    rt.block_on(async {
        let store = RedisStore::open(&redis.url(), "hung")
            .unwrap()
            .timeout(Duration::from_secs(2));
        static HUNG: FleetBudget = FleetBudget::new("hung", 10, 0.1);
        let node = Node::new();
        node.join(&HUNG);
        node.exchange(&store).await.unwrap();
        redis.signal("STOP");
        let exchange = async { node.exchange(&store).await };
        tokio::pin!(exchange);
        let mut decided = 0;
        let mut pending_all_along = true;
        for _ in 0..1000 {
            HUNG.local().record_failure();
            HUNG.local().record_success();
            let _ = HUNG.local().allows_retry();
            decided += 1;
            // Let the exchange run a little between calls: it stays pending.
            let polled = std::future::poll_fn(|cx| {
                std::task::Poll::Ready(exchange.as_mut().poll(cx).is_pending())
            });
            pending_all_along &= polled.await;
        }
        assert_eq!(decided, 1000);
        assert!(
            pending_all_along,
            "the exchange waits on Redis; the calls did not"
        );
        assert!(
            exchange.await.is_err(),
            "no answer: the exchange fails on its timeout"
        );
        assert!(HUNG.is_fallback());
        redis.signal("CONT");
        assert!(node.exchange(&store).await.is_ok());
    });
}

fn the_script_and_the_memory_store_agree(env: &Env) {
    use fleet::{BreakerRules, MemoryStore, Push, Report, Store};
    let rt = runtime();
    rt.block_on(async {
        let redis = RedisStore::open(&env.url, &env.prefix).unwrap();
        let memory = MemoryStore::new();
        let rules = BreakerRules {
            open_ms: 3_600_000,
            half_open_max: 2,
            lease_ms: 3_600_000,
        };
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut epoch = 0;
        for round in 0..300 {
            let r = next();
            let budget = Push::Budget {
                name: if r % 2 == 0 { "a" } else { "b" },
                delta: (r % 7_000_000) as i64 - 4_000_000,
                max: 10_000_000 + (r >> 40) % 3 * 1_000_000,
            };
            let report = match (r >> 8) % 4 {
                0 => Report::Tripped,
                1 => Report::Quiet { wants_probe: true },
                2 => Report::ProbeFailed {
                    lease: (r >> 12) % 3,
                },
                _ => Report::Quiet { wants_probe: false },
            };
            let breaker = Push::Breaker {
                name: "k",
                epoch,
                report,
                rules,
            };
            let pushes = [budget, breaker];
            // The two clocks differ (Redis's `TIME`, this process's): the time left of an open
            // phase is compared to the second.
            let seconds = |pulls: Vec<fleet::Pull>| -> Vec<fleet::Pull> {
                pulls
                    .into_iter()
                    .map(|p| match p {
                        fleet::Pull::Breaker(mut phase) => {
                            phase.open_left_ms = phase.open_left_ms.div_ceil(1000);
                            fleet::Pull::Breaker(phase)
                        }
                        other => other,
                    })
                    .collect()
            };
            let from_redis = seconds(redis.exchange(&pushes).await.unwrap());
            let from_memory = seconds(memory.exchange(&pushes).await.unwrap());
            assert_eq!(from_redis, from_memory, "round {round}: {pushes:?}");
            if let fleet::Pull::Breaker(phase) = from_memory[1] {
                epoch = phase.epoch;
            }
        }
        assert!(epoch > 0, "the breaker moved");
    });
}

static TRIPPED: FleetBreaker = FleetBreaker::new("tripped", 3, Duration::from_secs(60))
    .sync_every(Duration::from_millis(10))
    .probe_lease(Duration::from_millis(600));

static PROBED: FleetBreaker = FleetBreaker::new("probed", 1, Duration::from_millis(300))
    .sync_every(Duration::from_millis(10))
    .probe_lease(Duration::from_millis(600));

#[retryable(attempts = 1, circuit = PROBED)]
async fn probed_call(hang: bool, up: bool) -> Result<(), ApiError> {
    if hang {
        std::future::pending::<()>().await;
    }
    if up {
        Ok(())
    } else {
        Err(ApiError::Unavailable)
    }
}

/// Print `line` and flush it, for the scenario reading this worker.
fn say(line: &str) {
    println!("{line}");
    std::io::stdout().flush().unwrap();
}

async fn breaker_worker() {
    let _ = (TRIPPED.local(), PROBED.local());
    while TRIPPED.is_fallback() || PROBED.is_fallback() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    say("ready");
    loop {
        match go().await.as_str() {
            // Three failures: trip this process's breaker.
            "trip" => {
                for _ in 0..3 {
                    TRIPPED.local().try_acquire().unwrap().failed();
                }
                say("tripped");
            }
            "state" => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                say(&format!(
                    "fleet={} local={}",
                    TRIPPED.state(),
                    TRIPPED.local().state()
                ));
            }
            // Fail the probed breaker's calls until it opens.
            "open" => {
                while probed_call(false, false).await.is_ok()
                    || PROBED.state() != CircuitState::Open
                {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                say("open");
            }
            // Call until a probe is let through, then hang in it (the scenario freezes us).
            "probe-and-hang" => {
                let started = Instant::now();
                loop {
                    if PROBED.local().state() == CircuitState::HalfOpen {
                        say("probing");
                        let _ = probed_call(true, true).await;
                    }
                    let _ = PROBED.local().try_acquire().map(drop);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    assert!(
                        started.elapsed() < Duration::from_secs(10),
                        "never got a probe"
                    );
                }
            }
            // Call (successfully) until the breaker is closed; report how many calls were
            // refused before the first got in, and how many got in.
            "call-until-closed" => {
                let started = Instant::now();
                let (mut admitted, mut refused) = (0, 0);
                while PROBED.state() != CircuitState::Closed {
                    match probed_call(false, true).await {
                        Ok(()) => admitted += 1,
                        Err(_) if admitted == 0 => refused += 1,
                        Err(_) => {}
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    assert!(started.elapsed() < Duration::from_secs(10), "never closed");
                }
                say(&format!("closed admitted={admitted} refused={refused}"));
            }
            "state-probed" => {
                tokio::time::sleep(Duration::from_millis(60)).await;
                say(&format!(
                    "fleet={} local={}",
                    PROBED.state(),
                    PROBED.local().state()
                ));
            }
            "quit" => return,
            other => panic!("unknown command {other}"),
        }
    }
}

struct Worker {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Worker {
    fn start(env: &Env, url: &str, n: usize) -> Vec<Worker> {
        env.workers("breaker", url, n, &[])
            .into_iter()
            .map(|mut child| {
                let out = BufReader::new(child.stdout.take().unwrap());
                let mut w = Worker { child, out };
                assert_eq!(w.line(), "ready");
                w
            })
            .collect()
    }
    fn send(&mut self, command: &str) {
        writeln!(self.child.stdin.as_mut().unwrap(), "{command}").unwrap();
    }
    fn line(&mut self) -> String {
        read_line(&mut self.out)
    }
    fn ask(&mut self, command: &str) -> String {
        self.send(command);
        self.line()
    }
    fn quit(mut self) {
        self.send("quit");
        assert!(self.child.wait().unwrap().success());
    }
}

fn breaker_epoch(env: &Env, name: &str) -> u64 {
    let mut conn = env.conn();
    let epoch: Option<u64> = redis::cmd("HGET")
        .arg(format!("{}:breaker:{name}", env.prefix))
        .arg("epoch")
        .query(&mut conn)
        .unwrap();
    epoch.unwrap_or(0)
}

/// Scenario: two processes trip the same closed breaker at the same moment; a third saw no
/// failure. The fleet opens once (one epoch), and all three are open.
fn two_processes_trip_the_breaker_at_once(env: &Env) {
    let mut workers = Worker::start(env, &env.url, 3);
    workers[0].send("trip");
    workers[1].send("trip");
    assert_eq!(workers[0].line(), "tripped");
    assert_eq!(workers[1].line(), "tripped");
    for w in &mut workers {
        let mut state = w.ask("state");
        for _ in 0..40 {
            if state == "fleet=open local=open" {
                break;
            }
            state = w.ask("state");
        }
        assert_eq!(state, "fleet=open local=open");
    }
    assert_eq!(breaker_epoch(env, "tripped"), 1, "opened once");
    for w in workers {
        w.quit();
    }
}

/// Scenario: the probed breaker opens; worker A gets the only probe lease and hangs in its
/// probe, and is frozen (SIGSTOP). Worker B is refused until A's lease runs out, then gets
/// the probe and closes the breaker for the fleet. A, thawed, follows the fleet: closed.
fn a_frozen_probe_holder_delays_recovery_by_one_lease(env: &Env) {
    let mut workers = Worker::start(env, &env.url, 2);
    assert_eq!(workers[0].ask("open"), "open");
    workers[0].send("probe-and-hang");
    assert_eq!(workers[0].line(), "probing");
    let frozen = workers[0].child.id();
    signal_pid(frozen, "STOP");
    // B calls until the fleet is closed: its first admitted call was the probe, after A's
    // lease ran out; one probe at a time in the whole fleet.
    let closed = workers[1].ask("call-until-closed");
    assert!(closed.starts_with("closed"), "{closed}");
    assert!(field(&closed, "admitted") >= 1, "{closed}");
    assert!(
        field(&closed, "refused") >= 1,
        "held back while the frozen lease lived: {closed}"
    );
    signal_pid(frozen, "CONT");
    // A's probe still hangs; its breaker follows the fleet's.
    let mut state = String::new();
    let mut b = workers.pop().unwrap();
    let mut a = workers.pop().unwrap();
    // A is busy in its probe loop: read B's view, then stop A.
    for _ in 0..40 {
        state = b.ask("state-probed");
        if state == "fleet=closed local=closed" {
            break;
        }
    }
    assert_eq!(state, "fleet=closed local=closed");
    b.quit();
    a.child.kill().unwrap();
    a.child.wait().unwrap();
}

#[retryable(attempts = 2, backoff = "fixed", base = "5h", max_delay = "6h")]
async fn five_hours_pass() -> Result<(), ApiError> {
    Err(ApiError::Unavailable)
}

/// Scenario: two nodes whose clocks are five hours apart (one runs on the crate's virtual
/// clock, set ahead) share a breaker. The node that trips it and the node that sees it open
/// both hold it open for what Redis's clock says is left, not a moment compared across them.
fn clocks_that_differ_between_processes_decide_nothing(env: &Env) {
    let rt = runtime();
    rt.block_on(async {
        let store = RedisStore::open(&env.url, &env.prefix).unwrap();
        let open_for = Duration::from_secs(30);
        let (a, b) = (Node::new(), Node::new());
        let in_a = FleetBreaker::new("skew", 1, open_for);
        let in_b = FleetBreaker::new("skew", 1, open_for);
        a.join(&in_a);
        b.join(&in_b);
        a.exchange(&store).await.unwrap();
        b.exchange(&store).await.unwrap();
        // b lives five hours ahead: a retry's virtual wait moved its clock.
        let ((), waits) = retry_kit::testing::record_sleeps_async(async {
            five_hours_pass().await.unwrap_err();
            in_b.local().try_acquire().unwrap().failed();
            b.exchange(&store).await.unwrap();
            let refused = in_b.local().try_acquire().unwrap_err();
            assert!(refused.retry_after() > Duration::from_secs(29));
            assert!(refused.retry_after() <= open_for + Duration::from_millis(100));
        })
        .await;
        assert_eq!(waits, [Duration::from_secs(5 * 3600)]);
        a.exchange(&store).await.unwrap();
        assert_eq!(in_a.state(), CircuitState::Open);
        let refused = in_a.local().try_acquire().unwrap_err();
        assert!(refused.retry_after() > Duration::from_secs(29));
        assert!(refused.retry_after() <= open_for + Duration::from_millis(100));
    });
}
