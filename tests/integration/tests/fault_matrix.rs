//! The fault matrix (STYLE.md, "Tests") of both HTTP front ends: `tower::HttpRetryLayer` over
//! hyper-util's client and `reqwest_middleware::RetryMiddleware` over reqwest, against a
//! scripted raw HTTP/1.1 server ([`scripted`]) that misbehaves as networks do (the rows) with
//! every kind of request (the columns). Each cell of [`MATRIX`] says, for each front end, how
//! many attempts the client makes, how many requests the server receives complete, what the
//! caller gets, and the SPEC rule that decides it; every request received complete must carry
//! the original body byte for byte, framed as the original (`content-length: N`, or chunked for
//! a stream) on every attempt. Every cell also checks that the client below the front end never
//! repeats a request by itself (no more request heads reach the server than the front end made
//! attempts): hyper-util's pool sends a request again on its own only when none of it was
//! written on a reused connection, and reqwest's own retries cover only HTTP/2 and HTTP/3.
//!
//! One test per front end runs the whole table and reports every failing cell at once. The
//! same table is in the `//!` docs of `retry-runtime/src/tower.rs` and
//! `retry-runtime/src/reqwest_middleware.rs` ("# Under faults"), and
//! `the_runtime_docs_show_this_matrix` keeps them equal.
//!
//! Time: the client runs on tokio's paused clock and every retry delay is recorded, not slept
//! (`testing::record_sleeps_async`); the server runs on its own threads in real time. A paused
//! clock jumps to the next timer whenever the runtime is idle, and a runtime waiting on a real
//! socket is idle, so an attempt timeout could fire before the server has even read the
//! request. [`Watch::hold`] keeps the runtime busy (so the clock still) while an attempt waits
//! on a server that is still reading; once the server hangs on a request it has read whole,
//! the clock may jump and the attempt times out at once, in virtual time.
#![cfg(all(feature = "tower", feature = "reqwest-middleware"))]
#![deny(warnings, unused_qualifications)]

mod scripted;
use scripted::{Behaviour, Framing, Seen, Server};

use futures_util::{StreamExt, stream};
use http::Request;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full, StreamBody};
use hyper::body::{Bytes, Frame};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use retry_kit::reqwest_middleware::RetryMiddleware;
use retry_kit::tower::{HttpRetryLayer, ReplayBody};
use retry_kit::{RetryPolicy, testing};
use std::error::Error as StdError;
use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tower_layer::Layer;
use tower_service::Service;

// ---------------------------------------------------------------------------------------------
// The set-up every cell shares.

/// Three attempts in all, 10 ms apart (recorded, never slept).
fn policy() -> RetryPolicy {
    RetryPolicy::fixed(Duration::from_millis(10)).attempts(3)
}

/// Each attempt is cut off after this (virtual) time.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(1);

/// The tower layer's replay bound; the over-bound column sends 40 bytes past it.
const BODY_LIMIT: usize = 16;

/// The key of the keyed POST.
const KEY: &str = "fault-matrix-17";

/// What the failing body source's error says, to find it in the caller's error.
const SOURCE_FAILED: &str = "the body's source failed after its first chunk";

/// How long (real time) the server may take to see every connection end after the call: a
/// safety net only.
const SETTLE: Duration = Duration::from_secs(15);

// ---------------------------------------------------------------------------------------------
// The table.

/// The columns: what is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// GET, no body.
    Get,
    /// PUT `{"qty":2}`.
    Put,
    /// POST `amount=10`.
    Post,
    /// POST `amount=10` with `Idempotency-Key: fault-matrix-17`.
    KeyedPost,
    /// PUT with a body over the replay bound: 40 bytes over tower's `body_limit(16)`. reqwest has
    /// no bound (a `Bytes` body is always copied whole), so there it is a large `Bytes` body,
    /// 64 KiB + 1 (past the tower layer's default bound).
    OverBound,
    /// PUT of a stream of three chunks, `a=1&`, `b=2&`, `c=3`: no length known in advance.
    Streamed,
    /// PUT of a stream that yields `amount=10`, then an `io::Error`.
    FailingSource,
}

/// The front end under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Front {
    /// `HttpRetryLayer` over hyper-util's legacy `Client`.
    Tower,
    /// `RetryMiddleware` in a `reqwest_middleware` client.
    Reqwest,
}

/// What the caller gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// A response with this status (and the whole body the server sent).
    Status(u16),
    /// An error.
    Error,
    /// An error naming the body source's failure.
    SourceError,
}

/// The SPEC's rules ("Integrations": `tower`, `reqwest-middleware`) that decide the cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    Answered,
    EarlyAnswer,
    Unavailable,
    Unknown,
    UnknownPost,
    Refused,
    OverBound,
    NoBound,
    StreamReplayed,
    StreamOnce,
    SourceFails,
}

