//! What `GrpcRetryLayer` costs a unary call that succeeds: the same `Check` on the same
//! loopback health server, through the bare channel and through the layer (built from a policy,
//! and from a service config with a `timeout` and `retryThrottling`), in alternating rounds.
//!
//! ```text
//! cargo run --release -p retry-kit-integration --example grpc_cost -- 20000
//! ```
//!
//! Client and server share one thread, so each figure is the whole round trip's CPU time
//! (client, server, loopback): the difference is the layer's. Wall-clock: run it on a quiet
//! machine, and read the spread between rounds before the difference (the best round of each
//! is the figure least disturbed by other work).
//!
//! On a busy machine, count instructions instead, as `benches/instructions.sh` does: with
//! `--only bare|policy|config --iters N` the example makes N calls of one variant and prints
//! nothing, so that the difference between two callgrind runs (1 000 and 11 000 calls) over
//! 10 000 is one call's instructions, start-up excluded (client and server user space both):
//!
//! ```text
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/grpc_cost --only policy --iters 11000
//! ```
//!
//! Measured so when the layer landed (issue 28), on a shared 2-core machine:
//!
//! | variant | instructions per call | over the bare channel |
//! | --- | ---: | ---: |
//! | bare channel | 121 279 | |
//! | `GrpcRetryLayer::new(policy)` | 128 479 | +7 200 (+5.9 %) |
//! | `GrpcRetryLayer::from_service_config` (a `timeout`, `retryThrottling`) | 134 965 | +13 686 (+11.3 %) |
//!
//! Most of the layer's share is allocation (its boxed future, the replay buffer and tonic's
//! boxing of the replayed body, the request's headers copied for a retry); the service
//! config's further share is its deadline: the clock, a timer per attempt, and the
//! `grpc-timeout` written with the time left.

use retry_kit::RetryPolicy;
use retry_kit::tonic::GrpcRetryLayer;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Endpoint, Server};
use tonic_health::ServingStatus;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tower::ServiceBuilder;

const CONFIG: &str = r#"{
  "methodConfig": [{
    "name": [{"service": "grpc.health.v1.Health"}],
    "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
                    "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
    "timeout": "5s"
  }],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
}"#;

const ROUNDS: u32 = 10;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (only, calls) = match args.as_slice() {
        [flag, variant, iters, n] if flag == "--only" && iters == "--iters" => {
            (Some(variant.clone()), n.parse()?)
        }
        [n] => (None, n.parse()?),
        _ => (None, 20_000),
    };
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter
        .set_service_status("bench", ServingStatus::Serving)
        .await;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(Server::builder().serve_with_incoming(health, TcpIncoming::from(listener)));
    let channel = Endpoint::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;

    let mut bare = HealthClient::new(channel.clone());
    let policy = GrpcRetryLayer::new(RetryPolicy::new());
    let mut by_policy =
        HealthClient::new(ServiceBuilder::new().layer(policy).service(channel.clone()));
    let config = GrpcRetryLayer::from_service_config(CONFIG)?;
    let mut by_config = HealthClient::new(ServiceBuilder::new().layer(config).service(channel));

    macro_rules! run {
        ($client:expr, $n:expr) => {{
            let start = Instant::now();
            for _ in 0..$n {
                let request = HealthCheckRequest {
                    service: "bench".to_owned(),
                };
                $client.check(request).await?;
            }
            start.elapsed()
        }};
    }

    if let Some(variant) = only {
        match variant.as_str() {
            "bare" => run!(bare, calls),
            "policy" => run!(by_policy, calls),
            "config" => run!(by_config, calls),
            other => return Err(format!("no variant {other}: bare, policy or config").into()),
        };
        return Ok(());
    }

    // Warm up the connection, the allocator and the branch predictors.
    let _ = run!(bare, 1000);
    let _ = run!(by_policy, 1000);
    let _ = run!(by_config, 1000);

    let per_round = calls / ROUNDS;
    let mut totals = [Duration::ZERO; 3];
    let mut rounds: [Vec<f64>; 3] = Default::default();
    for round in 0..ROUNDS {
        // Rotate the order so that no variant always runs first.
        for i in 0..3 {
            let which = (i + round as usize) % 3;
            let took = match which {
                0 => run!(bare, per_round),
                1 => run!(by_policy, per_round),
                _ => run!(by_config, per_round),
            };
            totals[which] += took;
            rounds[which].push(took.as_secs_f64() * 1e6 / f64::from(per_round));
        }
    }
    let n = f64::from(per_round * ROUNDS);
    let mean = |d: Duration| d.as_secs_f64() * 1e6 / n;
    let best = |r: &[f64]| r.iter().copied().fold(f64::INFINITY, f64::min);
    let spread = |r: &[f64]| {
        let hi = r.iter().copied().fold(0.0, f64::max);
        format!("rounds {:.1}..{hi:.1}", best(r))
    };
    println!(
        "{} unary Check calls each, {ROUNDS} rounds, one thread:",
        per_round * ROUNDS
    );
    println!(
        "  bare channel                  {:7.1} us/call  ({})",
        mean(totals[0]),
        spread(&rounds[0])
    );
    for (i, name) in [
        (1, "GrpcRetryLayer::new(policy)   "),
        (2, "GrpcRetryLayer (service config)"),
    ] {
        println!(
            "  {name} {:7.1} us/call  ({})  mean +{:.1} us (+{:.1} %), best round +{:.1} us",
            mean(totals[i]),
            spread(&rounds[i]),
            mean(totals[i]) - mean(totals[0]),
            (mean(totals[i]) / mean(totals[0]) - 1.0) * 100.0,
            best(&rounds[i]) - best(&rounds[0]),
        );
    }
    Ok(())
}
