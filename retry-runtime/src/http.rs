//! HTTP: the class of a status code, the `Retry-After` header, and an error type that carries
//! both out of a response (feature `http`).
//!
//! The decision this module encodes is whether the server *processed* the request, because that
//! is what makes a retry safe or not:
//!
//! | status | class | why |
//! | --- | --- | --- |
//! | 408 Request Timeout | transient | the server gave up waiting for the request before acting on it |
//! | 429 Too Many Requests | transient | rate limited: refused before processing, and usually says when to come back |
//! | 503 Service Unavailable | transient | overloaded or restarting: refused before processing |
//! | 500 Internal Server Error | idempotent-only | the handler failed part-way: it may have written before failing |
//! | 502 Bad Gateway | idempotent-only | a proxy lost the upstream's answer: the upstream may have acted |
//! | 504 Gateway Timeout | idempotent-only | a proxy stopped waiting: the upstream may still be acting |
//! | every other 4xx | permanent | the request itself is wrong (400, 401, 403, 404, 409, 422, ...): it fails the same way again |
//! | every other 5xx | permanent | the server says it cannot do this at all (501, 505, 507, 511, ...) |
//! | 1xx, 2xx, 3xx | permanent | not a failure: the server answered, and the same request gets the same answer |
//!
//! So a `POST` that got a 502 is not repeated unless the function is declared `idempotent` — the
//! complaint users have about clients that retry every 5xx whatever the method. Status codes
//! outside 100–599 (which [`StatusCode`] can hold) are permanent too: an unknown answer is not
//! retried into a struggling server.
//!
//! 425 Too Early is permanent here: RFC 8470 lets a client repeat it once its TLS handshake is
//! complete, which is the HTTP client's business, not a backoff loop's.
//!
//! ```
//! # extern crate retry_runtime as retry_kit;
//! use http::{HeaderMap, HeaderValue, StatusCode};
//! use retry_kit::ErrorClass;
//! use retry_kit::http::{classify_response, retry_after, status_class};
//! use std::time::Duration;
//!
//! assert_eq!(status_class(StatusCode::SERVICE_UNAVAILABLE), ErrorClass::Transient);
//! assert_eq!(status_class(StatusCode::BAD_GATEWAY), ErrorClass::IdempotentOnly);
//! assert_eq!(status_class(StatusCode::NOT_FOUND), ErrorClass::Permanent);
//!
//! let mut headers = HeaderMap::new();
//! headers.insert(http::header::RETRY_AFTER, HeaderValue::from_static("120"));
//! assert_eq!(retry_after(&headers), Some(Duration::from_secs(120)));
//! assert_eq!(
//!     classify_response(StatusCode::TOO_MANY_REQUESTS, &headers),
//!     (ErrorClass::Transient, Some(Duration::from_secs(120))),
//! );
//! ```

use crate::class::{Classify, ErrorClass};
use ::http::{HeaderMap, Response, StatusCode, header::RETRY_AFTER};
use std::fmt;
use std::time::{Duration, SystemTime};

mod date;
mod hints;

/// The class of an HTTP status code, by the table in the [module docs](self).
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use http::StatusCode;
/// use retry_kit::{http::status_class, ErrorClass};
///
/// assert_eq!(status_class(StatusCode::TOO_MANY_REQUESTS), ErrorClass::Transient);
/// assert_eq!(status_class(StatusCode::GATEWAY_TIMEOUT), ErrorClass::IdempotentOnly);
/// assert_eq!(status_class(StatusCode::UNAUTHORIZED), ErrorClass::Permanent);
/// assert_eq!(status_class(StatusCode::NOT_IMPLEMENTED), ErrorClass::Permanent);
/// ```
pub fn status_class(status: StatusCode) -> ErrorClass {
    match status.as_u16() {
        408 | 429 | 503 => ErrorClass::Transient,
        500 | 502 | 504 => ErrorClass::IdempotentOnly,
        _ => ErrorClass::Permanent,
    }
}