/// The rules in the order the legend lists them.
const RULES: [Rule; 11] = [
    Rule::Answered,
    Rule::EarlyAnswer,
    Rule::Unavailable,
    Rule::Unknown,
    Rule::UnknownPost,
    Rule::Refused,
    Rule::OverBound,
    Rule::NoBound,
    Rule::StreamReplayed,
    Rule::StreamOnce,
    Rule::SourceFails,
];

impl Rule {
    fn letter(self) -> char {
        match self {
            Rule::Answered => 'A',
            Rule::EarlyAnswer => 'E',
            Rule::Unavailable => 'T',
            Rule::Unknown => 'I',
            Rule::UnknownPost => 'P',
            Rule::Refused => 'R',
            Rule::OverBound => 'B',
            Rule::NoBound => 'N',
            Rule::StreamReplayed => 'S',
            Rule::StreamOnce => 'O',
            Rule::SourceFails => 'F',
        }
    }

    fn text(self) -> &'static str {
        match self {
            Rule::Answered => {
                "an answer ends the call: sent once, and the caller reads the whole answer, also \
                 one that arrives in slow pieces"
            }
            Rule::EarlyAnswer => {
                "an answer sent before the body was read is the answer: sent once; the server \
                 read the head only (the whole request for a GET)"
            }
            Rule::Unavailable => {
                "a 503 is transient (not processed): retried for every request that can be sent \
                 again, 3 attempts; the caller gets the last 503"
            }
            Rule::Unknown => {
                "a reset, a close, half an answer or a timeout after the request may have been \
                 written is an unknown outcome: retried (3 attempts) for GET, PUT and a POST \
                 with an `Idempotency-Key`; the caller gets the error"
            }
            Rule::UnknownPost => {
                "the same unknown outcome on a plain POST: sent exactly once; the caller gets \
                 the error"
            }
            Rule::Refused => {
                "a refused connection provably sent nothing: transient for every method and \
                 every body (none was read yet), 3 attempts, nothing received"
            }
            Rule::OverBound => {
                "a body over the replay bound (`body_limit(16)`, 40 bytes sent) is sent once \
                 and never retried, whatever happens to it"
            }
            Rule::NoBound => {
                "reqwest has no replay bound: `try_clone()` copies a `Bytes` body of any size, \
                 so it is retried as a PUT is"
            }
            Rule::StreamReplayed => {
                "a streamed body (unknown length) within the bound replays whole, chunked on \
                 every attempt, and is retried as a PUT is"
            }
            Rule::StreamOnce => {
                "`try_clone()` refuses a streamed body: sent once (not retried, not even when \
                 refused), its one attempt still ended by `attempt_timeout`"
            }
            Rule::SourceFails => {
                "a body whose source fails (`amount=10`, then an `io::Error`) is never \
                 replayed: the call fails with the source's error, and the server never \
                 receives a complete request"
            }
        }
    }
}

/// One front end's expectation for a cell.
#[derive(Clone, Copy, Debug)]
struct Expect {
    /// Calls the front end makes to the client below it.
    attempts: usize,
    /// Requests the server receives complete.
    complete: usize,
    outcome: Outcome,
    rule: Rule,
}

/// A cell: a server behaviour and a kind of request, and what each front end must do.
#[derive(Clone, Copy, Debug)]
struct Cell {
    behaviour: Behaviour,
    kind: Kind,
    tower: Expect,
    reqwest: Expect,
}

impl Cell {
    fn expect(&self, front: Front) -> Expect {
        match front {
            Front::Tower => self.tower,
            Front::Reqwest => self.reqwest,
        }
    }
}

const fn x(attempts: usize, complete: usize, outcome: Outcome, rule: Rule) -> Expect {
    Expect {
        attempts,
        complete,
        outcome,
        rule,
    }
}

/// A cell where both front ends must behave alike.
const fn both(behaviour: Behaviour, kind: Kind, expect: Expect) -> Cell {
    Cell {
        behaviour,
        kind,
        tower: expect,
        reqwest: expect,
    }
}

/// A cell where the front ends differ (the body columns: reqwest has no replay bound, and sends
/// a stream once).
const fn split(behaviour: Behaviour, kind: Kind, tower: Expect, reqwest: Expect) -> Cell {
    Cell {
        behaviour,
        kind,
        tower,
        reqwest,
    }
}

const OK: Outcome = Outcome::Status(200);
const BUSY: Outcome = Outcome::Status(503);
const ERROR: Outcome = Outcome::Error;
const SOURCE: Outcome = Outcome::SourceError;

use Behaviour::{
    Answer, Close, EarlyAnswer, HalfHead, Hang, Refused, ResetAfterBody, ResetBeforeBody, SlowBody,
    Unavailable,
};
use Kind::{FailingSource, Get, KeyedPost, OverBound, Post, Put, Streamed};

