//! Brooker's 1 000 clients, reproduced with this crate's own protection types, and the fleet
//! types that fix them: `results/fleet/`.
//!
//! Writes `results/fleet/fleet.csv` (`clients,failure_rate,strategy,load,success`) and
//! `results/fleet/fleet.svg`, and prints the table, the fleet budget's measured overshoot,
//! the SRE throttle's `K ×` figure, and a smaller run through a real Redis (at
//! `RETRY_KIT_REDIS`, default `redis://127.0.0.1:6379`) beside the same run on the in-process
//! store. Everything runs on the crate's virtual clock with seeded draws: every run writes the
//! same files.
//!
//! Run: `cargo run --release --example fleet --features redis`.

mod chart;
mod sim;

use retry_kit::AdaptiveThrottle;
use retry_kit::fleet::RedisStore;
use sim::{Backing, Config, Row, Strategy};
use std::fmt::Write as _;
use std::time::Duration;

/// Virtual seconds of arrivals per run: Brooker's.
const SECONDS: f64 = 10.0;
const SEED: u64 = 2022;

fn main() {
    let rows = sim::table(SECONDS, SEED);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results/fleet");
    std::fs::create_dir_all(&dir).expect("results/fleet");
    let mut csv = String::from("clients,failure_rate,strategy,load,success\n");
    for r in &rows {
        let _ = writeln!(
            csv,
            "{},{},{},{:.4},{:.4}",
            r.clients,
            r.failure_rate,
            r.strategy.label(),
            r.load(),
            r.success()
        );
    }
    std::fs::write(dir.join("fleet.csv"), csv).expect("fleet.csv");
    std::fs::write(dir.join("fleet.svg"), chart::svg(&rows)).expect("fleet.svg");

    println!("Load (attempts per call) and success, {SECONDS} virtual s, 1 000 calls/s in all:\n");
    print_table(&rows);

    println!();
    for clients in sim::CLIENTS {
        let row = find(&rows, clients, 1.0, Strategy::FleetBudget);
        let retries = row.attempts - row.calls;
        let single = u64::from(sim::MAX_TOKENS.div_ceil(2)) - 1;
        println!(
            "Overshoot, {clients} clients, every attempt failing: the fleet budget let {retries} \
             retries through where one shared bucket lets {single} ({} more, {} exchanges)",
            retries.saturating_sub(single),
            row.exchanges
        );
    }

    println!();
    for k in [2.0, 1.5] {
        let (received, accepted) = sre_overload(k);
        println!(
            "SRE throttle, K = {k}: clients want 1 000/s, the backend accepts {accepted:.1}/s and \
             receives {received:.1}/s = {:.2} × accepted",
            received / accepted
        );
    }

    println!();
    through_redis();
}

fn find(rows: &[Row], clients: usize, f: f64, strategy: Strategy) -> &Row {
    rows.iter()
        .find(|r| r.clients == clients && r.failure_rate == f && r.strategy == strategy)
        .expect("every row is run")
}

fn print_table(rows: &[Row]) {
    print!("| clients | f |");
    for s in Strategy::ALL {
        print!(" {} |", s.label());
    }
    println!();
    print!("| ---: | ---: |");
    for _ in Strategy::ALL {
        print!(" ---: |");
    }
    println!();
    for clients in sim::CLIENTS {
        for f in sim::FAILURE_RATES {
            print!("| {clients} | {f} |");
            for s in Strategy::ALL {
                let r = find(rows, clients, f, s);
                print!(" {:.3} ({:.3}) |", r.load(), r.success());
            }
            println!();
        }
    }
}

/// The SRE book's overload: clients that want 1 000 requests per second (one per virtual
/// millisecond) before a backend that accepts the first 100 of each second; rates received
/// and accepted over the last 3 of 5 virtual minutes.
fn sre_overload(k: f64) -> (f64, f64) {
    let throttle = AdaptiveThrottle::new(k, Duration::from_secs(120));
    retry_kit::testing::seed_jitter(SEED);
    let ((received, accepted), _) = retry_kit::testing::record_sleeps(|| {
        let (mut received, mut accepted) = (0u64, 0u64);
        for second in 0..300 {
            let mut served = 0;
            for _ in 0..1000 {
                if throttle.try_admit().is_ok() {
                    let ok = served < 100;
                    served += u64::from(ok);
                    if ok {
                        throttle.accepted();
                    }
                    if second >= 120 {
                        received += 1;
                        accepted += u64::from(ok);
                    }
                }
                retry_runtime::clock::sleep_sync(Duration::from_millis(1));
            }
        }
        (received, accepted)
    });
    (received as f64 / 180.0, accepted as f64 / 180.0)
}

/// The fleet budget's rows for 100 clients over 5 s, on a real Redis and on the in-process
/// store: the same exchange code, the same rules, so the same numbers. (The fleet breaker is
/// timed by Redis's own clock, which a virtual-time simulation cannot move: it is checked
/// against Redis in `tests/integration/tests/fleet.rs` instead.)
fn through_redis() {
    let url = std::env::var("RETRY_KIT_REDIS").unwrap_or("redis://127.0.0.1:6379".into());
    let prefix = format!("retry-kit-example-fleet:{}", std::process::id());
    let store = RedisStore::open(&url, &prefix)
        .expect("a Redis URL")
        .timeout(Duration::from_secs(2));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    println!("Through Redis at {url} (100 clients, 5 s, fleet_budget):\n");
    println!("| f | load, in-process store | load, Redis | success, in-process | success, Redis |");
    println!("| ---: | ---: | ---: | ---: | ---: |");
    for (i, f) in [0.1, 0.2, 0.5].into_iter().enumerate() {
        let config = Config {
            clients: 100,
            failure_rate: f,
            strategy: Strategy::FleetBudget,
            seconds: 5.0,
            seed: SEED + i as u64,
        };
        let memory = sim::run(&config, &Backing::Memory);
        // A key per run: each run starts from a full fleet bucket, as the memory store does.
        let store = RedisStore::open(&url, &format!("{prefix}:{i}"))
            .expect("a Redis URL")
            .timeout(Duration::from_secs(2));
        let redis = sim::run(&config, &Backing::Redis(&store, &rt));
        println!(
            "| {f} | {:.4} | {:.4} | {:.4} | {:.4} |",
            memory.load(),
            redis.load(),
            memory.success(),
            redis.success()
        );
        delete(&url, &format!("{prefix}:{i}:budget:sim"));
    }
    let _ = store;
}

/// Delete `key` from the Redis at `url` (`redis://host:port`), one RESP command on a socket of
/// its own: the example leaves nothing behind, and needs no Redis client besides the crate's.
fn delete(url: &str, key: &str) {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("redis://").trim_end_matches('/');
    let command = format!("*2\r\n$3\r\nDEL\r\n${}\r\n{key}\r\n", key.len());
    if let Ok(mut socket) = std::net::TcpStream::connect(addr) {
        let mut answer = [0u8; 16];
        let _ = socket
            .write_all(command.as_bytes())
            .and_then(|()| socket.read(&mut answer));
    }
}
