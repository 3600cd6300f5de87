//! `registry::snapshot()` served as JSON from a health endpoint on 127.0.0.1 (hyper), after a
//! configuration file set the policy, the breakers and the budget, and a dependency that keeps
//! failing opened its breaker. The example fetches its own endpoint and prints the answer.
//!
//! ```sh
//! cargo run -p retry-kit-integration --example health
//! ```

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use retry_kit::{
    BreakerSettings, BudgetSettings, CircuitBreaker, CircuitOpen, CircuitState, Classify,
    PolicyCell, RetryBudget, RetryPolicy, registry, retryable,
};
use std::convert::Infallible;
use std::time::Duration;
use tokio::net::TcpListener;

/// The service's configuration file: what an operator edits and the service reloads.
const CONFIG: &str = r#"
[policy]
attempts = 3
backoff = "exponential"
base = "10ms"
max_delay = "100ms"
jitter = "equal"

[payments]
failure_threshold = 3
open_for = "30s"

[inventory]
failure_threshold = 5
open_for = "10s"
success_threshold = 2

[search]
max_tokens = 20
token_ratio = 0.5
"#;

#[derive(serde::Deserialize)]
struct Config {
    policy: RetryPolicy,
    payments: BreakerSettings,
    inventory: BreakerSettings,
    search: BudgetSettings,
}

// Built with placeholders; the configuration file gives them their settings at start-up (and
// at every reload) without losing their state.
static POLICY: PolicyCell = PolicyCell::new(RetryPolicy::new());
static PAYMENTS: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(1)).name("payments");
static INVENTORY: CircuitBreaker = CircuitBreaker::new(1, Duration::from_secs(1)).name("inventory");
static SEARCH: RetryBudget = RetryBudget::new(1, 1.0).name("search");

#[derive(Debug, Classify)]
enum CallError {
    #[classify(transient)]
    Unavailable,
    #[classify(delegate)]
    Open(CircuitOpen),
}

impl From<CircuitOpen> for CallError {
    fn from(open: CircuitOpen) -> Self {
        CallError::Open(open)
    }
}

/// The payment provider is down.
#[retryable(policy = POLICY, circuit = PAYMENTS, budget = SEARCH)]
async fn charge() -> Result<(), CallError> {
    Err(CallError::Unavailable)
}

/// The inventory service answers.
#[retryable(policy = POLICY, circuit = INVENTORY, budget = SEARCH)]
async fn reserve() -> Result<u32, CallError> {
    Ok(7)
}

/// `GET /health`: the snapshot as JSON, `503` while any breaker is open (a load balancer can
/// act on the status, an operator reads the body).
async fn health(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    if request.uri().path() != "/health" {
        let mut missing = Response::new(Full::new(Bytes::new()));
        *missing.status_mut() = StatusCode::NOT_FOUND;
        return Ok(missing);
    }
    let snapshot = registry::snapshot();
    let open = snapshot
        .breakers
        .iter()
        .any(|b| b.state == CircuitState::Open);
    let body = serde_json::to_vec_pretty(&snapshot).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(body)));
    if open {
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    }
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let config: Config = toml::from_str(CONFIG).expect("the configuration file is valid");
    POLICY.set(config.policy);
    PAYMENTS.set_settings(config.payments);
    INVENTORY.set_settings(config.inventory);
    SEARCH.set_settings(config.search);

    // The first call's three failed attempts open the payment provider's breaker; the next two
    // calls are refused without reaching it.
    for _ in 0..3 {
        let result = charge().await;
        println!("charge: {result:?}");
    }
    println!("reserve: {:?}", reserve().await);

    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free loopback port");
    let addr = listener.local_addr().expect("a bound address");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let served = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service_fn(health))
                    .await;
                if let Err(error) = served {
                    eprintln!("health connection: {error}");
                }
            });
        }
    });

    let response = reqwest::get(format!("http://{addr}/health"))
        .await
        .expect("the health endpoint answers");
    println!("GET http://{addr}/health -> {}", response.status());
    println!("{}", response.text().await.expect("a JSON body"));
}
