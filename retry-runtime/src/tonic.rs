//! tonic (feature `tonic`): [`Classify`] for [`tonic::Status`] by gRPC status code, with the
//! server's `grpc-retry-pushback-ms` as the retry-after; and [`GrpcRetryLayer`], gRPC's own
//! retries and hedging (gRFC A6) for tonic clients, from a policy or a service config.
//!
//! The table follows the guidance in gRPC's own status-code documentation and its retry design
//! (gRFC A6): retry what the server refused before doing any work, never what the request itself
//! caused, and repeat an unknown outcome only for idempotent calls.
//!
//! | code | class | why |
//! | --- | --- | --- |
//! | `Unavailable` | transient | the service is down or restarting; gRPC names it the retryable code |
//! | `ResourceExhausted` | transient | a quota or rate limit; it clears with time (the server's pushback says when) |
//! | `Aborted` | transient | a concurrency conflict (a failed transaction); gRPC's advice is to retry the sequence |
//! | `DeadlineExceeded` | idempotent-only | the call may have completed on the server after the client gave up |
//! | `Unknown` | idempotent-only | the server failed without saying how (an untyped handler error, a non-gRPC 5xx): the work may have been done |
//! | `Cancelled` | permanent | normally the caller's own cancellation; repeating it undoes the caller's decision |
//! | `InvalidArgument`, `NotFound`, `AlreadyExists`, `PermissionDenied`, `Unauthenticated`, `FailedPrecondition`, `OutOfRange`, `Unimplemented` | permanent | the request or the system's state is wrong: the same call fails the same way until someone changes something |
//! | `Internal`, `DataLoss` | permanent | gRPC reserves these for broken invariants and unrecoverable loss, not passing trouble (unlike HTTP's 500, which servers use for everything) |
//! | `Ok` | permanent | not a failure |
//!
//! # Pushback
//!
//! A server may send `grpc-retry-pushback-ms` in its trailers (which tonic puts in
//! [`Status::metadata`](::tonic::Status::metadata)). As gRFC A6 specifies:
//! - a non-negative integer of milliseconds is the wait before the next attempt, which the retry
//!   loop honours as the error's retry-after: it waits at least that long, or stops with
//!   `RetryAfterTooLong` if it is longer than the policy's `max_delay`, as for every retry-after
//!   in the crate ([`GrpcRetryLayer::new`] too). A [`GrpcRetryLayer`] read from a service config
//!   waits exactly that long, as A6 asks, but never longer than its
//!   [`max_pushback`](GrpcRetryLayer::max_pushback) (30 s by default): a longer pushback stops
//!   the call with `RetryAfterTooLong`;
//! - a negative or unparseable value means "do not retry this call": the status is then
//!   permanent whatever its code.
//!
//! A value that is more than one header, or not visible ASCII, is unparseable (as grpc-go treats
//! it); a number too large for a `u64` saturates to a very long wait.
//!
//! Without a pushback, a `google.rpc.RetryInfo` in the status's details
//! (`grpc-status-details-bin`, [`Status::details`](::tonic::Status::details)) is the
//! retry-after, as Google's own clients honour it (AIP-194): its `retry_delay`, read by the same
//! rules. A malformed or negative one is ignored.
//!
//! ```
//! # extern crate retry_runtime as retry_kit;
//! use retry_kit::{Classify, ErrorClass};
//! use std::time::Duration;
//! use tonic::{Code, Status};
//!
//! let mut busy = Status::unavailable("draining");
//! assert_eq!(busy.class(), ErrorClass::Transient);
//! busy.metadata_mut().insert("grpc-retry-pushback-ms", "250".parse().unwrap());
//! assert_eq!(busy.retry_after(), Some(Duration::from_millis(250)));
//!
//! let mut go_away = Status::unavailable("draining");
//! go_away.metadata_mut().insert("grpc-retry-pushback-ms", "-1".parse().unwrap());
//! assert_eq!(go_away.class(), ErrorClass::Permanent);
//!
//! assert_eq!(Status::not_found("no such user").class(), ErrorClass::Permanent);
//! assert_eq!(Status::deadline_exceeded("slow").class(), ErrorClass::IdempotentOnly);
//! ```
//!
//! # The retry layer
//!
//! [`GrpcRetryLayer`] sits between a generated client and its channel, where gRPC's own
//! retries live (`HealthClient::new(ServiceBuilder::new().layer(layer).service(channel))`),
//! and makes each call's attempts on the wire as gRFC A6 says. It is a front end of the same
//! engine as `#[retryable]`: the policy's arithmetic, the breaker and budget, `on_failure`,
//! `tracing` events and metrics work as everywhere in the crate.
//!
//! Which backoff applies where: a service config's `retryPolicy` waits by A6's current rule
//! (gRPC's proposal #452), `min(initialBackoff * backoffMultiplier^(n-1), maxBackoff)` times a
//! random factor in `[0.8, 1.2]` ([`Jitter::Spread`](crate::Jitter::Spread)); a
//! `hedgingPolicy` starts attempts every `hedgingDelay`; [`GrpcRetryLayer::new`] waits by the
//! policy it is given, jitter and all, as every front end of the crate does.
//!
//! | what happens to an attempt | retried? |
//! | --- | --- |
//! | a status in a Trailers-Only response (no response headers before it) | by the method's rule: a code in `retryableStatusCodes` (`nonFatalStatusCodes` when hedging) is, any other is not; with [`GrpcRetryLayer::new`] the [table above](self) decides |
//! | that status with `grpc-retry-pushback-ms: n` (n ≥ 0) | under a service config, after exactly n ms (not the backoff, not capped by `maxBackoff`), or not at all if n exceeds [`max_pushback`](GrpcRetryLayer::max_pushback) (30 s by default); with [`GrpcRetryLayer::new`], after the longer of n and the backoff, or not at all if n exceeds the policy's `max_delay`; either way the deadline still bounds it |
//! | that status with a negative or unparseable pushback | no (and under a service config it still costs a throttling token, as A6 says) |
//! | response headers arrived, then a status in the trailers (after messages or none) | **no**: the call is committed, the status is the caller's |
//! | a connection that could not be made, or HTTP/2 `REFUSED_STREAM` | yes, whatever the codes: nothing reached the server (A6's transparent retry; here it counts as an attempt) |
//! | the connection failed after the request may have been written (a reset, a close), or a proxy's 502 or 504 | only under a `hedgingPolicy`, or [`GrpcRetryLayer::new`] with an idempotent policy: the handler may have run |
//! | a proxy's 429 or 503 without a gRPC status | as `UNAVAILABLE`, by the method's rule |
//! | the request messages outgrew the buffer ([`buffer_limit`](GrpcRetryLayer::buffer_limit)) | **no**: committed to the attempt that sent them |
//! | client- or bidi-streaming | only while every message sent so far is in the buffer, and nothing was received (a Trailers-Only status) |
//! | no response headers within the attempt's own limit (a `retryPolicy`'s `perAttemptRecvTimeout`, or [`attempt_timeout`](GrpcRetryLayer::attempt_timeout)): the attempt is cancelled, `CANCELLED` | under a service config, yes, whatever the codes listed (gRPC's C core does the same), within `maxAttempts` and the throttling; with [`GrpcRetryLayer::new`], only with an idempotent policy, as every attempt timeout in the crate |
//! | the call's deadline passed | no: the deadline bounds all attempts together, and the caller gets `DEADLINE_EXCEEDED` (`StopReason::DeadlineExceeded`) whatever ended the attempt then: the server's own timer for the attempt's `grpc-timeout` fires at the same moment, and what it answers (tonic's CANCELLED "Timeout expired") does not win over the client's deadline |
//! | the breaker is open, or the throttling tokens are at half or below | no (a first attempt refused by the breaker is `UNAVAILABLE`, nothing sent) |
//!
//! On the wire:
//!
//! - every attempt after the first carries [`grpc-previous-rpc-attempts`](PREVIOUS_ATTEMPTS_KEY)
//!   (`1` on the second, `2` on the third), hedges included;
//! - the call's deadline is the soonest of the caller's `grpc-timeout`
//!   (`Request::set_timeout`), the method's `timeout`, the policy's `deadline` and an enclosing
//!   retryable call's; a caller's `grpc-timeout` that the protocol does not allow (more than 8
//!   digits, no unit, `5s`) fails the call with `INTERNAL` before anything is sent, as a
//!   protocol error (grpc-go's server answers it so, the C core resets the stream): it is
//!   neither forwarded as it is nor taken as no deadline; each attempt is sent with the time
//!   left as its `grpc-timeout` (rounded up to its unit, as grpc-go writes it, so that the
//!   server's timer never fires before the caller's deadline), and cancelled when the deadline
//!   passes;
//! - a per-attempt limit (the C core's `perAttemptRecvTimeout`, or the layer's
//!   [`attempt_timeout`](GrpcRetryLayer::attempt_timeout); the smaller applies) runs from the
//!   attempt's start until its response headers, as in the C core: an answer that has begun
//!   is the call's and is never cut;
//! - request messages (a gRPC body is length-prefixed frames) are replayed from a bounded
//!   buffer, each attempt framed as the first ([`ReplayBody`](crate::tower::ReplayBody));
//! - a `hedgingPolicy` starts the next attempt beside the running ones every `hedgingDelay`
//!   (at once after a non-fatal status); the first committed answer wins and the other
//!   attempts are cancelled (their HTTP/2 streams reset); a fatal status ends the call;
//! - `retryThrottling` is one [`RetryBudget`](crate::RetryBudget) for the layer: every failed
//!   attempt with a retryable or non-fatal code (or a pushback that refuses a retry) costs a
//!   token, every success refunds `tokenRatio`, and a retry or hedge starts only while the
//!   tokens exceed half of `maxTokens`.
//!
//! Where this layer differs from gRPC's own clients, and why:
//!
//! - a `backoffMultiplier` below 1 is taken as 1 (delays never shrink);
//! - after a pushback the backoff goes on from the attempt count instead of starting again at
//!   `initialBackoff` (the engine keeps no per-call state for it);
//! - a transparent retry counts as one of `maxAttempts` (gRPC's are unbounded until the
//!   deadline), and costs a throttling token;
//! - a hedged call whose messages outgrow the buffer starts no further attempt but lets the
//!   running ones finish (A6 cancels all but the one that sent the most);
//! - a connection that fails after the request was written is not retried under a
//!   `retryPolicy` (grpc-go reports it as `UNAVAILABLE` and retries it): the handler may have
//!   run, and the crate never repeats a side effect the method's owner has not declared safe.
//!
//! The layer needs tokio (it sleeps and times attempts with it). The feature `tonic` turns on
//! `tower` and `http`, whose crates tonic depends on already, and `serde_json` to read the
//! service config.