/// The wait a response asks for, measured from now: its `Retry-After` header, else the other
/// hints servers send, the first present and well-formed one winning:
///
/// 1. `Retry-After` (RFC 9110), read as below;
/// 2. `retry-after-ms`, then `x-ms-retry-after-ms`: whole milliseconds (the Azure SDKs' headers);
/// 3. `RateLimit` (the IETF RateLimit-headers draft): the reset `t` of a quota whose remaining
///    `r` is 0 (the longest, if several are exhausted); a quota with some left asks for no wait.
///
/// A malformed value of any of them is ignored (the draft requires it of `RateLimit`), so a
/// broken `Retry-After` beside a good `retry-after-ms` still gives the latter.
///
/// Both forms of RFC 9110 §10.2.3 are read: delta-seconds (`Retry-After: 120`) and an HTTP-date
/// (`Retry-After: Wed, 21 Oct 2015 07:28:00 GMT`), the latter in the preferred IMF-fixdate form
/// and the obsolete RFC 850 and asctime forms. A date in the past is `Some(Duration::ZERO)`: the
/// server's time to come back has already arrived. A missing header, or one that is neither form,
/// is `None`. A number of seconds too large for a `u64` saturates rather than being rejected, so
/// the retry loop sees a very long wait (and stops with `RetryAfterTooLong`) instead of no hint.
/// With several `Retry-After` headers the first one counts.
///
/// "Now" for an HTTP-date is [`SystemTime::now`]; [`retry_after_at`] takes it as an argument.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use http::{header::RETRY_AFTER, HeaderMap, HeaderValue};
/// use retry_kit::http::retry_after;
/// use std::time::Duration;
///
/// let mut headers = HeaderMap::new();
/// assert_eq!(retry_after(&headers), None);
/// headers.insert(RETRY_AFTER, HeaderValue::from_static("3"));
/// assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
/// headers.insert(RETRY_AFTER, HeaderValue::from_static("Sun, 06 Nov 1994 08:49:37 GMT"));
/// assert_eq!(retry_after(&headers), Some(Duration::ZERO));
/// headers.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
/// assert_eq!(retry_after(&headers), None);
/// headers.insert("retry-after-ms", HeaderValue::from_static("250"));
/// assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
/// headers.clear();
/// headers.insert("ratelimit", HeaderValue::from_static("\"default\";r=0;t=7"));
/// assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
/// ```
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, SystemTime::now())
}

/// [`retry_after`] with an explicit "now", for code (and tests) that keep their own clock.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use http::{header::RETRY_AFTER, HeaderMap, HeaderValue};
/// use retry_kit::http::retry_after_at;
/// use std::time::{Duration, SystemTime, UNIX_EPOCH};
///
/// let mut headers = HeaderMap::new();
/// headers.insert(RETRY_AFTER, HeaderValue::from_static("Sun, 06 Nov 1994 08:49:37 GMT"));
/// let now = UNIX_EPOCH + Duration::from_secs(784_111_747); // 08:49:07 that day
/// assert_eq!(retry_after_at(&headers, now), Some(Duration::from_secs(30)));
/// ```
pub fn retry_after_at(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let retry_after = headers
        .get(RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| parse_retry_after(value, now));
    retry_after
        .or_else(|| hints::milliseconds(headers))
        .or_else(|| hints::rate_limit(headers))
}

/// Parse one `Retry-After` value: delta-seconds or an HTTP-date, relative to `now`.
///
/// Surrounding whitespace is ignored. Delta-seconds is one or more ASCII digits (no sign, no
/// fraction) and saturates at `u64::MAX` seconds. An HTTP-date must follow one of RFC 9110's
/// three forms exactly, names in their exact case and `GMT`; its weekday must be a valid name but
/// is not checked against the date (the date is what the server meant; a wrong weekday is a
/// cosmetic bug on its side). A two-digit RFC 850 year is read as the most recent matching year
/// that is not more than 50 years after `now`, as RFC 9110 requires.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::http::parse_retry_after;
/// use std::time::{Duration, UNIX_EPOCH};
///
/// let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
/// let in_a_minute = Some(Duration::from_secs(60));
/// assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:50:37 GMT", now), in_a_minute);
/// assert_eq!(parse_retry_after("Sunday, 06-Nov-94 08:50:37 GMT", now), in_a_minute);
/// assert_eq!(parse_retry_after("Sun Nov  6 08:50:37 1994", now), in_a_minute);
/// assert_eq!(parse_retry_after(" 60 ", now), in_a_minute);
/// assert_eq!(parse_retry_after("-1", now), None);
/// ```
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim_matches([' ', '\t']);
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Duration::from_secs(saturating_digits(value.as_bytes())));
    }
    let at = date::parse_http_date(value, now)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The class of a response and the wait it asks for: the one place every HTTP front end turns
