//! `GrpcRetryLayer` between a generated tonic client and its channel, against a real tonic
//! server on 127.0.0.1 (`grpc_server`): each of gRFC A6's wire rules, asserted on what the
//! server received (how many attempts, their `grpc-previous-rpc-attempts` and `grpc-timeout`,
//! their message bytes) and what the caller got.
//!
//! Real time with tiny delays: a paused clock jumps to the next timer whenever the runtime
//! waits on loopback I/O, which would fire deadlines and hedges that real time never reaches.
//! No assertion is about time; each test is bounded by `bounded` so that a hang fails it.
#![cfg(feature = "tonic")]
#![deny(warnings, unused_qualifications)]

mod grpc_server;

use futures_util::Stream;
use grpc_server::{Act, SERVICE, channel, read_then_close, serve};
use retry_kit::run::Hook;
use retry_kit::tonic::{GrpcFailure, GrpcRetryLayer, GrpcRetryService};
use retry_kit::{CircuitBreaker, CircuitState, PerKey, RetryBudget};
use retry_kit::{ErrorClass, Failure, Next, RetryPolicy, StopReason};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::transport::Channel;
use tonic::transport::Endpoint;
use tonic::{Code, Request};
use tonic_health::pb::health_check_response::ServingStatus as WireStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tower::ServiceBuilder;

type Client = HealthClient<GrpcRetryService<Channel, Record>>;

/// Every failed attempt's `(attempt, class, next)`.
type Failures = Arc<Mutex<Vec<(u32, ErrorClass, Next)>>>;

/// The layer's `on_failure` hook: records into `Failures`.
#[derive(Clone)]
struct Record(Failures);

impl Hook<GrpcFailure> for Record {
    fn on_failure(&mut self, f: &Failure<'_, GrpcFailure>) {
        self.0.lock().unwrap().push((f.attempt, f.class, f.next));
    }
}

/// Run a test body, failing it if it has not finished in ten seconds.
async fn bounded<F: Future>(body: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(10), body)
        .await
        .expect("the test finished")
}

/// A health client through `layer` to `addr`, recording failed attempts.
async fn connect(addr: SocketAddr, layer: GrpcRetryLayer) -> (Client, Failures) {
    let failures: Failures = Arc::default();
    let layer = layer.on_failure(Record(failures.clone()));
    let service = ServiceBuilder::new()
        .layer(layer)
        .service(channel(addr).await);
    (HealthClient::new(service), failures)
}

fn config(method_config: &str) -> GrpcRetryLayer {
    GrpcRetryLayer::from_service_config(&format!(r#"{{"methodConfig": [{method_config}]}}"#))
        .expect("a valid service config")
}

/// Every method: up to `attempts`, 1 ms backoff, these codes retryable.
fn retry_policy(attempts: u32, codes: &str) -> String {
    format!(
        r#"{{"name": [{{}}], "retryPolicy": {{"maxAttempts": {attempts},
            "initialBackoff": "0.001s", "maxBackoff": "0.001s", "backoffMultiplier": 1,
            "retryableStatusCodes": {codes}}}}}"#
    )
}

fn check_request() -> HealthCheckRequest {
    HealthCheckRequest {
        service: SERVICE.to_owned(),
    }
}

async fn check(client: &mut Client) -> Result<i32, tonic::Status> {
    Ok(client.check(check_request()).await?.into_inner().status)
}

const SERVING: i32 = WireStatus::Serving as i32;

// Retries and `grpc-previous-rpc-attempts`.