/// The matrix: (behaviour, kind) → attempts, complete receipts, outcome, rule; per front end.
#[rustfmt::skip]
const MATRIX: [Cell; 70] = [
    // The server answers: every kind is sent once.
    both(Answer, Get,           x(1, 1, OK, Rule::Answered)),
    both(Answer, Put,           x(1, 1, OK, Rule::Answered)),
    both(Answer, Post,          x(1, 1, OK, Rule::Answered)),
    both(Answer, KeyedPost,     x(1, 1, OK, Rule::Answered)),
    both(Answer, OverBound,     x(1, 1, OK, Rule::Answered)),
    both(Answer, Streamed,      x(1, 1, OK, Rule::Answered)),
    both(Answer, FailingSource, x(1, 0, SOURCE, Rule::SourceFails)),
    // 503: transient, so retried for every kind that can be sent again.
    both(Unavailable, Get,           x(3, 3, BUSY, Rule::Unavailable)),
    both(Unavailable, Put,           x(3, 3, BUSY, Rule::Unavailable)),
    both(Unavailable, Post,          x(3, 3, BUSY, Rule::Unavailable)),
    both(Unavailable, KeyedPost,     x(3, 3, BUSY, Rule::Unavailable)),
    split(Unavailable, OverBound,    x(1, 1, BUSY, Rule::OverBound),
                                     x(3, 3, BUSY, Rule::NoBound)),
    split(Unavailable, Streamed,     x(3, 3, BUSY, Rule::StreamReplayed),
                                     x(1, 1, BUSY, Rule::StreamOnce)),
    both(Unavailable, FailingSource, x(1, 0, SOURCE, Rule::SourceFails)),
    // The head was read (a GET's whole request), then an RST: unknown, idempotent-only.
    both(ResetBeforeBody, Get,           x(3, 3, ERROR, Rule::Unknown)),
    both(ResetBeforeBody, Put,           x(3, 0, ERROR, Rule::Unknown)),
    both(ResetBeforeBody, Post,          x(1, 0, ERROR, Rule::UnknownPost)),
    both(ResetBeforeBody, KeyedPost,     x(3, 0, ERROR, Rule::Unknown)),
    split(ResetBeforeBody, OverBound,    x(1, 0, ERROR, Rule::OverBound),
                                         x(3, 0, ERROR, Rule::NoBound)),
    split(ResetBeforeBody, Streamed,     x(3, 0, ERROR, Rule::StreamReplayed),
                                         x(1, 0, ERROR, Rule::StreamOnce)),
    both(ResetBeforeBody, FailingSource, x(1, 0, SOURCE, Rule::SourceFails)),
    // The whole request was read, then an RST: unknown, idempotent-only.
    both(ResetAfterBody, Get,           x(3, 3, ERROR, Rule::Unknown)),
    both(ResetAfterBody, Put,           x(3, 3, ERROR, Rule::Unknown)),
    both(ResetAfterBody, Post,          x(1, 1, ERROR, Rule::UnknownPost)),
    both(ResetAfterBody, KeyedPost,     x(3, 3, ERROR, Rule::Unknown)),
    split(ResetAfterBody, OverBound,    x(1, 1, ERROR, Rule::OverBound),
                                        x(3, 3, ERROR, Rule::NoBound)),
    split(ResetAfterBody, Streamed,     x(3, 3, ERROR, Rule::StreamReplayed),
                                        x(1, 1, ERROR, Rule::StreamOnce)),
    both(ResetAfterBody, FailingSource, x(1, 0, SOURCE, Rule::SourceFails)),
    // Half a response head, then an RST: unknown, idempotent-only.
    both(HalfHead, Get,           x(3, 3, ERROR, Rule::Unknown)),
    both(HalfHead, Put,           x(3, 3, ERROR, Rule::Unknown)),
    both(HalfHead, Post,          x(1, 1, ERROR, Rule::UnknownPost)),
    both(HalfHead, KeyedPost,     x(3, 3, ERROR, Rule::Unknown)),
    split(HalfHead, OverBound,    x(1, 1, ERROR, Rule::OverBound),
                                  x(3, 3, ERROR, Rule::NoBound)),
    split(HalfHead, Streamed,     x(3, 3, ERROR, Rule::StreamReplayed),
                                  x(1, 1, ERROR, Rule::StreamOnce)),
    both(HalfHead, FailingSource, x(1, 0, SOURCE, Rule::SourceFails)),
    // The whole request was read, then a FIN and no answer: unknown, idempotent-only.
    both(Close, Get,           x(3, 3, ERROR, Rule::Unknown)),
    both(Close, Put,           x(3, 3, ERROR, Rule::Unknown)),
    both(Close, Post,          x(1, 1, ERROR, Rule::UnknownPost)),
    both(Close, KeyedPost,     x(3, 3, ERROR, Rule::Unknown)),
    split(Close, OverBound,    x(1, 1, ERROR, Rule::OverBound),
                               x(3, 3, ERROR, Rule::NoBound)),
    split(Close, Streamed,     x(3, 3, ERROR, Rule::StreamReplayed),
                               x(1, 1, ERROR, Rule::StreamOnce)),
    both(Close, FailingSource, x(1, 0, SOURCE, Rule::SourceFails)),
    // The whole request was read, then silence past `attempt_timeout`: unknown, idempotent-only.
    both(Hang, Get,           x(3, 3, ERROR, Rule::Unknown)),
    both(Hang, Put,           x(3, 3, ERROR, Rule::Unknown)),
    both(Hang, Post,          x(1, 1, ERROR, Rule::UnknownPost)),
    both(Hang, KeyedPost,     x(3, 3, ERROR, Rule::Unknown)),
    split(Hang, OverBound,    x(1, 1, ERROR, Rule::OverBound),
                              x(3, 3, ERROR, Rule::NoBound)),
    split(Hang, Streamed,     x(3, 3, ERROR, Rule::StreamReplayed),
                              x(1, 1, ERROR, Rule::StreamOnce)),
    both(Hang, FailingSource, x(1, 0, SOURCE, Rule::SourceFails)),
    // 200 after the head, the body unread: an answer.
    both(EarlyAnswer, Get,           x(1, 1, OK, Rule::EarlyAnswer)),
    both(EarlyAnswer, Put,           x(1, 0, OK, Rule::EarlyAnswer)),
    both(EarlyAnswer, Post,          x(1, 0, OK, Rule::EarlyAnswer)),
    both(EarlyAnswer, KeyedPost,     x(1, 0, OK, Rule::EarlyAnswer)),
    both(EarlyAnswer, OverBound,     x(1, 0, OK, Rule::EarlyAnswer)),
    both(EarlyAnswer, Streamed,      x(1, 0, OK, Rule::EarlyAnswer)),
    both(EarlyAnswer, FailingSource, x(1, 0, SOURCE, Rule::SourceFails)),
    // 200 whose body comes in slow pieces: an answer, read whole.
    both(SlowBody, Get,           x(1, 1, OK, Rule::Answered)),
    both(SlowBody, Put,           x(1, 1, OK, Rule::Answered)),
    both(SlowBody, Post,          x(1, 1, OK, Rule::Answered)),
    both(SlowBody, KeyedPost,     x(1, 1, OK, Rule::Answered)),
    both(SlowBody, OverBound,     x(1, 1, OK, Rule::Answered)),
    both(SlowBody, Streamed,      x(1, 1, OK, Rule::Answered)),
    both(SlowBody, FailingSource, x(1, 0, SOURCE, Rule::SourceFails)),
    // Nothing listens: nothing was sent, transient for every method.
    both(Refused, Get,            x(3, 0, ERROR, Rule::Refused)),
    both(Refused, Put,            x(3, 0, ERROR, Rule::Refused)),
    both(Refused, Post,           x(3, 0, ERROR, Rule::Refused)),
    both(Refused, KeyedPost,      x(3, 0, ERROR, Rule::Refused)),
    split(Refused, OverBound,     x(3, 0, ERROR, Rule::Refused),
                                  x(3, 0, ERROR, Rule::Refused)),
    split(Refused, Streamed,      x(3, 0, ERROR, Rule::Refused),
                                  x(1, 0, ERROR, Rule::StreamOnce)),
    split(Refused, FailingSource, x(3, 0, ERROR, Rule::Refused),
                                  x(1, 0, ERROR, Rule::StreamOnce)),
];