/// an answer into what the retry loop decides with (the tower layer's `HttpFailure`, the
/// middleware's `Attempted`, [`StatusError`] and so [`error_for_status`] and
/// `reqwest::error_for_status`). The class is [`status_class`] of the status; the wait is
/// [`retry_after`] of the headers. A rule about answers (a status read differently, a hint
/// header more, a wait floor for a status) is written here and reaches all of them. Which
/// answers a layer treats as failed attempts at all is decided on the status alone
/// ([`status_class`]), so that a successful answer's headers are never read.
///
/// The hint is returned whatever the class; a retry loop ignores it for a permanent one. How
/// the loop uses it: the next wait is the longer of the policy's jittered delay and the hint;
/// a hint longer than the policy's `max_delay` stops the call (`StopReason::RetryAfterTooLong`)
/// rather than waiting past the cap the policy declares, and a wait that would end past the
/// deadline stops it too. So a floor added here (say, "a 429 waits at least 1 s") only has
/// the effect it says under a `max_delay` of at least that floor: with `max_delay = "500ms"`
/// the call stops instead. Raise `max_delay` where servers ask for long waits.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use http::{HeaderMap, HeaderValue, StatusCode};
/// use retry_kit::{http::classify_response, ErrorClass};
/// use std::time::Duration;
///
/// assert_eq!(
///     classify_response(StatusCode::BAD_REQUEST, &HeaderMap::new()),
///     (ErrorClass::Permanent, None),
/// );
/// let mut headers = HeaderMap::new();
/// headers.insert("retry-after", HeaderValue::from_static("3"));
/// assert_eq!(
///     classify_response(StatusCode::TOO_MANY_REQUESTS, &headers),
///     (ErrorClass::Transient, Some(Duration::from_secs(3))),
/// );
/// ```
pub fn classify_response(
    status: StatusCode,
    headers: &HeaderMap,
) -> (ErrorClass, Option<Duration>) {
    (status_class(status), retry_after(headers))
}

/// A non-success HTTP response as an error: its status and its `Retry-After`, read when the
/// response arrived.
///
/// It implements [`Classify`] (the class by [`status_class`], the hint from `Retry-After`), so an
/// error enum can hold it in a `#[classify(delegate)]` variant beside the HTTP client's own error.
/// The response body is not kept: read what you need from it before turning it into an error.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use http::{header::RETRY_AFTER, Response, StatusCode};
/// use retry_kit::{http::StatusError, Classify, ErrorClass};
/// use std::time::Duration;
///
/// let response = Response::builder()
///     .status(StatusCode::SERVICE_UNAVAILABLE)
///     .header(RETRY_AFTER, "2")
///     .body(())
///     .unwrap();
/// let error = StatusError::from_response(&response);
/// assert_eq!(error.status(), StatusCode::SERVICE_UNAVAILABLE);
/// assert_eq!(error.class(), ErrorClass::Transient);
/// assert_eq!(error.retry_after(), Some(Duration::from_secs(2)));
/// assert_eq!(error.to_string(), "HTTP status 503 Service Unavailable (retry after 2s)");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StatusError {
    status: StatusCode,
    retry_after: Option<Duration>,
}

impl StatusError {
    /// The error for a response with this status and these headers.
    pub fn new(status: StatusCode, headers: &HeaderMap) -> Self {
        StatusError::with_retry_after(status, classify_response(status, headers).1)
    }