mod call_metrics;
mod failure;
mod layer;
mod retry_info;
mod rules;
mod service;
mod service_config;
mod wire;

pub use failure::GrpcFailure;
pub use layer::{DEFAULT_BUFFER_LIMIT, GrpcRetryLayer};
pub use service::GrpcRetryService;
pub use service_config::ServiceConfigError;
pub use wire::PREVIOUS_ATTEMPTS_KEY;

use crate::class::{Classify, ErrorClass};
use ::tonic::metadata::MetadataMap;
use ::tonic::{Code, Status};
use std::time::Duration;

/// The metadata key a gRPC server uses to tell a client when (or whether) to retry.
pub const PUSHBACK_KEY: &str = "grpc-retry-pushback-ms";

/// The class of a gRPC status code, by the table in the [module docs](self); this ignores
/// pushback, which [`Classify for Status`](Status) applies on top.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{tonic::code_class, ErrorClass};
/// use tonic::Code;
///
/// assert_eq!(code_class(Code::Unavailable), ErrorClass::Transient);
/// assert_eq!(code_class(Code::DeadlineExceeded), ErrorClass::IdempotentOnly);
/// assert_eq!(code_class(Code::PermissionDenied), ErrorClass::Permanent);
/// ```
pub fn code_class(code: Code) -> ErrorClass {
    match code {
        Code::Unavailable | Code::ResourceExhausted | Code::Aborted => ErrorClass::Transient,
        Code::DeadlineExceeded | Code::Unknown => ErrorClass::IdempotentOnly,
        Code::Ok
        | Code::Cancelled
        | Code::InvalidArgument
        | Code::NotFound
        | Code::AlreadyExists
        | Code::PermissionDenied
        | Code::Unauthenticated
        | Code::FailedPrecondition
        | Code::OutOfRange
        | Code::Unimplemented
        | Code::Internal
        | Code::DataLoss => ErrorClass::Permanent,
    }
}

