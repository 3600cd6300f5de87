//! gRPC retries by a service config: a tonic health client with `GrpcRetryLayer` between it and
//! its channel, calling a flaky server on loopback.
//!
//! ```text
//! cargo run -p retry-kit-integration --example grpc_client
//! ```
//!
//! The server answers `UNAVAILABLE` to its first two requests (the second with a pushback of
//! 50 ms), then serves; it prints the retry headers of each request it receives. The client's
//! `on_failure` hook prints each failed attempt and what the layer does next.

use retry_kit::tonic::{GrpcFailure, GrpcRetryLayer};
use retry_kit::{Failure, Next};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;
use tokio::net::TcpListener;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Endpoint, Server};
use tonic::{Request, Status};
use tonic_health::ServingStatus;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus as WireStatus;
use tonic_health::pb::health_client::HealthClient;
use tower::ServiceBuilder;

/// The service config a deployment would publish (or the client would carry): retry the
/// health service on `UNAVAILABLE`, up to 4 attempts, within 2 s; throttle retries when more
/// than about one call in ten fails.
const SERVICE_CONFIG: &str = r#"{
  "methodConfig": [{
    "name": [{"service": "grpc.health.v1.Health"}],
    "retryPolicy": {
      "maxAttempts": 4,
      "initialBackoff": "0.02s",
      "maxBackoff": "0.2s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    },
    "timeout": "2s"
  }],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
}"#;

fn on_failure(f: &Failure<'_, GrpcFailure>) {
    let next = match f.next {
        Next::Retry(delay) => format!("retry in {} ms", delay.as_millis()),
        Next::Stop(reason) => format!("stop ({reason})"),
        _ => "wait for the other attempts".to_owned(),
    };
    println!(
        "  client: attempt {} failed: {:?} \"{}\" ({}); {next}",
        f.attempt,
        f.error.code(),
        f.error.status().message(),
        f.class
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = flaky_server().await?;

    let layer = GrpcRetryLayer::from_service_config(SERVICE_CONFIG)?.on_failure(on_failure);
    let channel = Endpoint::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    let mut client = HealthClient::new(ServiceBuilder::new().layer(layer).service(channel));

    println!("Check(\"retry.kit.Demo\"): the server is flaky");
    let start = Instant::now();
    let request = HealthCheckRequest {
        service: "retry.kit.Demo".to_owned(),
    };
    let answer = client.check(request).await?.into_inner();
    let status = WireStatus::try_from(answer.status).map_or("?", |s| s.as_str_name());
    println!("  -> {status} after {} ms\n", start.elapsed().as_millis());

    println!("Check(\"no.such.Service\"): NOT_FOUND is not in retryableStatusCodes");
    let request = HealthCheckRequest {
        service: "no.such.Service".to_owned(),
    };
    let status = client.check(request).await.unwrap_err();
    println!("  -> {:?} \"{}\"", status.code(), status.message());
    Ok(())
}

/// A health server on 127.0.0.1 whose first two requests are refused.
async fn flaky_server() -> std::io::Result<std::net::SocketAddr> {
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter
        .set_service_status("retry.kit.Demo", ServingStatus::Serving)
        .await;
    let requests = Arc::new(AtomicU32::new(0));
    let flaky = move |request: Request<()>| {
        let n = requests.fetch_add(1, Ordering::SeqCst) + 1;
        let header = |name| {
            let value = request.metadata().get(name)?;
            Some(value.to_str().unwrap_or("?").to_owned())
        };
        println!(
            "  server: request {n}, grpc-previous-rpc-attempts: {}, grpc-timeout: {}",
            header("grpc-previous-rpc-attempts").unwrap_or_else(|| "-".into()),
            header("grpc-timeout").unwrap_or_else(|| "-".into()),
        );
        match n {
            1 => Err(Status::unavailable("warming up")),
            2 => {
                let mut status = Status::unavailable("still warming up");
                let pushback = "50".parse().map_err(|_| Status::internal("pushback"))?;
                status
                    .metadata_mut()
                    .insert("grpc-retry-pushback-ms", pushback);
                Err(status)
            }
            _ => Ok(request),
        }
    };
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _reporter = reporter;
        let served = Server::builder()
            .serve_with_incoming(
                InterceptedService::new(health, flaky),
                TcpIncoming::from(listener),
            )
            .await;
        if let Err(e) = served {
            eprintln!("server: {e}");
        }
    });
    Ok(addr)
}
