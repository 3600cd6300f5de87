//! What the layer reads and writes on the wire: the `grpc-timeout` and
//! `grpc-previous-rpc-attempts` request headers, and what the response headers of an attempt
//! say: a status in a Trailers-Only response (the call is not committed), or the start of the
//! answer (committed).

use ::http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use ::tonic::metadata::MetadataMap;
use ::tonic::{Code, Status};
use std::time::Duration;

/// The request header that tells the server how many attempts of this call came before
/// (gRFC A6): absent on the first attempt, `1` on the second, and so on, on retries and
/// hedges alike. A server can read it to tell a retry from a first call.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::tonic::PREVIOUS_ATTEMPTS_KEY;
///
/// fn is_retry<T>(request: &tonic::Request<T>) -> bool {
///     request.metadata().contains_key(PREVIOUS_ATTEMPTS_KEY)
/// }
/// assert!(!is_retry(&tonic::Request::new(())));
/// ```
pub const PREVIOUS_ATTEMPTS_KEY: &str = "grpc-previous-rpc-attempts";

/// The request header carrying the time the call has left (gRPC over HTTP/2).
pub(crate) const TIMEOUT_KEY: &str = "grpc-timeout";

const STATUS_KEY: &str = "grpc-status";
/// The same, parsed once: a lookup by `&str` parses the name on every response.
const STATUS: HeaderName = HeaderName::from_static(STATUS_KEY);
const MESSAGE_KEY: &str = "grpc-message";
pub(crate) const DETAILS_KEY: &str = "grpc-status-details-bin";

/// A `grpc-timeout` value: at most 8 digits and a unit (`H`, `M`, `S`, `m`, `u`, `n`).
/// `None` for anything else, a protocol error: the layer fails such a call before sending it.
pub(crate) fn parse_timeout(value: &HeaderValue) -> Option<Duration> {
    let text = value.to_str().ok()?;
    let unit = text.bytes().last()?;
    let digits = &text[..text.len() - 1];
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Eight digits fit any unit below without overflow (99,999,999 hours is 3.6e11 s).
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

/// `left` as a `grpc-timeout` value: the finest unit whose count fits in 8 digits, rounded
/// up, as grpc-go rounds it: the server's timer for the attempt must never fire before the
/// caller's deadline, which would hand the caller the server's answer to a deadline that had
/// not passed yet (the caller's deadline wins). At most one unit later: under a microsecond
/// for anything below 100 s.
pub(crate) fn timeout_value(left: Duration) -> HeaderValue {
    const UNITS: [(char, u128); 6] = [
        ('n', 1),
        ('u', 1_000),
        ('m', 1_000_000),
        ('S', 1_000_000_000),
        ('M', 60_000_000_000),
        ('H', 3_600_000_000_000),
    ];
    let nanos = left.as_nanos();
    let text = UNITS
        .iter()
        .map(|(unit, size)| (nanos.div_ceil(*size), unit))
        .find(|(count, _)| *count < 100_000_000)
        .map_or_else(
            || "99999999H".to_owned(),
            |(count, unit)| format!("{count}{unit}"),
        );
    // Digits and an ASCII letter: always a valid header value.
    HeaderValue::try_from(text).unwrap_or(HeaderValue::from_static("99999999H"))
}

/// What an attempt's response headers say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Response headers without a status: the answer has begun, the call is committed.
    Committed,
    /// A status and nothing else (Trailers-Only, or a refusal by a proxy: HTTP 429 or 503, or
    /// a 4xx): the call is not committed.
    Status(Code),
    /// A proxy failed after it may have passed the request on (HTTP 502, 504 and other
    /// statuses): the server may have acted on it. The code is the one gRPC gives it.
    MaybeProcessed(Code),
}

/// Read an attempt's response headers. A `grpc-status` in them makes a Trailers-Only
/// response; an HTTP status other than 200 without one is mapped to a code as gRPC maps it
/// (`http-grpc-status-mapping.md`, the same table tonic applies).
pub(crate) fn answer_of<B>(response: &Response<B>) -> Answer {
    if let Some(status) = response.headers().get(STATUS) {
        return Answer::Status(Code::from_bytes(status.as_bytes()));
    }
    match response.status() {
        StatusCode::OK => Answer::Committed,
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => {
            Answer::Status(Code::Unavailable)
        }
        StatusCode::BAD_REQUEST => Answer::Status(Code::Internal),
        StatusCode::UNAUTHORIZED => Answer::Status(Code::Unauthenticated),
        StatusCode::FORBIDDEN => Answer::Status(Code::PermissionDenied),
        StatusCode::NOT_FOUND => Answer::Status(Code::Unimplemented),
        StatusCode::BAD_GATEWAY | StatusCode::GATEWAY_TIMEOUT => {
            Answer::MaybeProcessed(Code::Unavailable)
        }
        _ => Answer::MaybeProcessed(Code::Unknown),
    }
}

