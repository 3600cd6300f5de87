//! [`GrpcFailure`]: a failed attempt of a gRPC call as the engine, hooks and `Failure` records
//! see it, and the classifier that decides, by the method's rule, whether it is tried again.

use super::rules::Rule;
use super::{Pushback, pushback};
use crate::class::{Classify, ErrorClass};
use crate::error::{CircuitOpen, TimedOut};
use crate::run::{Classifier, StopReason};
use crate::tower::{BoxError, ReplayBody};
use ::tonic::{Code, Status};
use std::any::Any;
use std::fmt;
use std::time::Duration;

/// A failed attempt of a gRPC call: a status the server answered with before committing the
/// call (a Trailers-Only response), or a transport failure, as the application would see it
/// ([`status`](Self::status) is what tonic turns it into).
///
/// What [`on_failure`](super::GrpcRetryLayer::on_failure) hooks receive, inside
/// [`Failure`](crate::Failure):
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::tonic::GrpcFailure;
/// use retry_kit::{Failure, Next};
///
/// fn log(failure: &Failure<'_, GrpcFailure>) {
///     let status = failure.error.status();
///     match failure.next {
///         Next::Retry(delay) => eprintln!("{:?} ({}), retry in {delay:?}", status.code(), status.message()),
///         _ => eprintln!("{:?} ({}), giving up", status.code(), status.message()),
///     }
/// }
/// # let _ = log;
/// ```
pub struct GrpcFailure {
    status: Status,
    kind: Kind,
    pushback: Pushback,
    /// The Trailers-Only response as it came, handed to tonic unchanged when the call stops on
    /// it (tonic then decodes every part of its status, binary details included). Type-erased
    /// so that hooks name one failure type whatever the response body.
    response: Option<Box<dyn Any + Send>>,
    /// The call's method, `/pkg.Service/Method` (set by the layer on every failure a hook
    /// sees).
    method: Option<::http::uri::PathAndQuery>,
}

/// Where a failure happened, which decides whether repeating the attempt could act twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The server (or a proxy refusing the request) answered with a status before any
    /// response headers: the call is not committed.
    Answered,
    /// Nothing reached the server: a connection that could not be made, a stream the server
    /// refused before any application logic (`REFUSED_STREAM`). gRPC retries these
    /// transparently.
    NotSent,
    /// The request may have reached the server's handler: a connection lost after it was
    /// written, a proxy's 502 or 504. The outcome is unknown.
    MaybeProcessed,
    /// A failure that is not the server's: the request body failed, a protocol error.
    Broken,
    /// The layer did not send the attempt: the deadline had passed, the request messages
    /// outgrew the buffer while another attempt sent them, the breaker refused. Rare races:
    /// the engine checks the deadline and the buffer before it starts an attempt. Such a
    /// failure is idempotent-only and never repeated: a hedged call then waits for the
    /// attempts still running (a permanent class would cancel them).
    NotSentByLayer,
    /// The attempt had no response headers within its per-attempt timeout (the method's
    /// `perAttemptRecvTimeout`, the layer's `attempt_timeout`) and was cancelled: under a
    /// service config it is retried whatever the codes listed, as gRPC's C core retries it;
    /// under the crate's table it is idempotent-only, as every attempt timeout in the crate.
    TimedOut,
    /// The call's deadline had passed when the attempt ended, whatever ended it: the layer's
    /// timer, or what the server (whose own timer for the attempt's `grpc-timeout` fires at
    /// the same moment) answered then.
    DeadlineExceeded,
}

impl GrpcFailure {
    /// The status the application sees for this attempt: the server's (its code, message and
    /// metadata, `grpc-retry-pushback-ms` included), or what tonic makes of a transport
    /// error.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::Failure;
    /// use retry_kit::tonic::GrpcFailure;
    ///
    /// fn pushed_back(failure: &Failure<'_, GrpcFailure>) -> bool {
    ///     failure.error.status().metadata().contains_key("grpc-retry-pushback-ms")
    /// }
    /// # let _ = pushed_back;
    /// ```
    pub fn status(&self) -> &Status {
        &self.status
    }

    /// The status code ([`status`](Self::status)`.code()`).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::Failure;
    /// use retry_kit::tonic::GrpcFailure;
    /// use tonic::Code;
    ///
    /// fn overloaded(failure: &Failure<'_, GrpcFailure>) -> bool {
    ///     failure.error.code() == Code::ResourceExhausted
    /// }
    /// # let _ = overloaded;
    /// ```
    pub fn code(&self) -> Code {
        self.status.code()
    }

    /// The method the call was for, its path as gRPC writes it on the wire
    /// (`/grpc.health.v1.Health/Check`): one layer serves every method of a channel, and
    /// this says which one failed.
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::Failure;
    /// use retry_kit::tonic::GrpcFailure;
    ///
    /// fn log(failure: &Failure<'_, GrpcFailure>) {
    ///     eprintln!("{} attempt {}: {:?}", failure.error.method(), failure.attempt, failure.error.code());
    /// }
    /// # let _ = log;
    /// ```
    pub fn method(&self) -> &str {
        self.method.as_ref().map_or("", |path| path.path())
    }