/// What a server's `grpc-retry-pushback-ms` says.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::tonic::{pushback, Pushback};
/// use std::time::Duration;
/// use tonic::metadata::MetadataMap;
///
/// let mut metadata = MetadataMap::new();
/// assert_eq!(pushback(&metadata), Pushback::Absent);
/// metadata.insert("grpc-retry-pushback-ms", "1500".parse().unwrap());
/// assert_eq!(pushback(&metadata), Pushback::RetryAfter(Duration::from_millis(1500)));
/// metadata.insert("grpc-retry-pushback-ms", "later".parse().unwrap());
/// assert_eq!(pushback(&metadata), Pushback::DoNotRetry);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pushback {
    /// No pushback: the client's own backoff decides.
    Absent,
    /// Wait this long before the next attempt.
    RetryAfter(Duration),
    /// The server asks the client not to retry this call (a negative or unparseable value).
    DoNotRetry,
}

/// Read the pushback from a status's metadata (see the [module docs](self)).
pub fn pushback(metadata: &MetadataMap) -> Pushback {
    let mut values = metadata.get_all(PUSHBACK_KEY).iter();
    let Some(first) = values.next() else {
        return Pushback::Absent;
    };
    if values.next().is_some() {
        return Pushback::DoNotRetry;
    }
    match first.to_str() {
        Ok(text) => parse_pushback(text),
        Err(_) => Pushback::DoNotRetry,
    }
}