/// The rows and columns in table order.
const BEHAVIOURS: [Behaviour; 10] = [
    Answer,
    Unavailable,
    ResetBeforeBody,
    ResetAfterBody,
    HalfHead,
    Close,
    Hang,
    EarlyAnswer,
    SlowBody,
    Refused,
];
const KINDS: [Kind; 7] = [
    Get,
    Put,
    Post,
    KeyedPost,
    OverBound,
    Streamed,
    FailingSource,
];

fn cell(behaviour: Behaviour, kind: Kind) -> &'static Cell {
    let mut cells = MATRIX
        .iter()
        .filter(|c| c.behaviour == behaviour && c.kind == kind);
    let found = cells.next().expect("every (behaviour, kind) has a cell");
    assert!(cells.next().is_none(), "one cell per (behaviour, kind)");
    found
}

// ---------------------------------------------------------------------------------------------
// What each kind sends, and what the server must receive.

impl Kind {
    fn method(self) -> &'static str {
        match self {
            Get => "GET",
            Post | KeyedPost => "POST",
            Put | OverBound | Streamed | FailingSource => "PUT",
        }
    }

    fn key(self) -> Option<&'static str> {
        (self == KeyedPost).then_some(KEY)
    }

    /// The whole body: what a request received complete must carry. `None` for the failing
    /// source, which never produces a whole body.
    fn body(self, front: Front) -> Option<Vec<u8>> {
        let over = match front {
            Front::Tower => BODY_LIMIT + 24,
            Front::Reqwest => 64 * 1024 + 1,
        };
        match self {
            Get => Some(Vec::new()),
            Put => Some(br#"{"qty":2}"#.to_vec()),
            Post | KeyedPost => Some(b"amount=10".to_vec()),
            OverBound => Some((0..over).map(|i| b'a' + (i % 26) as u8).collect()),
            Streamed => Some(b"a=1&b=2&c=3".to_vec()),
            FailingSource => None,
        }
    }

    /// The chunks of a streamed body.
    fn chunks(self) -> Option<Vec<io::Result<Bytes>>> {
        match self {
            Streamed => Some(vec![
                Ok(Bytes::from_static(b"a=1&")),
                Ok(Bytes::from_static(b"b=2&")),
                Ok(Bytes::from_static(b"c=3")),
            ]),
            FailingSource => Some(vec![
                Ok(Bytes::from_static(b"amount=10")),
                Err(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    SOURCE_FAILED,
                )),
            ]),
            _ => None,
        }
    }

    /// How the original request frames its body (what every attempt must repeat).
    fn framing(self, front: Front) -> Framing {
        match self {
            Get => Framing::NoBody,
            Streamed | FailingSource => Framing::Chunked,
            _ => Framing::Length(self.body(front).unwrap().len() as u64),
        }
    }

    fn label(self, front: Front) -> &'static str {
        match (self, front) {
            (Get, _) => "GET",
            (Put, _) => "PUT",
            (Post, _) => "POST",
            (KeyedPost, _) => "POST + `Idempotency-Key`",
            (OverBound, Front::Tower) => "PUT, 40 B (bound 16 B)",
            (OverBound, Front::Reqwest) => "PUT, 64 KiB + 1 B `Bytes`",
            (Streamed, _) => "streamed PUT",
            (FailingSource, _) => "PUT, failing source",
        }
    }
}