    /// The error for a status and an already known wait hint.
    pub const fn with_retry_after(status: StatusCode, retry_after: Option<Duration>) -> Self {
        StatusError {
            status,
            retry_after,
        }
    }

    /// The error for an [`http::Response`] (its body is not read).
    pub fn from_response<B>(response: &Response<B>) -> Self {
        StatusError::new(response.status(), response.headers())
    }

    /// The response's status.
    pub const fn status(&self) -> StatusCode {
        self.status
    }
}

impl fmt::Display for StatusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP status {}", self.status)?;
        if let Some(wait) = self.retry_after {
            write!(f, " (retry after {wait:?})")?;
        }
        Ok(())
    }
}

impl std::error::Error for StatusError {}

impl Classify for StatusError {
    fn class(&self) -> ErrorClass {
        status_class(self.status)
    }
    fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }
}

/// Pass a response through if its status is not a 4xx or 5xx; otherwise turn it into a
/// [`StatusError`] carrying the status and the `Retry-After` wait.
///
/// 1xx, 2xx and 3xx pass, as with reqwest's `error_for_status`: a redirect the client did not
/// follow is an answer to look at, not a failure.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use http::{Response, StatusCode};
/// use retry_kit::http::error_for_status;
///
/// let ok = Response::builder().status(StatusCode::OK).body("hi").unwrap();
/// assert_eq!(error_for_status(ok).unwrap().into_body(), "hi");
/// let gone = Response::builder().status(StatusCode::GONE).body("").unwrap();
/// assert_eq!(error_for_status(gone).unwrap_err().status(), StatusCode::GONE);
/// ```
pub fn error_for_status<B>(response: Response<B>) -> Result<Response<B>, StatusError> {
    if is_failure(response.status()) {
        Err(StatusError::from_response(&response))
    } else {
        Ok(response)
    }
}

/// Every three-digit status, written out once: what [`status_text`] slices.
#[cfg(any(feature = "reqwest-middleware", feature = "tower"))]
static STATUS_DIGITS: [u8; 2700] = {
    let mut digits = [0u8; 2700];
    let mut i = 0;
    while i < 900 {
        let n = i + 100;
        digits[i * 3] = b'0' + (n / 100) as u8;
        digits[i * 3 + 1] = b'0' + (n / 10 % 10) as u8;
        digits[i * 3 + 2] = b'0' + (n % 10) as u8;
        i += 1;
    }
    digits
};

/// A status as the `code` label and the `error.type` attribute give it (`"503"`, as
/// OpenTelemetry's HTTP conventions write `error.type`): text in the binary, so that a label
/// made of it copies nothing.
#[cfg(any(feature = "reqwest-middleware", feature = "tower"))]
pub(crate) fn status_text(status: StatusCode) -> &'static str {
    let at = usize::from(status.as_u16() - 100) * 3;
    std::str::from_utf8(&STATUS_DIGITS[at..at + 3]).unwrap_or("000")
}

/// Whether a status is a failure for [`error_for_status`]: 4xx and 5xx.
pub(crate) fn is_failure(status: StatusCode) -> bool {
    status.is_client_error() || status.is_server_error()
}

/// ASCII digits as a `u64`, saturating instead of overflowing.
fn saturating_digits(digits: &[u8]) -> u64 {
    digits.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    })
}

/// Whether a request may be sent again when its outcome is unknown: an idempotent method
/// (RFC 9110: GET, HEAD, OPTIONS, TRACE, PUT, DELETE) or an `Idempotency-Key` header. The one
/// rule the reqwest middleware and the tower HTTP layer share.
#[cfg(any(feature = "reqwest-middleware", feature = "tower"))]
#[inline]
pub(crate) fn may_repeat(method: &::http::Method, headers: &HeaderMap) -> bool {
    use ::http::Method;
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    ) || headers.contains_key("idempotency-key")
}