    /// Where it happened.
    #[cfg(feature = "metrics")]
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// The same failure, of the call to `method`.
    pub(crate) fn of_method(mut self, method: Option<&::http::uri::PathAndQuery>) -> Self {
        self.method = method.cloned();
        self
    }

    /// Whether the server answered with this status (a Trailers-Only response), rather than
    /// the attempt failing on the way (a connection, the deadline).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::Failure;
    /// use retry_kit::tonic::GrpcFailure;
    ///
    /// fn describe(failure: &Failure<'_, GrpcFailure>) -> &'static str {
    ///     if failure.error.is_answer() { "the server refused" } else { "the call failed on the way" }
    /// }
    /// # let _ = describe;
    /// ```
    pub fn is_answer(&self) -> bool {
        self.kind == Kind::Answered
    }

    /// A status the server (or a proxy) answered with, in a Trailers-Only response.
    pub(crate) fn answered<B: Send + 'static>(
        response: ::http::Response<B>,
        code: Code,
        kind: Kind,
    ) -> Self {
        let status = super::wire::status_of(response.headers(), code);
        // Without a pushback, a `google.rpc.RetryInfo` in the details says the wait.
        let pushback = match pushback(status.metadata()) {
            Pushback::Absent => super::retry_info::delay_in_header(response.headers())
                .map_or(Pushback::Absent, Pushback::RetryAfter),
            hint => hint,
        };
        GrpcFailure {
            pushback,
            status,
            kind,
            response: Some(Box::new(response)),
            method: None,
        }
    }

    /// The inner service's error, as tonic will report it.
    pub(crate) fn transport(error: BoxError) -> Self {
        let kind = transport_kind(&*error);
        GrpcFailure {
            status: Status::from_error(error),
            kind,
            pushback: Pushback::Absent,
            response: None,
            method: None,
        }
    }

    /// An attempt the layer did not send.
    pub(crate) fn not_sent(status: Status) -> Self {
        GrpcFailure {
            status,
            kind: Kind::NotSentByLayer,
            pushback: Pushback::Absent,
            response: None,
            method: None,
        }
    }

    /// This failure as the call's deadline: what an attempt that ended once the deadline had
    /// passed becomes, whatever ended it. The attempt is sent with exactly the time left, so
    /// the server's timer fires with the layer's and either may answer first (tonic's server
    /// with CANCELLED, "Timeout expired"); as in gRPC's own clients, the client's deadline
    /// wins: the caller gets DEADLINE_EXCEEDED, and the call stops for the deadline. A status
    /// that says DEADLINE_EXCEEDED already is kept as it is.
    pub(crate) fn past_deadline(self) -> Self {
        if self.code() == Code::DeadlineExceeded {
            return GrpcFailure {
                kind: Kind::DeadlineExceeded,
                ..self
            };
        }
        let message = format!("the call's deadline passed; the attempt then ended with {self}");
        GrpcFailure {
            status: Status::deadline_exceeded(message),
            kind: Kind::DeadlineExceeded,
            pushback: Pushback::Absent,
            response: None,
            method: self.method,
        }
    }

    /// What the call returns when the loop stops on this failure: the server's own response
    /// if it answered, else the status as an error (which tonic takes as it is).
    pub(crate) fn into_result<B: 'static>(self) -> Result<::http::Response<B>, BoxError> {
        if let Some(response) = self.response {
            if let Ok(response) = response.downcast::<::http::Response<B>>() {
                return Ok(*response);
            }
        }
        Err(Box::new(self.status))
    }

    /// The class under `rule`. An answered status follows the rule; a failure on the way
    /// follows where it happened: nothing sent is safe to repeat (transparently, as gRPC
    /// does, whatever the codes listed), a possibly processed request is an unknown outcome.
    fn class_under(&self, rule: Rule) -> ErrorClass {
        match (self.kind, rule) {
            (Kind::Answered, Rule::Table) => self.status.class(),
            (Kind::Answered, Rule::Listed(codes)) if codes.contains(self.code()) => {
                // A listed code: tried again, unless the server's pushback forbids it (the
                // classifier then says it cannot be repeated). Still a failure either way:
                // A6 charges the throttling tokens for both.
                ErrorClass::Transient
            }
            (Kind::Answered, Rule::Listed(_)) => ErrorClass::Permanent,
            (Kind::NotSent, _) | (Kind::TimedOut, Rule::Listed(_)) => ErrorClass::Transient,
            (Kind::TimedOut, Rule::Table) => ErrorClass::IdempotentOnly,
            (Kind::MaybeProcessed | Kind::DeadlineExceeded | Kind::NotSentByLayer, _) => {
                ErrorClass::IdempotentOnly
            }
            (Kind::Broken, _) => ErrorClass::Permanent,
        }
    }
}