fn behaviour_label(behaviour: Behaviour) -> &'static str {
    match behaviour {
        Answer => "answer",
        Unavailable => "503",
        ResetBeforeBody => "reset before reading the body",
        ResetAfterBody => "reset after reading the body",
        HalfHead => "half a head, then reset",
        Close => "close without answering",
        Hang => "hang past `attempt_timeout`",
        EarlyAnswer => "answer before reading the body",
        SlowBody => "slow body",
        Refused => "refused (nothing listening)",
    }
}

impl Outcome {
    fn label(self) -> String {
        match self {
            Outcome::Status(status) => status.to_string(),
            Outcome::Error => "error".to_owned(),
            Outcome::SourceError => "source's error".to_owned(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Keeping the paused clock still while the real server works.

/// Counts a front end's attempts (its calls to the client below it) and holds the paused clock
/// still while an attempt waits on the server.
#[derive(Clone)]
struct Watch {
    attempts: Arc<AtomicUsize>,
    /// The server's count of requests it read whole and now hangs on.
    parked: Arc<AtomicUsize>,
}

impl Watch {
    fn new(parked: Option<Arc<AtomicUsize>>) -> Watch {
        Watch {
            attempts: Arc::default(),
            parked: parked.unwrap_or_default(),
        }
    }

    fn attempts(&self) -> usize {
        self.attempts.load(Ordering::SeqCst)
    }

    /// One attempt, counted. While it is pending and the server has not parked a new request,
    /// the task wakes itself at once, so the runtime is never idle and the paused clock does not
    /// jump (to an attempt timeout, say) while the real server is still reading. Once the
    /// server hangs on the request, or after the safety limit, the attempt waits as any other.
    fn hold<F: Future>(self, attempt: F) -> impl Future<Output = F::Output> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let parked_before = self.parked.load(Ordering::SeqCst);
        let until = Instant::now() + scripted::SAFETY;
        let mut attempt = Box::pin(attempt);
        poll_fn(move |cx| {
            if let Poll::Ready(out) = attempt.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            if self.parked.load(Ordering::SeqCst) == parked_before && Instant::now() < until {
                cx.waker().wake_by_ref();
            }
            Poll::Pending
        })
    }
}

/// A pass-through service between `HttpRetryLayer` and the hyper client: it only counts the
/// attempts and holds the clock ([`Watch::hold`]).
#[derive(Clone)]
struct Gate<S> {
    inner: S,
    watch: Watch,
}

impl<S: Service<R>, R> Service<R> for Gate<S>
where
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        Box::pin(self.watch.clone().hold(self.inner.call(request)))
    }
}

/// One attempt below `RetryMiddleware`, as a `reqwest_middleware` closure returns it.
type ReqwestAttempt<'a> =
    Pin<Box<dyn Future<Output = reqwest_middleware::Result<reqwest::Response>> + Send + 'a>>;

/// The same for reqwest: a middleware after `RetryMiddleware`, so it sees each attempt.
fn gate(
    watch: Watch,
) -> impl for<'a> Fn(
    reqwest::Request,
    &'a mut http::Extensions,
    reqwest_middleware::Next<'a>,
) -> ReqwestAttempt<'a>
+ Send
+ Sync
+ 'static {
    move |request, extensions, next| Box::pin(watch.clone().hold(next.run(request, extensions)))
}

