//! The `http` feature through `#[retryable]`: a sequence of responses turned into
//! `StatusError`s, with sleeps recorded on the virtual clock.
#![cfg(feature = "http")]
#![deny(warnings, unused_qualifications)]

use http::header::RETRY_AFTER;
use http::{HeaderMap, Response, StatusCode};
use retry_kit::http::{StatusError, classify_response, error_for_status, retry_after_at};
use retry_kit::{Classify, ErrorClass, retryable, testing};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A response with a status and, optionally, a `Retry-After` value.
fn response(status: u16, retry_after: Option<&str>) -> Response<()> {
    let mut builder = Response::builder().status(status);
    if let Some(wait) = retry_after {
        builder = builder.header(RETRY_AFTER, wait);
    }
    builder.body(()).unwrap()
}

/// Answers are served from the back of `server`; the last one repeats.
fn next(server: &mut Vec<Response<()>>) -> Response<()> {
    if server.len() > 1 {
        server.pop().unwrap()
    } else {
        let last = &server[0];
        let mut copy = Response::new(());
        *copy.status_mut() = last.status();
        *copy.headers_mut() = last.headers().clone();
        copy
    }
}

#[retryable(attempts = 4, base = "100ms", max_delay = "10s", jitter = "none")]
fn post(server: &mut Vec<Response<()>>, sent: &mut u32) -> Result<StatusCode, StatusError> {
    *sent += 1;
    Ok(error_for_status(next(server))?.status())
}

#[retryable(
    attempts = 4,
    base = "100ms",
    max_delay = "10s",
    jitter = "none",
    idempotent
)]
fn get(server: &mut Vec<Response<()>>, sent: &mut u32) -> Result<StatusCode, StatusError> {
    *sent += 1;
    Ok(error_for_status(next(server))?.status())
}

#[test]
fn retry_after_raises_the_backoff_and_the_call_recovers() {
    let mut server = vec![
        response(200, None),
        response(503, Some("2")),
        response(429, Some("1")),
    ];
    let mut sent = 0;
    let (result, slept) = testing::record_sleeps(|| post(&mut server, &mut sent));
    assert_eq!(result, Ok(StatusCode::OK));
    assert_eq!(sent, 3);
    // max(100 ms, 1 s), then max(200 ms, 2 s).
    assert_eq!(slept, [Duration::from_secs(1), Duration::from_secs(2)]);
}

#[test]
fn a_retry_after_date_in_the_past_means_the_backoff_alone() {
    let mut server = vec![
        response(200, None),
        response(503, Some("Sun, 06 Nov 1994 08:49:37 GMT")),
    ];
    let mut sent = 0;
    let (result, slept) = testing::record_sleeps(|| post(&mut server, &mut sent));
    assert_eq!(result, Ok(StatusCode::OK));
    assert_eq!(slept, [Duration::from_millis(100)]);
}

#[test]
fn a_500_is_repeated_only_by_an_idempotent_function() {
    let mut sent = 0;
    let mut server = vec![response(200, None), response(500, None)];
    let (result, slept) = testing::record_sleeps(|| post(&mut server, &mut sent));
    assert_eq!(
        result.unwrap_err().status(),
        StatusCode::INTERNAL_SERVER_ERROR
    );
    assert_eq!((sent, slept.len()), (1, 0));

    let mut sent = 0;
    let mut server = vec![response(200, None), response(500, None)];
    let (result, slept) = testing::record_sleeps(|| get(&mut server, &mut sent));
    assert_eq!(result, Ok(StatusCode::OK));
    assert_eq!((sent, slept), (2, vec![Duration::from_millis(100)]));
}

#[test]
fn client_errors_are_answered_once() {
    for status in [400, 401, 403, 404, 409, 410, 422] {
        let mut sent = 0;
        let mut server = vec![response(status, Some("1"))];
        let (result, slept) = testing::record_sleeps(|| get(&mut server, &mut sent));
        assert_eq!(result.unwrap_err().status().as_u16(), status);
        assert_eq!((sent, slept.len()), (1, 0), "status {status}");
    }
}

#[test]
fn a_retry_after_beyond_max_delay_gives_up_at_once() {
    let mut sent = 0;
    let mut server = vec![response(503, Some("3600"))];
    let (result, slept) = testing::record_sleeps(|| get(&mut server, &mut sent));
    let error = result.unwrap_err();
    assert_eq!(error.retry_after(), Some(Duration::from_secs(3600)));
    assert_eq!((sent, slept.len()), (1, 0));
}

#[test]
fn an_unreadable_retry_after_is_no_hint() {
    let mut sent = 0;
    let mut server = vec![response(200, None), response(503, Some("in a minute"))];
    let (result, slept) = testing::record_sleeps(|| get(&mut server, &mut sent));
    assert_eq!(result, Ok(StatusCode::OK));
    assert_eq!(slept, [Duration::from_millis(100)]);
}

#[test]
fn classify_response_pairs_the_status_table_with_the_header() {
    let mut headers = HeaderMap::new();
    assert_eq!(
        classify_response(StatusCode::GATEWAY_TIMEOUT, &headers),
        (ErrorClass::IdempotentOnly, None)
    );
    headers.insert(RETRY_AFTER, "30".parse().unwrap());
    assert_eq!(
        classify_response(StatusCode::SERVICE_UNAVAILABLE, &headers),
        (ErrorClass::Transient, Some(Duration::from_secs(30)))
    );
}

#[test]
fn an_http_date_is_measured_from_the_given_now() {
    let mut headers = HeaderMap::new();
    headers.insert(
        RETRY_AFTER,
        "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
    );
    let date = UNIX_EPOCH + Duration::from_secs(1_445_412_480);
    let now = |before: u64| date - Duration::from_secs(before);
    assert_eq!(
        retry_after_at(&headers, now(90)),
        Some(Duration::from_secs(90))
    );
    assert_eq!(retry_after_at(&headers, now(0)), Some(Duration::ZERO));
    assert_eq!(
        retry_after_at(&headers, date + Duration::from_secs(5)),
        Some(Duration::ZERO)
    );
    // With the real clock, 2015 is long past.
    assert_eq!(
        retry_after_at(&headers, SystemTime::now()),
        Some(Duration::ZERO)
    );
}