#[tokio::test]
async fn unavailable_is_retried_and_each_retry_says_how_many_came_before() {
    bounded(async {
        let (addr, log) = serve(|n, _| match n {
            1 | 2 => Act::Status(Code::Unavailable, None),
            _ => Act::Pass,
        })
        .await;
        let (mut client, failures) =
            connect(addr, config(&retry_policy(4, r#"["UNAVAILABLE"]"#))).await;

        assert_eq!(check(&mut client).await.unwrap(), SERVING);

        assert_eq!(
            log.previous_attempts(),
            [None, Some("1".into()), Some("2".into())]
        );
        // The same message, byte for byte, on every attempt.
        let seen = log.seen();
        assert!(
            seen.iter()
                .all(|s| s.body == seen[0].body && !s.body.is_empty())
        );
        let classes: Vec<_> = failures.lock().unwrap().iter().map(|f| f.1).collect();
        assert_eq!(classes, [ErrorClass::Transient, ErrorClass::Transient]);
    })
    .await
}

#[tokio::test]
async fn a_code_the_config_does_not_list_is_returned_at_once() {
    bounded(async {
        let (addr, log) = serve(|_, _| Act::Status(Code::Unavailable, None)).await;
        let (mut client, failures) =
            connect(addr, config(&retry_policy(4, r#"["ABORTED"]"#))).await;

        let status = check(&mut client).await.unwrap_err();

        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(status.message(), "scripted");
        assert_eq!(log.requests(), 1);
        assert_eq!(
            *failures.lock().unwrap(),
            [(1, ErrorClass::Permanent, Next::Stop(StopReason::Permanent))]
        );
    })
    .await
}

#[tokio::test]
async fn max_attempts_above_five_is_five() {
    bounded(async {
        let (addr, log) = serve(|_, _| Act::Status(Code::Unavailable, None)).await;
        let (mut client, _) = connect(addr, config(&retry_policy(9, "[14]"))).await;

        assert_eq!(
            check(&mut client).await.unwrap_err().code(),
            Code::Unavailable
        );

        assert_eq!(log.requests(), 5);
    })
    .await
}

/// A misspelt key used to leave a layer that retried nothing (`methodConfigs`, a
/// `retryPolicy` at the top level) or blamed the key that was meant (`retryableStatusCode`
/// reported `retryableStatusCodes` as missing): each is refused, naming the key as written.
#[test]
fn a_misspelt_service_config_is_refused_not_a_layer_that_does_less() {
    let entry = retry_policy(4, r#"["UNAVAILABLE"]"#);
    let cases = [
        (
            format!(r#"{{"methodConfigs": [{entry}]}}"#),
            "methodConfigs",
            "did you mean `methodConfig`?",
        ),
        (
            r#"{"retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s",
                "maxBackoff": "1s", "backoffMultiplier": 2,
                "retryableStatusCodes": ["UNAVAILABLE"]}}"#
                .to_owned(),
            "retryPolicy",
            "`retryPolicy` goes in a methodConfig entry",
        ),
        (
            format!(
                r#"{{"methodConfig": [{}]}}"#,
                entry.replace("retryableStatusCodes", "retryableStatusCode")
            ),
            "methodConfig[0].retryPolicy.retryableStatusCode",
            "did you mean `retryableStatusCodes`?",
        ),
    ];
    for (config, field, hint) in cases {
        let error = GrpcRetryLayer::from_service_config(&config).unwrap_err();
        assert_eq!(error.field(), field);
        assert!(error.to_string().contains(hint), "{error}");
    }
}

#[tokio::test]
async fn a_method_without_a_policy_is_called_once() {
    bounded(async {
        let (addr, log) = serve(|_, _| Act::Status(Code::Unavailable, None)).await;
        let entry = format!(
            r#"{}, {{"name": [{{"service": "grpc.health.v1.Health", "method": "Check"}}]}}"#,
            retry_policy(4, r#"["UNAVAILABLE"]"#)
        );
        let (mut client, _) = connect(addr, config(&entry)).await;

        assert_eq!(
            check(&mut client).await.unwrap_err().code(),
            Code::Unavailable
        );

        assert_eq!(
            log.requests(),
            1,
            "the method's own entry wins over the default"
        );
    })
    .await
}

#[tokio::test]
async fn new_retries_by_the_crates_table() {
    bounded(async {
        let (addr, log) = serve(|n, _| match n {
            1 => Act::Status(Code::ResourceExhausted, None),
            2 => Act::Status(Code::DeadlineExceeded, None),
            _ => Act::Pass,
        })
        .await;
        let policy = RetryPolicy::fixed(Duration::from_millis(1)).attempts(4);
        let (mut client, failures) = connect(addr, GrpcRetryLayer::new(policy)).await;

        // DEADLINE_EXCEEDED is idempotent-only: not retried for a policy that is not.
        assert_eq!(
            check(&mut client).await.unwrap_err().code(),
            Code::DeadlineExceeded
        );
        assert_eq!(log.requests(), 2);
        assert_eq!(
            failures.lock().unwrap()[1],
            (
                2,
                ErrorClass::IdempotentOnly,
                Next::Stop(StopReason::NotIdempotent)
            )
        );

        let idempotent = GrpcRetryLayer::new(policy.idempotent(true));
        let (addr, log) = serve(|n, _| match n {
            1 => Act::Status(Code::DeadlineExceeded, None),
            _ => Act::Pass,
        })
        .await;
        let (mut client, _) = connect(addr, idempotent).await;
        assert_eq!(check(&mut client).await.unwrap(), SERVING);
        assert_eq!(log.requests(), 2);
    })
    .await
}

// Pushback.

#[tokio::test]
async fn pushback_is_the_next_delay_exactly_even_above_max_backoff() {
    bounded(async {
        let (addr, log) = serve(|n, _| match n {
            1 => Act::Status(Code::Unavailable, Some("30")),
            _ => Act::Pass,
        })
        .await;
        // maxBackoff is 1 ms; the server asks for 30 ms, and gets exactly that.
        let (mut client, failures) = connect(addr, config(&retry_policy(3, "[14]"))).await;

        assert_eq!(check(&mut client).await.unwrap(), SERVING);

        assert_eq!(log.requests(), 2);
        assert_eq!(
            *failures.lock().unwrap(),
            [(
                1,
                ErrorClass::Transient,
                Next::Retry(Duration::from_millis(30))
            )]
        );
    })
    .await
}

/// A `google.rpc.RetryInfo` of 40 ms inside a `google.rpc.Status` (code 14), encoded.
const RETRY_INFO_40_MS: &[u8] = &[
    0x08, 0x0e, 0x1a, 0x33, 0x0a, 0x28, 0x74, 0x79, 0x70, 0x65, 0x2e, 0x67, 0x6f, 0x6f, 0x67, 0x6c,
    0x65, 0x61, 0x70, 0x69, 0x73, 0x2e, 0x63, 0x6f, 0x6d, 0x2f, 0x67, 0x6f, 0x6f, 0x67, 0x6c, 0x65,
    0x2e, 0x72, 0x70, 0x63, 0x2e, 0x52, 0x65, 0x74, 0x72, 0x79, 0x49, 0x6e, 0x66, 0x6f, 0x12, 0x07,
    0x0a, 0x05, 0x10, 0x80, 0xb4, 0x89, 0x13,
];

/// Without a pushback, a `google.rpc.RetryInfo` in the status details says the wait, as
/// Google's clients read it: exactly, under a service config (maxBackoff is 1 ms here), and at
/// least, under `new(policy)`.
#[tokio::test]
async fn a_retry_info_in_the_details_is_the_next_delay_when_there_is_no_pushback() {
    bounded(async {
        let (addr, log) = serve(|n, _| match n {
            1 => Act::StatusWithDetails(Code::Unavailable, RETRY_INFO_40_MS),
            _ => Act::Pass,
        })
        .await;
        let (mut client, failures) = connect(addr, config(&retry_policy(3, "[14]"))).await;
        assert_eq!(check(&mut client).await.unwrap(), SERVING);
        assert_eq!(log.requests(), 2);
        assert_eq!(
            *failures.lock().unwrap(),
            [(
                1,
                ErrorClass::Transient,
                Next::Retry(Duration::from_millis(40))
            )]
        );

        let (addr, log) = serve(|n, _| match n {
            1 => Act::StatusWithDetails(Code::Unavailable, RETRY_INFO_40_MS),
            _ => Act::Pass,
        })
        .await;
        let policy = RetryPolicy::fixed(Duration::from_millis(5)).attempts(3);
        let (mut client, failures) = connect(addr, GrpcRetryLayer::new(policy)).await;
        assert_eq!(check(&mut client).await.unwrap(), SERVING);
        assert_eq!(log.requests(), 2);
        assert_eq!(
            *failures.lock().unwrap(),
            [(
                1,
                ErrorClass::Transient,
                Next::Retry(Duration::from_millis(40))
            )]
        );
    })
    .await
}

#[tokio::test]
async fn a_negative_or_unparseable_pushback_stops_the_call() {
    bounded(async {
        for pushback in ["-1", "soon"] {
            let (addr, log) =
                serve(move |_, _| Act::Status(Code::Unavailable, Some(pushback))).await;
            let (mut client, failures) = connect(addr, config(&retry_policy(4, "[14]"))).await;

            let status = check(&mut client).await.unwrap_err();

            assert_eq!(status.code(), Code::Unavailable, "{pushback}");
            assert_eq!(log.requests(), 1, "{pushback}");
            assert_eq!(
                *failures.lock().unwrap(),
                [(
                    1,
                    ErrorClass::Transient,
                    Next::Stop(StopReason::NotRepeatable)
                )],
                "{pushback}"
            );
        }
    })
    .await
}

/// Under `new(policy)` a pushback is a retry-after as everywhere in the crate: one past the
/// policy's `max_delay` stops the call at once, instead of holding it for a minute (or, for
/// 2^32 s, for ever: without a deadline nothing else bounds it).
#[tokio::test]
async fn a_pushback_past_max_delay_stops_a_call_under_new() {
    bounded(async {
        for pushback in ["60000", "4294967296000"] {
            let (addr, log) =
                serve(move |_, _| Act::Status(Code::ResourceExhausted, Some(pushback))).await;
            let policy = RetryPolicy::fixed(Duration::from_millis(1))
                .max_delay(Duration::from_secs(1))
                .attempts(3);
            let (mut client, failures) = connect(addr, GrpcRetryLayer::new(policy)).await;

            let status = check(&mut client).await.unwrap_err();

            assert_eq!(status.code(), Code::ResourceExhausted, "{pushback}");
            assert_eq!(log.requests(), 1, "{pushback}");
            assert_eq!(
                *failures.lock().unwrap(),
                [(
                    1,
                    ErrorClass::Transient,
                    Next::Stop(StopReason::RetryAfterTooLong)
                )],
                "{pushback}"
            );
        }
    })
    .await
}

/// Under `new(policy)` a pushback is a floor under the backoff, not the wait itself.
#[tokio::test]
async fn a_pushback_under_new_is_a_floor_under_the_backoff() {
    bounded(async {
        let (addr, log) = serve(|n, _| match n {
            1 => Act::Status(Code::Unavailable, Some("5")),
            _ => Act::Pass,
        })
        .await;
        let policy = RetryPolicy::fixed(Duration::from_millis(20)).attempts(3);
        let (mut client, failures) = connect(addr, GrpcRetryLayer::new(policy)).await;

        assert_eq!(check(&mut client).await.unwrap(), SERVING);

        assert_eq!(log.requests(), 2);
        assert_eq!(
            *failures.lock().unwrap(),
            [(
                1,
                ErrorClass::Transient,
                Next::Retry(Duration::from_millis(20))
            )]
        );
    })
    .await
}

/// Under a service config a pushback is waited exactly, but only up to the layer's
/// `max_pushback` (30 s unless set): a longer one stops the call.
#[tokio::test]
async fn a_pushback_past_max_pushback_stops_a_call_under_a_service_config() {
    bounded(async {
        let stopped = [(
            1,
            ErrorClass::Transient,
            Next::Stop(StopReason::RetryAfterTooLong),
        )];
        for pushback in ["60000", "4294967296000"] {
            let (addr, log) =
                serve(move |_, _| Act::Status(Code::Unavailable, Some(pushback))).await;
            let (mut client, failures) = connect(addr, config(&retry_policy(3, "[14]"))).await;

            let status = check(&mut client).await.unwrap_err();

            assert_eq!(status.code(), Code::Unavailable, "{pushback}");
            assert_eq!(log.requests(), 1, "{pushback}");
            assert_eq!(*failures.lock().unwrap(), stopped, "{pushback}");
        }

        // A bound of 20 ms: 30 ms stops the call, 10 ms is waited exactly.
        let (addr, log) = serve(|n, _| match n {
            1 => Act::Status(Code::Unavailable, Some("10")),
            2 => Act::Status(Code::Unavailable, Some("30")),
            _ => Act::Pass,
        })
        .await;
        let layer = config(&retry_policy(5, "[14]")).max_pushback(Duration::from_millis(20));
        let (mut client, failures) = connect(addr, layer).await;

        assert_eq!(
            check(&mut client).await.unwrap_err().code(),
            Code::Unavailable
        );

        assert_eq!(log.requests(), 2);
        assert_eq!(
            *failures.lock().unwrap(),
            [
                (
                    1,
                    ErrorClass::Transient,
                    Next::Retry(Duration::from_millis(10))
                ),
                (
                    2,
                    ErrorClass::Transient,
                    Next::Stop(StopReason::RetryAfterTooLong)
                )
            ]
        );
    })
    .await
}

// Commitment: once response headers arrive that are not a Trailers-Only status.

#[tokio::test]
async fn a_status_after_a_message_is_returned_and_never_retried() {
    bounded(async {
        let (addr, log) = serve(|_, _| Act::StatusAfterFirstMessage(Code::Unavailable)).await;
        let (mut client, failures) = connect(addr, config(&retry_policy(4, "[14]"))).await;

        let mut stream = client.watch(check_request()).await.unwrap().into_inner();
        let first: HealthCheckResponse = stream.message().await.unwrap().unwrap();
        let ended = stream.message().await.unwrap_err();

        assert_eq!(first.status, SERVING);
        assert_eq!(ended.code(), Code::Unavailable);
        assert_eq!(log.requests(), 1);
        assert!(
            failures.lock().unwrap().is_empty(),
            "no failed attempt: it committed"
        );
    })
    .await
}

#[tokio::test]
async fn response_headers_commit_a_unary_call_whatever_its_trailers_say() {
    bounded(async {
        let (addr, log) = serve(|_, _| Act::HeadersThenStatus(Code::Unavailable)).await;
        let (mut client, _) = connect(addr, config(&retry_policy(4, "[14]"))).await;

        assert_eq!(
            check(&mut client).await.unwrap_err().code(),
            Code::Unavailable
        );

        assert_eq!(log.requests(), 1);
    })
    .await
}

#[tokio::test]
async fn a_server_stream_is_retried_until_its_headers_arrive() {
    bounded(async {
        let (addr, log) = serve(|n, _| match n {
            1 => Act::Status(Code::Unavailable, None),
            _ => Act::Pass,
        })
        .await;
        let (mut client, _) = connect(addr, config(&retry_policy(4, "[14]"))).await;

        let mut stream = client.watch(check_request()).await.unwrap().into_inner();

        assert_eq!(stream.message().await.unwrap().unwrap().status, SERVING);
        assert_eq!(log.requests(), 2);
        assert_eq!(log.previous_attempts(), [None, Some("1".into())]);
    })
    .await
}

// The replay buffer.

#[tokio::test]
async fn a_request_over_the_buffer_is_committed_and_sent_once() {
    bounded(async {
        let (addr, log) = serve(|_, _| Act::Status(Code::Unavailable, None)).await;
        // The message is the service name (14 bytes) in 5 + 2 bytes of framing: over 16.
        let layer = config(&retry_policy(4, "[14]")).buffer_limit(16);
        let (mut client, failures) = connect(addr, layer).await;

        assert_eq!(
            check(&mut client).await.unwrap_err().code(),
            Code::Unavailable
        );

        assert_eq!(log.requests(), 1);
        assert_eq!(
            *failures.lock().unwrap(),
            [(
                1,
                ErrorClass::Transient,
                Next::Stop(StopReason::NotRepeatable)
            )]
        );
    })
    .await
}

/// A client-streaming call of `messages` through `layer` to `/retry.kit.Test/Upload`.
async fn upload(
    addr: SocketAddr,
    layer: GrpcRetryLayer,
    messages: Vec<HealthCheckRequest>,
) -> Result<HealthCheckResponse, tonic::Status> {
    upload_stream(addr, layer, futures_util::stream::iter(messages)).await
}

/// A client-streaming call of the messages of `stream` through `layer` to
/// `/retry.kit.Test/Upload`.
async fn upload_stream(
    addr: SocketAddr,
    layer: GrpcRetryLayer,
    stream: impl Stream<Item = HealthCheckRequest> + Send + 'static,
) -> Result<HealthCheckResponse, tonic::Status> {
    let service = ServiceBuilder::new()
        .layer(layer)
        .service(channel(addr).await);
    let mut grpc = tonic::client::Grpc::new(service);
    grpc.ready().await.unwrap();
    let codec = tonic_prost::ProstCodec::<HealthCheckRequest, HealthCheckResponse>::default();
    let path = http::uri::PathAndQuery::from_static("/retry.kit.Test/Upload");
    Ok(grpc
        .client_streaming(Request::new(stream), path, codec)
        .await?
        .into_inner())
}

fn messages(n: usize, len: usize) -> Vec<HealthCheckRequest> {
    (0..n)
        .map(|i| HealthCheckRequest {
            service: format!("{i}").repeat(len),
        })
        .collect()
}

#[tokio::test]
async fn a_client_stream_within_the_buffer_is_replayed_whole() {
    bounded(async {
        // HealthCheckResponse { status: SERVING }, encoded.
        let (addr, log) = serve(|n, _| match n {
            1 => Act::Status(Code::Unavailable, None),
            _ => Act::Message(bytes::Bytes::from_static(&[8, 1])),
        })
        .await;

        let response = upload(addr, config(&retry_policy(3, "[14]")), messages(3, 4)).await;

        assert_eq!(response.unwrap().status, SERVING);
        let seen = log.seen();
        assert_eq!(seen.len(), 2);
        assert!(seen.iter().all(|s| s.path == "/retry.kit.Test/Upload"));
        // Three framed messages of 2 + 4 bytes each, the same on both attempts.
        assert_eq!(seen[0].body.len(), 3 * (5 + 6));
        assert_eq!(seen[0].body, seen[1].body);
    })
    .await
}

/// `messages` as a client sends them when they come: the first at once, then one every `gap`.
fn paced(
    messages: Vec<HealthCheckRequest>,
    gap: Duration,
) -> impl Stream<Item = HealthCheckRequest> + Send + 'static {
    futures_util::stream::unfold(
        messages.into_iter().enumerate(),
        move |mut left| async move {
            let (i, message) = left.next()?;
            if i > 0 {
                tokio::time::sleep(gap).await;
            }
            Some((message, left))
        },
    )
}

#[tokio::test]
async fn a_hedged_client_stream_reaches_both_attempts_whole() {
    bounded(async {
        // Both attempts answered only once their stream has ended (the server reads a request
        // whole first), with a non-fatal status: the call ends when both have been answered.
        let (addr, log) = serve(|_, _| Act::Status(Code::Unavailable, None)).await;
        // Five messages 20 ms apart; the hedge starts after 30 ms, between the second and the
        // third, so from then on the two attempts wait on one source for each message. The
        // first used to be left at two messages, never woken again.
        let stream = paced(messages(5, 4), Duration::from_millis(20));

        let response = upload_stream(addr, hedging(2, "0.03s", "[14]"), stream).await;

        assert_eq!(response.unwrap_err().code(), Code::Unavailable);
        let seen = log.seen();
        assert_eq!(seen.len(), 2, "both attempts were read to their end");
        let mut previous = log.previous_attempts();
        previous.sort();
        assert_eq!(previous, [None, Some("1".into())], "the second was a hedge");
        // Five framed messages of 2 + 4 bytes each, on both attempts.
        assert_eq!(seen[0].body.len(), 5 * (5 + 6));
        assert_eq!(seen[0].body, seen[1].body);
    })
    .await
}

#[tokio::test]
async fn a_client_stream_over_the_buffer_is_sent_once() {
    bounded(async {
        let (addr, log) = serve(|_, _| Act::Status(Code::Unavailable, None)).await;
        let layer = config(&retry_policy(3, "[14]")).buffer_limit(20);

        let response = upload(addr, layer, messages(3, 4)).await;

        assert_eq!(response.unwrap_err().code(), Code::Unavailable);
        assert_eq!(log.requests(), 1);
        assert_eq!(
            log.seen()[0].body.len(),
            33,
            "the whole stream was still sent, once"
        );
    })
    .await
}

// The deadline.

#[tokio::test]
async fn each_attempt_carries_the_time_left_of_one_deadline() {
    bounded(async {
        let (addr, log) = serve(|n, _| match n {
            1 | 2 => Act::Status(Code::Unavailable, None),
            _ => Act::Pass,
        })
        .await;
        let policy = RetryPolicy::fixed(Duration::from_millis(20)).attempts(3);
        let (mut client, _) = connect(addr, GrpcRetryLayer::new(policy)).await;
        let mut request = Request::new(check_request());
        request.set_timeout(Duration::from_secs(5));

        client.check(request).await.unwrap();

        let timeouts = log.timeouts();
        assert_eq!(timeouts.len(), 3);
        assert!(timeouts[0] <= Duration::from_secs(5), "{timeouts:?}");
        // Each attempt starts at least 20 ms after the one before: less time is left.
        assert!(timeouts.windows(2).all(|w| w[1] < w[0]), "{timeouts:?}");
    })
    .await
}

#[tokio::test]
async fn the_service_configs_timeout_is_a_deadline_the_caller_can_shorten() {
    bounded(async {
        let (addr, log) = serve(|_, _| Act::Pass).await;
        let entry = r#"{"name": [{}], "timeout": "30s"}"#;
        let (mut client, _) = connect(addr, config(entry)).await;

        check(&mut client).await.unwrap();
        let mut request = Request::new(check_request());
        request.set_timeout(Duration::from_secs(2));
        client.check(request).await.unwrap();

        let timeouts = log.timeouts();
        assert!(timeouts[0] <= Duration::from_secs(30) && timeouts[0] > Duration::from_secs(2));
        assert!(timeouts[1] <= Duration::from_secs(2), "{timeouts:?}");
    })
    .await
}

#[tokio::test]
async fn the_deadline_ends_a_hanging_attempt_and_the_call() {
    bounded(async {
        let (addr, log) = serve(|_, _| Act::Hang).await;
        let (mut client, failures) = connect(addr, config(&retry_policy(4, "[14]"))).await;
        let mut request = Request::new(check_request());
        request.set_timeout(Duration::from_millis(50));

        let status = client.check(request).await.unwrap_err();

        // tonic's server, which honours the attempt's grpc-timeout, may answer first (with
        // CANCELLED): the caller still gets the deadline.
        assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
        assert_eq!(log.requests(), 1, "no attempt after the deadline");
        log.cancelled(1).await;
        assert_eq!(
            *failures.lock().unwrap(),
            [(
                1,
                ErrorClass::IdempotentOnly,
                Next::Stop(StopReason::DeadlineExceeded)
            )]
        );
    })
    .await
}

/// The server honours each attempt's `grpc-timeout` with a timer of its own (tonic's answers
/// CANCELLED, "Timeout expired"), which fires together with the layer's, since the attempt is
/// sent with exactly the time left. Whichever answers first, a call whose deadline has passed
/// ends in DEADLINE_EXCEEDED, stopped by the deadline: under a service config, under `new`
/// (idempotent, where both codes would otherwise be judged by the table) and hedged.
#[tokio::test]
async fn a_call_past_its_deadline_is_deadline_exceeded_whatever_the_servers_timer_answers() {
    const CALLS: usize = 20;
    bounded(async {
        let idempotent = RetryPolicy::fixed(Duration::from_millis(1))
            .attempts(4)
            .idempotent(true);
        let layers = [
            ("service config", config(&retry_policy(4, "[1, 4, 14]"))),
            ("new", GrpcRetryLayer::new(idempotent)),
            ("hedged", hedging(3, "0.004s", "[1, 4, 14]")),
        ];
        for (name, layer) in layers {
            let (addr, _) = serve(|_, _| Act::Hang).await;
            let (mut client, failures) = connect(addr, layer).await;
            let mut codes = Vec::new();
            for _ in 0..CALLS {
                let mut request = Request::new(check_request());
                request.set_timeout(Duration::from_millis(10));
                codes.push(client.check(request).await.unwrap_err().code());
            }

            let deadline = codes
                .iter()
                .filter(|c| **c == Code::DeadlineExceeded)
                .count();
            assert_eq!(deadline, CALLS, "{name}: {codes:?}");
            // Every call ends with a stop for the deadline (a hedged call's earlier attempts
            // wait for the last one, which stops it).
            let failures = failures.lock().unwrap();
            let stops: Vec<_> = failures
                .iter()
                .filter(|f| matches!(f.2, Next::Stop(_)))
                .map(|f| f.2)
                .collect();
            assert_eq!(
                stops,
                [Next::Stop(StopReason::DeadlineExceeded); CALLS],
                "{name}: {failures:?}"
            );
        }
    })
    .await
}

/// A caller's `grpc-timeout` the protocol does not allow used to be forwarded as it was and
/// to bound nothing. It is a protocol error (grpc-go's server answers INTERNAL, the C core
/// resets the stream): the call fails with INTERNAL, naming the header, and nothing is sent.
#[tokio::test]
async fn a_malformed_grpc_timeout_fails_the_call_and_is_never_sent() {
    bounded(async {
        let (addr, log) = serve(|_, _| Act::Pass).await;
        let (mut client, failures) = connect(addr, config(&retry_policy(4, "[14]"))).await;
        for bad in ["5s", "1.5S", "123456789m", "-1S", "S", "10"] {
            let mut request = Request::new(check_request());
            request
                .metadata_mut()
                .insert("grpc-timeout", bad.parse().unwrap());

            let status = client.check(request).await.unwrap_err();

            assert_eq!(status.code(), Code::Internal, "{bad}: {status:?}");
            assert!(status.message().contains("grpc-timeout"), "{status:?}");
            assert!(status.message().contains(bad), "{status:?}");
        }
        assert_eq!(log.requests(), 0, "{:?}", log.seen());
        assert!(failures.lock().unwrap().is_empty(), "no attempt was made");
        // A well-formed one still goes through.
        let mut request = Request::new(check_request());
        request
            .metadata_mut()
            .insert("grpc-timeout", "5S".parse().unwrap());
        client.check(request).await.unwrap();
        assert_eq!(log.requests(), 1);
    })
    .await
}

// Per-attempt timeouts.

/// `perAttemptRecvTimeout` used to be read and ignored: a first attempt slow to answer
/// (400 ms) ran to its end instead of being cut at 50 ms. It is cut, and retried though
/// CANCELLED is not among the codes the config lists, as gRPC's C core retries it.
#[tokio::test]
async fn per_attempt_recv_timeout_cuts_a_slow_attempt_and_retries_it_whatever_the_codes() {
    bounded(async {
        let (addr, log) = serve(|n, _| match n {
            1 => Act::Slow(Duration::from_millis(400)),
            _ => Act::Pass,
        })
        .await;
        let layer = config(&per_attempt_recv_timeout(3, "0.05s"));
        let (mut client, failures) = connect(addr, layer).await;

        assert_eq!(check(&mut client).await.unwrap(), SERVING);

        assert_eq!(log.previous_attempts(), [None, Some("1".into())]);
        let failures = failures.lock().unwrap();
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert_eq!(failures[0].1, ErrorClass::Transient);
        assert!(matches!(failures[0].2, Next::Retry(_)), "{failures:?}");
    })
    .await
}

/// Every attempt of a method whose server hangs is cut: the caller gets the last attempt's
/// CANCELLED (as from gRPC's C core) once the attempts are used up.
#[tokio::test]
async fn per_attempt_recv_timeout_cuts_every_attempt_then_the_call_is_cancelled() {
    bounded(async {
        let (addr, log) = serve(|_, _| Act::Hang).await;
        let (mut client, failures) =
            connect(addr, config(&per_attempt_recv_timeout(2, "0.02s"))).await;

        let status = check(&mut client).await.unwrap_err();

        assert_eq!(status.code(), Code::Cancelled, "{status:?}");
        assert_eq!(log.requests(), 2);
        log.cancelled(2).await;
        let stops: Vec<_> = failures
            .lock()
            .unwrap()
            .iter()
            .map(|f| (f.0, f.1))
            .collect();
        assert_eq!(
            stops,
            [(1, ErrorClass::Transient), (2, ErrorClass::Transient)]
        );
        assert_eq!(
            failures.lock().unwrap()[1].2,
            Next::Stop(StopReason::AttemptsExhausted)
        );
    })
    .await
}

/// A retryPolicy of every method with `perAttemptRecvTimeout`, 1 ms backoff, UNAVAILABLE
/// retryable.
fn per_attempt_recv_timeout(attempts: u32, timeout: &str) -> String {
    format!(
        r#"{{"name": [{{}}], "retryPolicy": {{"maxAttempts": {attempts},
            "initialBackoff": "0.001s", "maxBackoff": "0.001s", "backoffMultiplier": 1,
            "retryableStatusCodes": ["UNAVAILABLE"], "perAttemptRecvTimeout": "{timeout}"}}}}"#
    )
}

/// The layer's `attempt_timeout` under a service config: a slow attempt is cut and retried as
/// one cut by `perAttemptRecvTimeout` is. (A tower timeout below the layer reached it as a
/// transport failure that may have been processed, which a service config never retries.)
#[tokio::test]
async fn attempt_timeout_cuts_a_slow_attempt_and_a_service_config_retries_it() {
    bounded(async {
        let (addr, log) = serve(|n, _| match n {
            1 => Act::Slow(Duration::from_millis(400)),
            _ => Act::Pass,
        })
        .await;
        let layer = config(&retry_policy(3, "[14]")).attempt_timeout(Duration::from_millis(50));
        let (mut client, failures) = connect(addr, layer).await;

        assert_eq!(check(&mut client).await.unwrap(), SERVING);

        assert_eq!(log.requests(), 2);
        let failures = failures.lock().unwrap();
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert_eq!(failures[0].1, ErrorClass::Transient);
    })
    .await
}

/// Under `new(policy)` a cut attempt is idempotent-only, as every attempt timeout in the
/// crate: retried only for an idempotent policy.
#[tokio::test]
async fn attempt_timeout_under_new_retries_only_an_idempotent_policy() {
    bounded(async {
        let policy = RetryPolicy::fixed(Duration::from_millis(1)).attempts(3);
        for idempotent in [false, true] {
            let (addr, log) = serve(|n, _| match n {
                1 => Act::Slow(Duration::from_millis(400)),
                _ => Act::Pass,
            })
            .await;
            let layer = GrpcRetryLayer::new(policy.idempotent(idempotent))
                .attempt_timeout(Duration::from_millis(50));
            let (mut client, failures) = connect(addr, layer).await;

            let result = check(&mut client).await;

            let failures = failures.lock().unwrap();
            assert_eq!(failures.len(), 1, "{failures:?}");
            assert_eq!(failures[0].1, ErrorClass::IdempotentOnly);
            if idempotent {
                assert_eq!(result.unwrap(), SERVING);
                assert_eq!(log.requests(), 2);
            } else {
                assert_eq!(result.unwrap_err().code(), Code::Cancelled);
                assert_eq!(log.requests(), 1);
                assert_eq!(failures[0].2, Next::Stop(StopReason::NotIdempotent));
            }
        }
    })
    .await
}

#[tokio::test]
async fn a_wait_that_would_end_past_the_deadline_is_not_started() {
    bounded(async {
        let (addr, log) = serve(|_, _| Act::Status(Code::Unavailable, Some("200"))).await;
        let (mut client, failures) = connect(addr, config(&retry_policy(4, "[14]"))).await;
        let mut request = Request::new(check_request());
        request.set_timeout(Duration::from_millis(100));

        assert_eq!(
            client.check(request).await.unwrap_err().code(),
            Code::Unavailable
        );

        assert_eq!(log.requests(), 1);
        assert_eq!(
            *failures.lock().unwrap(),
            [(
                1,
                ErrorClass::Transient,
                Next::Stop(StopReason::DeadlineExceeded)
            )]
        );
    })
    .await
}

// Transport failures: whether the request can have reached the handler decides.

/// A health client through `layer` to `addr`, connecting on its first call.
fn lazy(addr: SocketAddr, layer: GrpcRetryLayer) -> (Client, Failures) {
    let failures: Failures = Arc::default();
    let layer = layer.on_failure(Record(failures.clone()));
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_lazy();
    let service = ServiceBuilder::new().layer(layer).service(channel);
    (HealthClient::new(service), failures)
}

#[tokio::test]
async fn a_refused_connection_sent_nothing_and_is_retried_whatever_the_codes() {
    bounded(async {
        // A port nothing listens on.
        let addr = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap();
        let (mut client, failures) = lazy(addr, config(&retry_policy(3, r#"["ABORTED"]"#)));

        let status = check(&mut client).await.unwrap_err();

        assert_eq!(status.code(), Code::Unavailable, "{status:?}");
        let failures = failures.lock().unwrap();
        let classes: Vec<_> = failures.iter().map(|f| (f.0, f.1)).collect();
        assert_eq!(
            classes,
            [
                (1, ErrorClass::Transient),
                (2, ErrorClass::Transient),
                (3, ErrorClass::Transient)
            ]
        );
        assert_eq!(failures[2].2, Next::Stop(StopReason::AttemptsExhausted));
    })
    .await
}

#[tokio::test]
async fn a_connection_lost_after_the_request_was_read_is_not_retried() {
    bounded(async {
        let (addr, read) = read_then_close().await;
        let (mut client, failures) = lazy(addr, config(&retry_policy(4, r#"["UNAVAILABLE"]"#)));

        let status = check(&mut client).await.unwrap_err();

        assert_eq!(read.load(Ordering::SeqCst), 1, "{status:?}");
        assert_eq!(
            *failures.lock().unwrap(),
            [(
                1,
                ErrorClass::IdempotentOnly,
                Next::Stop(StopReason::NotIdempotent)
            )]
        );
    })
    .await
}

#[tokio::test]
async fn a_hedged_method_is_declared_safe_to_repeat_after_a_lost_connection() {
    bounded(async {
        let (addr, read) = read_then_close().await;
        let (mut client, _) = lazy(addr, hedging(3, "60s", "[14]"));

        check(&mut client).await.unwrap_err();

        assert_eq!(read.load(Ordering::SeqCst), 3);
    })
    .await
}

// Protection.

#[tokio::test]
async fn a_per_key_breaker_is_keyed_by_the_clients_origin() {
    static PER_SERVER: PerKey<CircuitBreaker> =
        PerKey::new(CircuitBreaker::new(2, Duration::from_secs(60)));
    bounded(async {
        let (addr, log) = serve(|_, _| Act::Status(Code::Unavailable, None)).await;
        let layer = config(&retry_policy(4, "[14]")).circuit(&PER_SERVER);
        let service = ServiceBuilder::new()
            .layer(layer)
            .service(channel(addr).await);
        let origin: http::Uri = format!("http://{addr}").parse().unwrap();
        let mut client = HealthClient::with_origin(service, origin);

        let status = client.check(check_request()).await.unwrap_err();

        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(
            log.requests(),
            2,
            "two failures opened this server's breaker"
        );
        assert_eq!(
            PER_SERVER.get(&addr.to_string()).state(),
            CircuitState::Open
        );
        // While it is open, a call sends nothing.
        let refused = client.check(check_request()).await.unwrap_err();
        assert_eq!(refused.code(), Code::Unavailable);
        assert_eq!(log.requests(), 2);
    })
    .await
}

/// A client built with `new` sends the path alone: the layer's `origin` keys its requests by
/// their server, so that one server's failures open its breaker only, not the breaker of
/// another server's requests that also name no host.
#[tokio::test]
async fn the_layers_origin_keys_requests_that_name_no_host() {
    static BY_ORIGIN: PerKey<CircuitBreaker> =
        PerKey::new(CircuitBreaker::new(2, Duration::from_secs(60)));
    bounded(async {
        let (down, down_log) = serve(|_, _| Act::Status(Code::Unavailable, None)).await;
        let (up, up_log) = serve(|_, _| Act::Pass).await;
        let client_of = |addr: SocketAddr| {
            let layer = config(&retry_policy(4, "[14]"))
                .circuit(&BY_ORIGIN)
                .origin(format!("http://{addr}").parse().unwrap());
            async move {
                HealthClient::new(
                    ServiceBuilder::new()
                        .layer(layer)
                        .service(channel(addr).await),
                )
            }
        };
        let mut to_down = client_of(down).await;
        assert_eq!(
            to_down.check(check_request()).await.unwrap_err().code(),
            Code::Unavailable
        );
        assert_eq!(down_log.requests(), 2, "two failures opened its breaker");
        assert_eq!(BY_ORIGIN.get(&down.to_string()).state(), CircuitState::Open);
        // The other server's breaker is its own, closed: its call goes through.
        let mut to_up = client_of(up).await;
        assert!(to_up.check(check_request()).await.is_ok());
        assert_eq!(up_log.requests(), 1);
        assert_eq!(BY_ORIGIN.get(&up.to_string()).state(), CircuitState::Closed);
        assert_eq!(BY_ORIGIN.get("").state(), CircuitState::Closed);
    })
    .await
}

// Hedging.

fn hedging(attempts: u32, delay: &str, non_fatal: &str) -> GrpcRetryLayer {
    config(&format!(
        r#"{{"name": [{{}}], "hedgingPolicy": {{"maxAttempts": {attempts},
            "hedgingDelay": "{delay}", "nonFatalStatusCodes": {non_fatal}}}}}"#
    ))
}

#[tokio::test]
async fn a_slow_attempt_is_hedged_and_the_loser_cancelled() {
    bounded(async {
        let (addr, log) = serve(|n, _| if n == 1 { Act::Hang } else { Act::Pass }).await;
        let (mut client, failures) = connect(addr, hedging(2, "0.02s", "[14]")).await;

        assert_eq!(check(&mut client).await.unwrap(), SERVING);

        assert_eq!(log.previous_attempts(), [None, Some("1".into())]);
        log.cancelled(1).await;
        assert!(failures.lock().unwrap().is_empty());
    })
    .await
}

#[tokio::test]
async fn a_non_fatal_status_starts_the_next_hedge_at_once() {
    bounded(async {
        let (addr, log) = serve(|n, _| match n {
            1 => Act::Status(Code::Unavailable, None),
            _ => Act::Pass,
        })
        .await;
        // A hedging delay far past the test's bound: only the status can start attempt 2.
        let (mut client, failures) = connect(addr, hedging(3, "60s", "[14]")).await;

        assert_eq!(check(&mut client).await.unwrap(), SERVING);

        assert_eq!(log.previous_attempts(), [None, Some("1".into())]);
        assert_eq!(
            *failures.lock().unwrap(),
            [(1, ErrorClass::Transient, Next::Retry(Duration::ZERO))]
        );
    })
    .await
}

#[tokio::test]
async fn a_fatal_status_ends_a_hedged_call_and_cancels_the_others() {
    bounded(async {
        let (addr, log) = serve(|n, _| match n {
            1 => Act::Hang,
            _ => Act::Status(Code::InvalidArgument, None),
        })
        .await;
        let (mut client, _) = connect(addr, hedging(2, "0.02s", "[14]")).await;

        assert_eq!(
            check(&mut client).await.unwrap_err().code(),
            Code::InvalidArgument
        );

        assert_eq!(log.requests(), 2);
        log.cancelled(1).await;
    })
    .await
}

// Throttling.

#[tokio::test]
async fn throttling_charges_failed_attempts_and_stops_retries_at_half() {
    bounded(async {
        let (addr, log) = serve(|_, _| Act::Status(Code::Unavailable, None)).await;
        let layer = GrpcRetryLayer::from_service_config(&format!(
            r#"{{"methodConfig": [{}], "retryThrottling": {{"maxTokens": 3, "tokenRatio": 0.5}}}}"#,
            retry_policy(5, "[14]")
        ))
        .unwrap();
        let (mut client, failures) = connect(addr, layer.clone()).await;

        // 3 tokens: the first failure leaves 2 (above 1.5: retry), the second 1 (stop).
        check(&mut client).await.unwrap_err();
        assert_eq!(log.requests(), 2);
        assert_eq!(
            failures.lock().unwrap()[1].2,
            Next::Stop(StopReason::BudgetExhausted)
        );
        // At or below half: one attempt per call.
        check(&mut client).await.unwrap_err();
        assert_eq!(log.requests(), 3);
        assert_eq!(layer.retry_throttling().unwrap().tokens(), 0.0);
    })
    .await
}

#[tokio::test]
async fn a_pushback_that_refuses_a_retry_still_costs_a_token() {
    bounded(async {
        let (addr, _) = serve(|_, _| Act::Status(Code::Unavailable, Some("-1"))).await;
        let layer = GrpcRetryLayer::from_service_config(&format!(
            r#"{{"methodConfig": [{}], "retryThrottling": {{"maxTokens": 10, "tokenRatio": 0.1}}}}"#,
            retry_policy(5, "[14]")
        ))
        .unwrap();
        let (mut client, _) = connect(addr, layer.clone()).await;

        check(&mut client).await.unwrap_err();

        assert_eq!(layer.retry_throttling().unwrap().tokens(), 9.0);
    })
    .await
}

#[tokio::test]
async fn hedges_are_charged_and_throttled() {
    bounded(async {
        let (addr, log) = serve(|_, _| Act::Status(Code::Unavailable, None)).await;
        // A hedging delay past the test's bound: here only failures start attempts.
        let layer = GrpcRetryLayer::from_service_config(
            r#"{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 5,
                "hedgingDelay": "60s", "nonFatalStatusCodes": [14]}}],
                "retryThrottling": {"maxTokens": 4, "tokenRatio": 0.1}}"#,
        )
        .unwrap();
        let (mut client, _) = connect(addr, layer.clone()).await;

        // 4 tokens: failures leave 3, then 2 (half): no attempt after that.
        check(&mut client).await.unwrap_err();

        assert_eq!(log.previous_attempts(), [None, Some("1".into())]);
        assert_eq!(layer.retry_throttling().unwrap().tokens(), 2.0);
    })
    .await
}