// ---------------------------------------------------------------------------------------------
// Running one cell.

/// What the caller got.
#[derive(Debug)]
enum Got {
    /// A response: its status and its body as read (or the error reading it).
    Status(u16, Result<Vec<u8>, String>),
    /// An error: its chain, and whether it names the body source's failure.
    Error { chain: String, names_source: bool },
}

impl Got {
    fn error(error: &(dyn StdError + 'static)) -> Got {
        let mut links = Vec::new();
        let mut current = Some(error);
        while let Some(e) = current {
            links.push(e.to_string());
            current = e.source();
        }
        Got::Error {
            names_source: links.iter().any(|link| link.contains(SOURCE_FAILED)),
            chain: links.join(": "),
        }
    }
}

impl std::fmt::Display for Got {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Got::Status(status, Ok(body)) => {
                write!(f, "{status} {:?}", String::from_utf8_lossy(body))
            }
            Got::Status(status, Err(e)) => write!(f, "{status}, then reading its body: {e}"),
            Got::Error { chain, .. } => write!(f, "error: {chain}"),
        }
    }
}

/// Everything one cell produced.
struct Observed {
    attempts: usize,
    /// The retry delays the loop recorded (never slept).
    waits: usize,
    got: Got,
    seen: Seen,
}

/// A server doing `behaviour`, or none for a refused port, and the address to call.
fn server_for(behaviour: Behaviour) -> (Option<Server>, std::net::SocketAddr) {
    if behaviour == Refused {
        (None, scripted::refused_addr())
    } else {
        let server = Server::start(behaviour);
        let addr = server.addr();
        (Some(server), addr)
    }
}

/// Wait (on a blocking thread, so the runtime can still close the client's connections) until
/// the server has read everything the client wrote, and take what it saw.
async fn settle(server: Option<Server>) -> Seen {
    match server {
        Some(server) => tokio::task::spawn_blocking(move || server.finish(SETTLE))
            .await
            .unwrap(),
        None => Seen {
            settled: true,
            ..Seen::default()
        },
    }
}

type TowerBody = BoxBody<Bytes, io::Error>;

fn tower_request(kind: Kind, uri: String) -> Request<TowerBody> {
    let body = match kind.chunks() {
        Some(chunks) => {
            let frames = stream::iter(chunks).map(|chunk| chunk.map(Frame::data));
            BodyExt::boxed(StreamBody::new(frames))
        }
        None if kind == Get => Empty::new().map_err(|never| match never {}).boxed(),
        None => Full::new(Bytes::from(kind.body(Front::Tower).unwrap()))
            .map_err(|never| match never {})
            .boxed(),
    };
    let mut request = Request::builder().method(kind.method()).uri(uri);
    if let Some(key) = kind.key() {
        request = request.header("idempotency-key", key);
    }
    request.body(body).unwrap()
}

async fn run_tower(cell: &Cell) -> Observed {
    let (server, addr) = server_for(cell.behaviour);
    let watch = Watch::new(server.as_ref().map(Server::parked));
    let client: Client<HttpConnector, ReplayBody<TowerBody>> =
        Client::builder(TokioExecutor::new()).build_http();
    let mut service = HttpRetryLayer::new(policy())
        .body_limit(BODY_LIMIT)
        .attempt_timeout(ATTEMPT_TIMEOUT)
        .layer(Gate {
            inner: client,
            watch: watch.clone(),
        });
    let request = tower_request(cell.kind, format!("http://{addr}/fault"));
    let (result, waits) = testing::record_sleeps_async(async {
        poll_fn(|cx| service.poll_ready(cx)).await?;
        service.call(request).await
    })
    .await;
    let got = match result {
        Ok(response) => {
            let status = response.status().as_u16();
            let body = response.into_body().collect().await;
            Got::Status(
                status,
                body.map(|b| b.to_bytes().to_vec())
                    .map_err(|e| e.to_string()),
            )
        }
        Err(error) => Got::error(&*error),
    };
    drop(service);
    Observed {
        attempts: watch.attempts(),
        waits: waits.len(),
        got,
        seen: settle(server).await,
    }
}