/// Give a `POST` or `PATCH` without an `Idempotency-Key` header a fresh one (32 hex digits),
/// sent unchanged on every attempt, so that the server can recognise a repeat and the request
/// may be retried where its outcome is unknown. What `.idempotency_keys()` turns on.
#[cfg(any(feature = "reqwest-middleware", feature = "tower"))]
pub(crate) fn add_idempotency_key(method: &::http::Method, headers: &mut HeaderMap) {
    use ::http::Method;
    if (*method == Method::POST || *method == Method::PATCH)
        && !headers.contains_key("idempotency-key")
    {
        let key = crate::IdempotencyKey::draw().to_string();
        // 32 hex digits are always a valid header value.
        if let Ok(value) = ::http::HeaderValue::from_str(&key) {
            headers.insert("idempotency-key", value);
        }
    }
}

/// The policy one request is retried under by the HTTP front ends: with `add_keys`, a `POST` or
/// `PATCH` first gets an `Idempotency-Key`; then a request that [`may_repeat`] is retried as
/// idempotent.
#[cfg(any(feature = "reqwest-middleware", feature = "tower"))]
#[inline]
pub(crate) fn request_policy(
    policy: crate::RetryPolicy,
    add_keys: bool,
    method: &::http::Method,
    headers: &mut HeaderMap,
) -> crate::RetryPolicy {
    if add_keys {
        add_idempotency_key(method, headers);
    }
    if may_repeat(method, headers) {
        policy.idempotent(true)
    } else {
        policy
    }
}

#[cfg(test)]
mod tests {
    #[cfg(any(feature = "reqwest-middleware", feature = "tower"))]
    #[test]
    fn every_status_is_written_as_its_digits() {
        for n in 100..=999u16 {
            let status = StatusCode::from_u16(n).unwrap();
            assert_eq!(super::status_text(status), n.to_string());
        }
    }

    use super::*;
    use std::time::UNIX_EPOCH;

    /// Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example date.
    pub(super) const EXAMPLE: u64 = 784_111_777;

    pub(super) fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn every_status_from_100_to_999_has_the_documented_class() {
        for code in 100..=999u16 {
            let status = StatusCode::from_u16(code).unwrap();
            let expected = match code {
                408 | 429 | 503 => ErrorClass::Transient,
                500 | 502 | 504 => ErrorClass::IdempotentOnly,
                _ => ErrorClass::Permanent,
            };
            assert_eq!(status_class(status), expected, "status {code}");
        }
    }