#[tokio::test]
async fn a_method_without_a_policy_costs_no_token() {
    bounded(async {
        let (addr, log) = serve(|_, _| Act::Status(Code::Unavailable, None)).await;
        let layer = GrpcRetryLayer::from_service_config(
            r#"{"methodConfig": [{"name": [{"service": "other.Svc"}], "timeout": "1s"}],
                "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}"#,
        )
        .unwrap();
        let (mut client, _) = connect(addr, layer.clone()).await;

        check(&mut client).await.unwrap_err();

        assert_eq!(log.requests(), 1);
        assert_eq!(layer.retry_throttling().unwrap().tokens(), 10.0);
    })
    .await
}

#[tokio::test]
async fn no_hedge_starts_at_or_below_half_the_tokens() {
    static BUDGET: RetryBudget = RetryBudget::new(4, 0.1);
    bounded(async {
        BUDGET.record_failure();
        BUDGET.record_failure();
        let (addr, log) = serve(|_, _| Act::Hang).await;
        let layer = hedging(3, "0.005s", "[14]").budget(&BUDGET);
        let (mut client, _) = connect(addr, layer).await;
        let mut request = Request::new(check_request());
        request.set_timeout(Duration::from_millis(100));

        let status = client.check(request).await.unwrap_err();

        // Ended by the deadline, whichever timer (the layer's, or the server's) fired first.
        assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
        assert_eq!(log.requests(), 1, "the hedges were refused");
    })
    .await
}

static RELOADED: retry_kit::PolicyCell =
    retry_kit::PolicyCell::new(RetryPolicy::fixed(Duration::from_millis(1)).attempts(2));

/// `from_cell`: each call takes the policy the cell holds when it starts, so a reload reaches
/// the channel's next call.
#[tokio::test]
async fn a_layer_from_a_cell_follows_the_cells_reload() {
    bounded(async {
        let (addr, log) = serve(|n, _| match n {
            1..=3 => Act::Status(Code::Unavailable, None),
            _ => Act::Pass,
        })
        .await;
        let (mut client, _) = connect(addr, GrpcRetryLayer::from_cell(&RELOADED)).await;
        // Two attempts, both UNAVAILABLE.
        assert_eq!(
            check(&mut client).await.unwrap_err().code(),
            Code::Unavailable
        );
        assert_eq!(log.requests(), 2);
        RELOADED.set(RetryPolicy::fixed(Duration::from_millis(1)).attempts(4));
        // The third request fails, the fourth answers: two attempts of the new four.
        assert_eq!(check(&mut client).await.unwrap(), SERVING);
        assert_eq!(log.requests(), 4);
    })
    .await
}