async fn run_reqwest(cell: &Cell) -> Observed {
    let (server, addr) = server_for(cell.behaviour);
    let watch = Watch::new(server.as_ref().map(Server::parked));
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(policy()).attempt_timeout(ATTEMPT_TIMEOUT))
        .with(gate(watch.clone()))
        .build();
    let kind = cell.kind;
    let method = reqwest::Method::from_bytes(kind.method().as_bytes()).unwrap();
    let mut request = client.request(method, format!("http://{addr}/fault"));
    if let Some(key) = kind.key() {
        request = request.header("idempotency-key", key);
    }
    request = match (kind.chunks(), kind) {
        (Some(chunks), _) => request.body(reqwest::Body::wrap_stream(stream::iter(chunks))),
        (None, Get) => request,
        (None, _) => request.body(kind.body(Front::Reqwest).unwrap()),
    };
    let (result, waits) = testing::record_sleeps_async(request.send()).await;
    let got = match result {
        Ok(response) => {
            let status = response.status().as_u16();
            let body = response.bytes().await;
            Got::Status(status, body.map(|b| b.to_vec()).map_err(|e| e.to_string()))
        }
        Err(error) => Got::error(&error),
    };
    drop(client);
    Observed {
        attempts: watch.attempts(),
        waits: waits.len(),
        got,
        seen: settle(server).await,
    }
}

// ---------------------------------------------------------------------------------------------
// Checking a cell.

fn preview(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(24)]).into_owned();
    if body.len() > 24 {
        format!("{text:?}… ({} bytes)", body.len())
    } else {
        format!("{text:?}")
    }
}

/// Everything wrong with a cell's run, one sentence each.
fn check(cell: &Cell, front: Front, observed: &Observed) -> Vec<String> {
    let expect = cell.expect(front);
    let kind = cell.kind;
    let receipts = &observed.seen.receipts;
    let complete = receipts.iter().filter(|r| r.complete).count();
    let mut problems = Vec::new();
    if observed.attempts != expect.attempts {
        problems.push(format!(
            "{} attempts, expected {}",
            observed.attempts, expect.attempts
        ));
    }
    if complete != expect.complete {
        problems.push(format!(
            "the server received {complete} complete requests, expected {}",
            expect.complete
        ));
    }
    if receipts.len() > observed.attempts {
        problems.push(format!(
            "the server read {} request heads for {} attempts: the client below the front end \
             repeated a request by itself",
            receipts.len(),
            observed.attempts
        ));
    }
    let framing = kind.framing(front);
    for (n, receipt) in receipts.iter().enumerate().map(|(i, r)| (i + 1, r)) {
        if receipt.method != kind.method() {
            problems.push(format!("request {n} was a {}", receipt.method));
        }
        if receipt.key.as_deref() != kind.key() {
            problems.push(format!("request {n} carried the key {:?}", receipt.key));
        }
        if receipt.framing != framing {
            problems.push(format!(
                "request {n} was framed `{}`, the original `{framing}`",
                receipt.framing
            ));
        }
        if receipt.complete {
            match kind.body(front) {
                Some(body) if receipt.body == body => {}
                Some(body) => problems.push(format!(
                    "request {n} arrived complete with {}, not the {} bytes sent",
                    preview(&receipt.body),
                    body.len()
                )),
                None => problems.push(format!(
                    "request {n} arrived complete with {}, a body its source never finished",
                    preview(&receipt.body)
                )),
            }
        }
    }
    let outcome_ok = match (expect.outcome, &observed.got) {
        (Outcome::Status(status), Got::Status(got, body)) if status == *got => {
            let reply = cell.behaviour.reply().unwrap_or_default();
            if body.as_deref().ok() != Some(reply) {
                problems.push(format!(
                    "the caller read the body {}, the server sent {}",
                    match body {
                        Ok(body) => preview(body),
                        Err(e) => format!("as an error ({e})"),
                    },
                    preview(reply)
                ));
            }
            true
        }
        (Outcome::Error, Got::Error { .. }) => true,
        (Outcome::SourceError, Got::Error { names_source, .. }) => *names_source,
        _ => false,
    };
    if !outcome_ok {
        problems.push(format!(
            "the caller got {}, expected {}",
            observed.got,
            expect.outcome.label()
        ));
    }
    if observed.seen.hangs_expired > 0 {
        problems.push(format!(
            "{} hung attempt(s) ended only by the server's own {:?} limit: `attempt_timeout` \
             never cut them off",
            observed.seen.hangs_expired,
            scripted::SAFETY
        ));
    }
    if !observed.seen.settled {
        problems.push(format!(
            "the server still had connections open {SETTLE:?} after the call"
        ));
    }
    problems
}