    #[test]
    fn delta_seconds_are_read_with_surrounding_whitespace() {
        let now = at(EXAMPLE);
        assert_eq!(parse_retry_after("0", now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after(" \t7\t ", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(parse_retry_after("007", now), Some(Duration::from_secs(7)));
    }

    #[test]
    fn huge_delta_seconds_saturate_instead_of_failing() {
        let now = at(EXAMPLE);
        let max = Some(Duration::from_secs(u64::MAX));
        assert_eq!(parse_retry_after("18446744073709551615", now), max);
        assert_eq!(parse_retry_after("18446744073709551616", now), max);
        assert_eq!(parse_retry_after(&"9".repeat(400), now), max);
    }

    #[test]
    fn the_three_date_forms_give_the_same_instant() {
        let now = at(EXAMPLE - 90);
        let want = Some(Duration::from_secs(90));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            want
        );
        assert_eq!(
            parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", now),
            want
        );
        assert_eq!(parse_retry_after("Sun Nov  6 08:49:37 1994", now), want);
    }

    #[test]
    fn future_dates_are_measured_from_now_including_its_fraction() {
        let now = at(EXAMPLE) - Duration::from_millis(1500);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_millis(1500))
        );
        // Far ahead: year 9999.
        let far = parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now).unwrap();
        assert_eq!(far.as_secs(), 253_402_300_799 - EXAMPLE + 1);
    }

    #[test]
    fn past_dates_mean_retry_now() {
        let now = at(EXAMPLE);
        let zero = Some(Duration::ZERO);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:36 GMT", now),
            zero
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            zero
        );
        assert_eq!(
            parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", now),
            zero
        );
        assert_eq!(
            parse_retry_after("Mon, 01 Jan 1900 00:00:00 GMT", now),
            zero
        );
        assert_eq!(parse_retry_after("Sat Jan  1 00:00:00 0000", now), zero);
    }

    #[test]
    fn dates_on_calendar_edges_are_exact() {
        // 2000-02-29 (a leap year divisible by 400) and 2024-12-31, against known epoch seconds.
        let cases = [
            ("Tue, 29 Feb 2000 00:00:00 GMT", 951_782_400),
            ("Tue, 31 Dec 2024 23:59:59 GMT", 1_735_689_599),
            ("Thu, 01 Jan 1970 00:00:01 GMT", 1),
        ];
        for (date, secs) in cases {
            assert_eq!(
                parse_retry_after(date, UNIX_EPOCH),
                Some(Duration::from_secs(secs)),
                "{date}"
            );
        }
        // A leap second is the next minute's first second.
        assert_eq!(
            parse_retry_after("Sat, 31 Dec 2016 23:59:60 GMT", UNIX_EPOCH),
            Some(Duration::from_secs(1_483_228_800))
        );
    }

    #[test]
    fn garbage_is_no_hint() {
        let now = at(EXAMPLE);
        for value in [
            "",
            " ",
            "-1",
            "+5",
            "1.5",
            "5s",
            "soon",
            "0x10",
            "１２",
            // Wrong case, a missing or wrong zone, a missing comma, bad padding.
            "sun, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun 06 Nov 1994 08:49:37 GMT",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT",
            "Sun, 06-Nov-94 08:49:37 GMT",
            "Sunday, 06 Nov 1994 08:49:37 GMT",
            "Sun Nov 06 08:49:37 1994 GMT",
            "Sun Nov 6 08:49:37 1994",
            "Xyz Nov  6 08:49:37 1994",
            "Funday, 06-Nov-94 08:49:37 GMT",
            // Dates and times that do not exist.
            "Sun, 31 Nov 1994 08:49:37 GMT",
            "Sun, 29 Feb 1900 08:49:37 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:61 GMT",
            "Sun, 06 Nov 1994 08-49-37 GMT",
        ] {
            assert_eq!(parse_retry_after(value, now), None, "{value:?}");
        }
    }

    #[test]
    fn a_mismatched_weekday_is_tolerated() {
        // 06 Nov 1994 was a Sunday; the date is what counts.
        assert_eq!(
            parse_retry_after("Mon, 06 Nov 1994 08:49:47 GMT", at(EXAMPLE)),
            Some(Duration::from_secs(10))
        );
    }

    #[test]
    fn the_first_retry_after_header_counts_and_non_text_values_are_ignored() {
        let mut headers = HeaderMap::new();
        headers.append(RETRY_AFTER, "5".parse().unwrap());
        headers.append(RETRY_AFTER, "9".parse().unwrap());
        assert_eq!(
            retry_after_at(&headers, at(EXAMPLE)),
            Some(Duration::from_secs(5))
        );
        let mut headers = HeaderMap::new();
        headers.insert(
            RETRY_AFTER,
            ::http::HeaderValue::from_bytes(b"5\xff").unwrap(),
        );
        assert_eq!(retry_after_at(&headers, at(EXAMPLE)), None);
    }

    #[test]
    fn status_error_displays_and_classifies_without_a_hint() {
        let error = StatusError::new(StatusCode::INTERNAL_SERVER_ERROR, &HeaderMap::new());
        assert_eq!(error.class(), ErrorClass::IdempotentOnly);
        assert_eq!(Classify::retry_after(&error), None);
        assert_eq!(error.to_string(), "HTTP status 500 Internal Server Error");
    }

    #[test]
    fn error_for_status_passes_1xx_2xx_3xx_and_fails_4xx_5xx() {
        for code in 100..=599u16 {
            let status = StatusCode::from_u16(code).unwrap();
            let response = Response::builder().status(status).body(()).unwrap();
            assert_eq!(
                error_for_status(response).is_err(),
                code >= 400,
                "status {code}"
            );
        }
    }
}
