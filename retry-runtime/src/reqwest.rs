//! reqwest: [`Classify`] for [`reqwest::Error`], and [`error_for_status`] for
//! responses whose status is a failure (feature `reqwest`).
//!
//! | the error | class | why |
//! | --- | --- | --- |
//! | `is_builder()`: a bad URL, an invalid header | permanent | the request was never sent and never will be |
//! | `is_connect()`: refused, unreachable, DNS failure, a connect timeout | transient | no connection, so the server never saw the request |
//! | `is_timeout()` (other than connecting) | idempotent-only | the server may be acting on the request as the client stops waiting |
//! | `is_status()` (from `Response::error_for_status`) | by [`status_class`] | see the table in [`crate::http`] |
//! | `is_request()`: the connection failed after it was made | idempotent-only | the request may have been written and acted on |
//! | `is_body()`, `is_decode()` caused by an I/O failure (a reset mid-body) | idempotent-only | a response had started, so the server acted; only an idempotent call may repeat that |
//! | `is_body()`, `is_decode()` otherwise, `is_redirect()`, `is_upgrade()` | permanent | the same bytes decode and redirect the same way again |
//!
//! The checks run in that order, so a connect timeout is transient (connect wins over timeout)
//! and a timeout while reading a body is idempotent-only.
//!
//! # Turning a failed response into an error
//!
//! A `reqwest::Response` with a 503 is not an `Err`, and `Response::error_for_status` keeps the
//! status but drops the `Retry-After` header. [`error_for_status`] keeps both in a
//! [`StatusError`]; hold it beside `reqwest::Error` in your error type and delegate:
//!
//! ```no_run
//! # extern crate retry_runtime as retry_kit;
//! use retry_kit::reqwest::error_for_status;
//! use retry_kit::{http::StatusError, retryable, Classify};
//!
//! #[derive(Debug, Classify)]
//! enum FetchError {
//!     /// Connect, timeout and body failures, classified by the table above.
//!     #[classify(delegate)]
//!     Transport(reqwest::Error),
//!     /// A 4xx or 5xx, classified by status, waiting at least its `Retry-After`.
//!     #[classify(delegate)]
//!     Status(StatusError),
//! }
//!
//! impl From<reqwest::Error> for FetchError {
//!     fn from(e: reqwest::Error) -> Self { FetchError::Transport(e) }
//! }
//! impl From<StatusError> for FetchError {
//!     fn from(e: StatusError) -> Self { FetchError::Status(e) }
//! }
//!
//! #[retryable(attempts = 4, base = "200ms", max_delay = "10s", idempotent)]
//! async fn fetch(client: &reqwest::Client, url: &str) -> Result<String, FetchError> {
//!     let response = error_for_status(client.get(url).send().await?)?;
//!     Ok(response.text().await?)
//! }
//! ```
//!
//! `idempotent` is right for a `GET`; leave it off for a `POST` and a 502 or a read timeout
//! stops the loop instead of repeating the write.

use crate::class::{Classify, ErrorClass};
use crate::http::{StatusError, is_failure, status_class};
use crate::io::io_kind_class;
use std::error::Error as _;
use std::io;

/// The table in the [module docs](self).
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{Classify, ErrorClass};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // Not a URL: the request cannot be built.
/// let error = reqwest::Client::new().get("http://[::1").send().await.unwrap_err();
/// assert!(error.is_builder());
/// assert_eq!(error.class(), ErrorClass::Permanent);
/// # }
/// ```
impl Classify for ::reqwest::Error {
    fn class(&self) -> ErrorClass {
        if self.is_builder() {
            ErrorClass::Permanent
        } else if self.is_connect() || refused_in_chain(self) {
            // A refused connection sent nothing, whatever stage reqwest reports it at (a
            // middleware's own error, such as an injected fault, reaches here as a body error).
            ErrorClass::Transient
        } else if self.is_timeout() {
            ErrorClass::IdempotentOnly
        } else if let Some(status) = self.status() {
            status_class(status)
        } else if self.is_request()
            || ((self.is_body() || self.is_decode()) && caused_by_io_failure(self))
        {
            ErrorClass::IdempotentOnly
        } else {
            ErrorClass::Permanent
        }
    }
}

/// Whether an I/O error of kind `ConnectionRefused` is in the error's chain of causes.
fn refused_in_chain(error: &::reqwest::Error) -> bool {
    let mut source = error.source();
    while let Some(cause) = source {
        if cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::ConnectionRefused)
        {
            return true;
        }
        source = cause.source();
    }
    false
}

/// Whether an I/O error that the io table would retry (a reset, an abort, a broken pipe) is in
/// the error's chain of causes.
fn caused_by_io_failure(error: &::reqwest::Error) -> bool {
    let mut source = error.source();
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<io::Error>() {
            if io_kind_class(io.kind()) != ErrorClass::Permanent {
                return true;
            }
        }
        source = cause.source();
    }
    false
}

/// Pass a response through if its status is not a 4xx or 5xx; otherwise turn it into a
/// [`StatusError`] that keeps the status and the `Retry-After` wait (which reqwest's own
/// `Response::error_for_status` drops).
///
/// 1xx, 2xx and 3xx pass, as with reqwest's method. The body of a failed response is dropped
/// unread; to keep it, check `response.status()` yourself and build the error with
/// [`StatusError::new`] before reading the body.
///
/// The error is a [`StatusError`], not a `reqwest::Error` (reqwest's errors cannot be made
/// outside reqwest): `?` on it needs a function whose error type is `From<StatusError>` as
/// well as `From<reqwest::Error>`, an enum that delegates to both (the [module docs](self)
/// derive one) or a boxed error, which [`classify_chain`](crate::classify_chain) reads.
///
/// ```no_run
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::{reqwest::error_for_status, Classify};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let response = reqwest::get("http://127.0.0.1:8080/").await?;
/// match error_for_status(response) {
///     Ok(response) => println!("{}", response.text().await?),
///     Err(failed) => println!("{failed}: {}, asks to wait {:?}", failed.class(), failed.retry_after()),
/// }
/// # Ok(())
/// # }
/// ```
pub fn error_for_status(response: ::reqwest::Response) -> Result<::reqwest::Response, StatusError> {
    if is_failure(response.status()) {
        Err(StatusError::new(response.status(), response.headers()))
    } else {
        Ok(response)
    }
}
