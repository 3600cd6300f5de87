//! The `metrics` feature with a real exporter: a Prometheus endpoint on 127.0.0.1, a retried
//! function calling a flaky inventory service behind a named breaker, and the scrape printed.
//!
//! ```sh
//! cargo run -p retry-kit-integration --example prometheus
//! ```

use metrics_exporter_prometheus::PrometheusBuilder;
use retry_kit::{CircuitBreaker, CircuitOpen, Classify, retryable};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

#[derive(Debug, Classify)]
enum InventoryError {
    #[classify(transient)]
    Busy,
    #[classify(permanent)]
    UnknownItem,
    #[classify(delegate)]
    Open(CircuitOpen),
}

impl From<CircuitOpen> for InventoryError {
    fn from(open: CircuitOpen) -> Self {
        InventoryError::Open(open)
    }
}

static INVENTORY: CircuitBreaker =
    CircuitBreaker::new(5, Duration::from_secs(60)).name("inventory");
static CALLS: AtomicU32 = AtomicU32::new(0);

/// Every third call is busy once; item 13 does not exist; calls 40..60 find the service down.
#[retryable(attempts = 3, backoff = "fixed", base = "10ms", jitter = "none", circuit = INVENTORY)]
async fn reserve(item: u32) -> Result<u32, InventoryError> {
    let n = CALLS.fetch_add(1, Ordering::Relaxed);
    if (40..60).contains(&n) {
        return Err(InventoryError::Busy);
    }
    if item == 13 {
        return Err(InventoryError::UnknownItem);
    }
    if n % 3 == 0 {
        return Err(InventoryError::Busy);
    }
    Ok(item)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // A free port on loopback for the exporter's listener.
    let addr: SocketAddr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port");
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .install()
        .expect("the Prometheus exporter starts");

    let (mut ok, mut failed) = (0, 0);
    for item in 0..40 {
        match reserve(item).await {
            Ok(_) => ok += 1,
            Err(_) => failed += 1,
        }
    }
    println!("40 calls: {ok} reserved, {failed} failed");

    let scrape = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .expect("the exporter answers")
        .text()
        .await
        .expect("a text body");
    println!("scraped http://{addr}/metrics:");
    for line in scrape.lines().filter(|l| l.starts_with("retry_kit_")) {
        println!("  {line}");
    }
}