/// Parse one `grpc-retry-pushback-ms` value.
///
/// ASCII digits (surrounding spaces ignored) are milliseconds, saturating at `u64::MAX`; anything
/// else, a negative number included, is [`Pushback::DoNotRetry`].
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::tonic::{parse_pushback, Pushback};
/// use std::time::Duration;
///
/// assert_eq!(parse_pushback("0"), Pushback::RetryAfter(Duration::ZERO));
/// assert_eq!(parse_pushback("-5"), Pushback::DoNotRetry);
/// assert_eq!(parse_pushback("1e3"), Pushback::DoNotRetry);
/// ```
pub fn parse_pushback(value: &str) -> Pushback {
    let value = value.trim_matches([' ', '\t']);
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Pushback::DoNotRetry;
    }
    let millis = value.bytes().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    });
    Pushback::RetryAfter(Duration::from_millis(millis))
}

/// The class by [`code_class`], made permanent by a negative or unparseable pushback; the
/// retry-after is a valid pushback. See the [module docs](self).
impl Classify for Status {
    fn class(&self) -> ErrorClass {
        match pushback(self.metadata()) {
            Pushback::DoNotRetry => ErrorClass::Permanent,
            Pushback::Absent | Pushback::RetryAfter(_) => code_class(self.code()),
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match pushback(self.metadata()) {
            Pushback::RetryAfter(wait) => Some(wait),
            // No pushback: a `google.rpc.RetryInfo` in the details, if any (AIP-194).
            Pushback::Absent => retry_info::delay_in_details(self.details()),
            Pushback::DoNotRetry => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::tonic::metadata::{AsciiMetadataValue, MetadataValue};

    const ALL_CODES: [Code; 17] = [
        Code::Ok,
        Code::Cancelled,
        Code::Unknown,
        Code::InvalidArgument,
        Code::DeadlineExceeded,
        Code::NotFound,
        Code::AlreadyExists,
        Code::PermissionDenied,
        Code::ResourceExhausted,
        Code::FailedPrecondition,
        Code::Aborted,
        Code::OutOfRange,
        Code::Unimplemented,
        Code::Internal,
        Code::Unavailable,
        Code::DataLoss,
        Code::Unauthenticated,
    ];

    fn with_pushback(code: Code, values: &[&'static str]) -> Status {
        let mut status = Status::new(code, "test");
        for v in values {
            status
                .metadata_mut()
                .append(PUSHBACK_KEY, AsciiMetadataValue::from_static(v));
        }
        status
    }

    #[test]
    fn only_unavailable_resource_exhausted_and_aborted_are_transient() {
        for code in ALL_CODES {
            let want = match code {
                Code::Unavailable | Code::ResourceExhausted | Code::Aborted => {
                    ErrorClass::Transient
                }
                Code::DeadlineExceeded | Code::Unknown => ErrorClass::IdempotentOnly,
                _ => ErrorClass::Permanent,
            };
            assert_eq!(code_class(code), want, "{code:?}");
            assert_eq!(Status::new(code, "").class(), want, "{code:?}");
            assert_eq!(Status::new(code, "").retry_after(), None, "{code:?}");
        }
    }

    #[test]
    fn pushback_values_parse_as_milliseconds_and_saturate() {
        let after = |ms| Pushback::RetryAfter(Duration::from_millis(ms));
        assert_eq!(parse_pushback("0"), after(0));
        assert_eq!(parse_pushback("250"), after(250));
        assert_eq!(parse_pushback(" 250 "), after(250));
        assert_eq!(parse_pushback("0007"), after(7));
        assert_eq!(parse_pushback("18446744073709551615"), after(u64::MAX));
        assert_eq!(parse_pushback("99999999999999999999999"), after(u64::MAX));
    }

    #[test]
    fn negative_and_garbage_pushback_mean_do_not_retry() {
        for value in [
            "", " ", "-1", "-0", "+5", "1.5", "1e3", "5ms", "0x10", "soon", "1 2",
        ] {
            assert_eq!(parse_pushback(value), Pushback::DoNotRetry, "{value:?}");
        }
    }

    #[test]
    fn a_retry_info_in_the_details_is_the_retry_after_unless_a_pushback_says_otherwise() {
        use super::retry_info::tests::{retry_info, status_with};
        let details =
            status_with(&[("type.googleapis.com/google.rpc.RetryInfo", retry_info(3, 0))]);
        let status = Status::with_details(Code::ResourceExhausted, "quota", details.into());
        assert_eq!(status.class(), ErrorClass::Transient);
        assert_eq!(status.retry_after(), Some(Duration::from_secs(3)));
        let mut pushed = status.clone();
        pushed
            .metadata_mut()
            .insert(PUSHBACK_KEY, AsciiMetadataValue::from_static("20"));
        assert_eq!(
            pushed.retry_after(),
            Some(Duration::from_millis(20)),
            "the pushback wins"
        );
        let mut refused = status;
        refused
            .metadata_mut()
            .insert(PUSHBACK_KEY, AsciiMetadataValue::from_static("-1"));
        assert_eq!(refused.retry_after(), None);
        assert_eq!(refused.class(), ErrorClass::Permanent);
    }

    #[test]
    fn a_valid_pushback_keeps_the_code_class_and_becomes_the_retry_after() {
        let status = with_pushback(Code::Unavailable, &["1200"]);
        assert_eq!(status.class(), ErrorClass::Transient);
        assert_eq!(status.retry_after(), Some(Duration::from_millis(1200)));
        // A permanent code stays permanent: pushback only times a retry the code allows.
        let status = with_pushback(Code::InvalidArgument, &["10"]);
        assert_eq!(status.class(), ErrorClass::Permanent);
    }

    #[test]
    fn a_do_not_retry_pushback_makes_every_code_permanent() {
        for code in ALL_CODES {
            let status = with_pushback(code, &["-1"]);
            assert_eq!(status.class(), ErrorClass::Permanent, "{code:?}");
            assert_eq!(status.retry_after(), None, "{code:?}");
        }
    }

    #[test]
    fn several_pushback_values_are_ambiguous_and_mean_do_not_retry() {
        let status = with_pushback(Code::Unavailable, &["10", "20"]);
        assert_eq!(pushback(status.metadata()), Pushback::DoNotRetry);
        assert_eq!(status.class(), ErrorClass::Permanent);
    }

    #[test]
    fn a_non_text_pushback_value_means_do_not_retry() {
        let mut status = Status::unavailable("busy");
        let value: AsciiMetadataValue = MetadataValue::try_from(&b"12\xff"[..]).unwrap();
        status.metadata_mut().insert(PUSHBACK_KEY, value);
        assert_eq!(pushback(status.metadata()), Pushback::DoNotRetry);
    }
}