fn describe(observed: &Observed) -> String {
    let receipts = &observed.seen.receipts;
    let complete = receipts.iter().filter(|r| r.complete).count();
    let framings: Vec<String> = receipts.iter().map(|r| r.framing.to_string()).collect();
    format!(
        "{} attempts ({} waits), {complete} complete of {} heads read on {} connections [{}]; \
         caller got {}",
        observed.attempts,
        observed.waits,
        receipts.len(),
        observed.seen.connections,
        framings.join(", "),
        observed.got
    )
}

async fn run_matrix(front: Front) {
    for behaviour in BEHAVIOURS {
        for kind in KINDS {
            cell(behaviour, kind);
        }
    }
    let mut lines = Vec::new();
    let mut failures = Vec::new();
    for cell in &MATRIX {
        let observed = match front {
            Front::Tower => run_tower(cell).await,
            Front::Reqwest => run_reqwest(cell).await,
        };
        let problems = check(cell, front, &observed);
        let expect = cell.expect(front);
        let name = format!(
            "{} × {}",
            behaviour_label(cell.behaviour),
            cell.kind.label(front)
        );
        lines.push(format!(
            "{} {name}: {}",
            if problems.is_empty() { "ok  " } else { "FAIL" },
            describe(&observed)
        ));
        if !problems.is_empty() {
            failures.push(format!(
                "{name}\n    rule ({}): {}\n    expected: {} attempts, {} complete, {}\n    \
                 got:      {}\n{}",
                expect.rule.letter(),
                expect.rule.text(),
                expect.attempts,
                expect.complete,
                expect.outcome.label(),
                describe(&observed),
                problems
                    .iter()
                    .map(|p| format!("    - {p}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ));
        }
    }
    println!("{front:?} fault matrix:\n{}", lines.join("\n"));
    assert!(
        failures.is_empty(),
        "{} of {} cells of the {front:?} fault matrix fail:\n\n{}\n",
        failures.len(),
        MATRIX.len(),
        failures.join("\n\n")
    );
}

#[tokio::test(start_paused = true)]
async fn http_retry_layer_over_hyper_under_every_fault() {
    run_matrix(Front::Tower).await;
}

#[tokio::test(start_paused = true)]
async fn retry_middleware_over_reqwest_under_every_fault() {
    run_matrix(Front::Reqwest).await;
}

// ---------------------------------------------------------------------------------------------
// The table in the runtime's docs.

/// One front end's half of the matrix as the markdown its module docs carry.
fn markdown(front: Front) -> String {
    let mut out = String::from("| server does · request is |");
    for kind in KINDS {
        out += &format!(" {} |", kind.label(front));
    }
    out += "\n|---|";
    out += &"---|".repeat(KINDS.len());
    out += "\n";
    let mut used = Vec::new();
    for behaviour in BEHAVIOURS {
        out += &format!("| {} |", behaviour_label(behaviour));
        for kind in KINDS {
            let e = cell(behaviour, kind).expect(front);
            if !used.contains(&e.rule) {
                used.push(e.rule);
            }
            out += &format!(
                " {} / {} → {} ({}) |",
                e.attempts,
                e.complete,
                e.outcome.label(),
                e.rule.letter()
            );
        }
        out += "\n";
    }
    out += "\nEach cell: attempts made / requests the server received complete → what the caller \
            gets (the rule). Every request the server received complete carried the original \
            body byte for byte, framed as the original on every attempt (`content-length`, or \
            chunked for a stream).\n\n";
    for rule in RULES.iter().filter(|r| used.contains(r)) {
        out += &format!("- ({}) {}.\n", rule.letter(), rule.text());
    }
    out
}

#[test]
fn the_runtime_docs_show_this_matrix() {
    let sources = [
        (
            Front::Tower,
            "retry-runtime/src/tower.rs",
            include_str!("../../../retry-runtime/src/tower.rs"),
        ),
        (
            Front::Reqwest,
            "retry-runtime/src/reqwest_middleware.rs",
            include_str!("../../../retry-runtime/src/reqwest_middleware.rs"),
        ),
    ];
    for (front, path, source) in sources {
        let docs: String = source
            .lines()
            .take_while(|line| line.starts_with("//!"))
            .map(|line| line.strip_prefix("//! ").unwrap_or(&line[3..]))
            .map(|line| format!("{line}\n"))
            .collect();
        let table = markdown(front);
        // Compared with whitespace squashed, so that the docs may wrap the legend's lines.
        let squash = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            squash(&docs).contains(&squash(&table)),
            "the `//!` docs of {path} should show the fault matrix of tests/fault_matrix.rs, \
             under \"# Under faults\":\n\n{table}"
        );
    }
}