/// The status of a Trailers-Only response, for classification and hooks: its code, its
/// message (percent-decoded) and its custom metadata. (The binary details are left to tonic,
/// which decodes the response itself when the layer hands it on.)
pub(crate) fn status_of(headers: &HeaderMap, code: Code) -> Status {
    let message = headers
        .get(MESSAGE_KEY)
        .map(|m| percent_decode(m.as_bytes()))
        .unwrap_or_default();
    let mut metadata = headers.clone();
    for reserved in [STATUS_KEY, MESSAGE_KEY, DETAILS_KEY, "content-type"] {
        metadata.remove(reserved);
    }
    Status::with_metadata(code, message, MetadataMap::from_headers(metadata))
}

/// `grpc-message` is percent-encoded UTF-8; a malformed escape is kept as it is.
fn percent_decode(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&hi), Some(&lo)) if hex(hi).is_some() && hex(lo).is_some() => {
                let (hi, lo) = (hex(hi).unwrap_or(0), hex(lo).unwrap_or(0));
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_written_in_the_finest_unit_that_fits_rounded_up() {
        let cases = [
            (Duration::from_nanos(5), "5n"),
            (Duration::from_millis(1500), "1500000u"),
            (Duration::from_secs(30), "30000000u"),
            (Duration::from_secs(3000), "3000000m"),
            (Duration::from_secs(200_000), "200000S"),
            (Duration::from_secs(6_000_000_000), "1666667H"),
        ];
        for (left, text) in cases {
            let value = timeout_value(left);
            assert_eq!(value, text, "{left:?}");
            assert!(parse_timeout(&value).unwrap() >= left);
        }
        // Rounded up, never down: the server's timer must not fire before the caller's.
        assert_eq!(timeout_value(Duration::new(100, 999_999_999)), "101000m");
        assert_eq!(timeout_value(Duration::new(99, 999_999_999)), "100000m");
        assert_eq!(timeout_value(Duration::from_nanos(99_999_999)), "99999999n");
        // Past what 8 digits of hours hold: the most there is.
        assert_eq!(timeout_value(Duration::MAX), "99999999H");
    }

    #[test]
    fn malformed_timeouts_are_not_read() {
        for bad in ["", "S", "1", "123456789S", "1s", "-1S", "1.5S", "1 S"] {
            assert_eq!(
                parse_timeout(&HeaderValue::from_static(bad)),
                None,
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_timeout(&HeaderValue::from_static("99999999H")),
            Some(Duration::from_secs(99_999_999 * 3600))
        );
    }

    #[test]
    fn a_status_in_the_headers_is_trailers_only_and_200_without_one_commits() {
        let response = |status: u16, grpc: Option<&'static str>| {
            let mut r = Response::builder().status(status);
            if let Some(code) = grpc {
                r = r.header(STATUS_KEY, code);
            }
            r.body(()).unwrap()
        };
        assert_eq!(answer_of(&response(200, None)), Answer::Committed);
        assert_eq!(
            answer_of(&response(200, Some("14"))),
            Answer::Status(Code::Unavailable)
        );
        assert_eq!(
            answer_of(&response(200, Some("0"))),
            Answer::Status(Code::Ok)
        );
        assert_eq!(
            answer_of(&response(200, Some("x"))),
            Answer::Status(Code::Unknown)
        );
        assert_eq!(
            answer_of(&response(503, None)),
            Answer::Status(Code::Unavailable)
        );
        assert_eq!(
            answer_of(&response(404, None)),
            Answer::Status(Code::Unimplemented)
        );
        assert_eq!(
            answer_of(&response(502, None)),
            Answer::MaybeProcessed(Code::Unavailable)
        );
        assert_eq!(
            answer_of(&response(500, None)),
            Answer::MaybeProcessed(Code::Unknown)
        );
    }

    #[test]
    fn a_trailers_only_status_keeps_its_message_and_metadata() {
        let mut headers = HeaderMap::new();
        headers.insert(STATUS_KEY, HeaderValue::from_static("14"));
        headers.insert(
            MESSAGE_KEY,
            HeaderValue::from_static("down%20for%20%E2%9C%93 %zz"),
        );
        headers.insert("grpc-retry-pushback-ms", HeaderValue::from_static("20"));
        headers.insert(DETAILS_KEY, HeaderValue::from_static("not base64!"));
        let status = status_of(&headers, Code::Unavailable);
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(status.message(), "down for \u{2713} %zz");
        assert_eq!(
            status.metadata().get("grpc-retry-pushback-ms").unwrap(),
            "20"
        );
        assert!(status.metadata().get(STATUS_KEY).is_none());
    }
}