/// How a transport failure happened, from its source chain: the HTTP layers' reading of it
/// (connect errors and refused connections sent nothing; resets, closes and timeouts after
/// the request was written may have been processed), plus HTTP/2's `REFUSED_STREAM`, which
/// the server sends before any application logic ran.
fn transport_kind(error: &(dyn std::error::Error + 'static)) -> Kind {
    let mut current = Some(error);
    while let Some(e) = current {
        if e.to_string().contains("refused stream before processing") {
            return Kind::NotSent;
        }
        current = e.source();
    }
    match crate::tower::chain_class(error).0 {
        ErrorClass::Transient => Kind::NotSent,
        ErrorClass::IdempotentOnly => Kind::MaybeProcessed,
        _ => Kind::Broken,
    }
}

/// The layer's classifier: the method's rule, whether the request messages can be sent
/// again (asked of the replay buffer itself), and how long a pushback may be.
pub(crate) struct GrpcClassifier<'b, B> {
    pub(crate) rule: Rule,
    pub(crate) body: &'b ReplayBody<B>,
    /// The longest pushback a service config's method waits (the layer's `max_pushback`).
    pub(crate) max_pushback: Duration,
}

impl<B> Classifier<GrpcFailure> for GrpcClassifier<'_, B> {
    #[inline]
    fn class(&self, failure: &GrpcFailure) -> ErrorClass {
        failure.class_under(self.rule)
    }

    #[inline]
    fn retry_after(&self, failure: &GrpcFailure) -> Option<Duration> {
        match failure.pushback {
            Pushback::RetryAfter(wait) if failure.kind == Kind::Answered => Some(wait),
            _ => None,
        }
    }

    // Once the deadline has passed the call is over, whatever the class and the attempts left:
    // the caller's deadline is the reason it ends.
    #[inline]
    fn stop_reason(&self, failure: &GrpcFailure) -> Option<StopReason> {
        (failure.kind == Kind::DeadlineExceeded).then_some(StopReason::DeadlineExceeded)
    }

    const LIMITS_REPEATS: bool = true;

    fn repeatable(&self, failure: &GrpcFailure) -> bool {
        let refused = failure.pushback == Pushback::DoNotRetry;
        !refused
            && !matches!(failure.kind, Kind::NotSentByLayer | Kind::DeadlineExceeded)
            && self.body.is_replayable()
    }

    // Under a service config, A6's rule: "retry after exactly that delay", whatever the
    // backoff and `maxBackoff` say, up to the layer's bound. Under the crate's table
    // (`GrpcRetryLayer::new`), the crate's rule: a floor under the policy's delay, bounded by
    // its `max_delay`, as `#[retryable]` and the HTTP layers treat a hint.
    #[inline]
    fn exact_wait_limit(&self) -> Option<Duration> {
        match self.rule {
            Rule::Table => None,
            Rule::Listed(_) => Some(self.max_pushback),
        }
    }
}

/// An attempt cut by its timer: by the per-attempt timeout, as CANCELLED (what gRPC's C core
/// reports for `perAttemptRecvTimeout`), or by the deadline, which the layer then reports as
/// the deadline, DEADLINE_EXCEEDED.
impl From<TimedOut> for GrpcFailure {
    fn from(cut: TimedOut) -> Self {
        let message = format!(
            "the attempt had no response within its per-attempt timeout of {:?}",
            cut.limit()
        );
        GrpcFailure {
            status: Status::cancelled(message),
            kind: Kind::TimedOut,
            pushback: Pushback::Absent,
            response: None,
            method: None,
        }
    }
}

impl From<CircuitOpen> for GrpcFailure {
    fn from(open: CircuitOpen) -> Self {
        GrpcFailure::not_sent(Status::unavailable(open.to_string()))
    }
}

/// A status code's name as gRPC writes it (`UNAVAILABLE`): the `code` label and field, and
/// the attempt span's `error.type` (OpenTelemetry's gRPC conventions, and A66's `grpc.status`,
/// write codes so).
pub(crate) fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// What names a gRPC call in its reports: the layer's `.named(..)`, else the method's path.
pub(crate) struct ByMethod<'a> {
    pub(crate) named: Option<&'static str>,
    pub(crate) path: &'a str,
}

impl crate::observe::Subject for ByMethod<'_> {
    #[inline]
    fn with_name<R>(&self, f: impl FnOnce(crate::observe::Name<'_>) -> R) -> R {
        match self.named {
            Some(name) => f(crate::observe::Name::Static(name)),
            None => f(crate::observe::Name::Text(self.path)),
        }
    }
}

/// Every failure has a status code.
impl crate::observe::Status<GrpcFailure> for ByMethod<'_> {
    #[inline]
    fn code(&self, failure: &GrpcFailure) -> Option<&'static str> {
        Some(code_name(failure.code()))
    }
}

impl fmt::Display for GrpcFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gRPC status {:?}", self.status.code())?;
        if !self.status.message().is_empty() {
            write!(f, ": {}", self.status.message())?;
        }
        Ok(())
    }
}

impl fmt::Debug for GrpcFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcFailure")
            .field("status", &self.status)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}
