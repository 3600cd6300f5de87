//! A request body that can be sent again: [`ReplayBody`] passes the first attempt's body through
//! while it copies it into a bounded buffer, and later attempts replay the buffer (then go on
//! reading the original where an earlier attempt stopped). Each copy is framed as the first: it
//! reports the original body's size hint (so a `Content-Length` body stays one, a chunked one
//! stays chunked) and ends with the original's trailers.
//!
//! A replay is whole or it is nothing. A body longer than the bound is sent once: the copy
//! stops, and the layer does not retry the request. A body whose source fails is never replayed:
//! the attempt that met the failure passes it on, and every copy after it fails too, rather
//! than sending what was read before the failure as if it were the whole body.

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

/// The error type of an [`HttpRetryService`](super::HttpRetryService) and of a [`ReplayBody`]:
/// the inner service's (or the body source's) error, boxed.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The state every copy of one request's body shares.
struct Shared<B> {
    /// The original body, read by whichever copy gets past what has been read so far.
    source: Option<B>,
    /// The source's size hint before anything was read: every copy reports it.
    hint: SizeHint,
    /// What has been read from the source so far, while it fits the bound (emptied when it
    /// does not).
    chunks: Vec<Bytes>,
    /// How many data frames have been read from the source, buffered or not.
    read: usize,
    /// How many bytes have been read from the source.
    bytes: u64,
    limit: usize,
    /// The source ended (with its data, or with trailers); `trailers` are its trailers.
    complete: bool,
    trailers: Option<HeaderMap>,
    /// The source was longer than the bound: it cannot be replayed.
    overflowed: bool,
    /// The source failed: no copy can be completed.
    failed: bool,
}

impl<B> Shared<B> {
    fn replayable(&self) -> bool {
        !self.overflowed && !self.failed
    }
}

/// One copy of a request's body for one attempt: the first copy streams the original and keeps
/// what it sends (up to a bound), and [`replay`](Self::replay) makes the next attempt's copy.
/// Its error is the source's, boxed, or [`BodyNotReplayable`] for a copy that cannot be
/// completed (the source failed, or outgrew the bound while another copy read it).
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use http_body_util::BodyExt;
/// use retry_kit::tower::ReplayBody;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let first = ReplayBody::new(String::from("order 17"), 1024);
/// let again = first.replay().expect("fits the bound");
/// assert_eq!(first.collect().await.unwrap().to_bytes(), "order 17");
/// assert_eq!(again.collect().await.unwrap().to_bytes(), "order 17");
///
/// // Longer than the bound: sent whole once, then never replayed (not even truncated).
/// let mut big = ReplayBody::new(String::from("order 17"), 4);
/// assert_eq!((&mut big).collect().await.unwrap().to_bytes(), "order 17");
/// assert!(big.replay().is_none());
/// # }
/// ```
pub struct ReplayBody<B> {
    /// `None` for a body that had ended before it was sent (a `GET`'s): nothing to buffer or
    /// share, so no allocation.
    shared: Option<Arc<Mutex<Shared<B>>>>,
    /// The next data frame of the source this copy sends (an index into `chunks` while it is
    /// behind the source, equal to `read` when it is the one reading the source).
    position: usize,
    /// How many bytes this copy has sent, for its size hint.
    sent: u64,
    trailers_sent: bool,
}

impl<B> ReplayBody<B> {
    /// The first copy of `body`, buffering at most `limit` bytes for later copies.
    pub fn new(body: B, limit: usize) -> Self
    where
        B: Body,
    {
        if body.is_end_stream() {
            return ReplayBody {
                shared: None,
                position: 0,
                sent: 0,
                trailers_sent: false,
            };
        }
        ReplayBody {
            shared: Some(Arc::new(Mutex::new(Shared {
                hint: body.size_hint(),
                source: Some(body),
                chunks: Vec::new(),
                read: 0,
                bytes: 0,
                limit,
                complete: false,
                trailers: None,
                overflowed: false,
                failed: false,
            }))),
            position: 0,
            sent: 0,
            trailers_sent: false,
        }
    }

    /// Another copy for the next attempt, or `None` when the body went past the bound or its
    /// source failed.
    pub fn replay(&self) -> Option<Self> {
        if !self.is_replayable() {
            return None;
        }
        Some(ReplayBody {
            shared: self.shared.clone(),
            position: 0,
            sent: 0,
            trailers_sent: false,
        })
    }

    /// Whether another copy can be made: the body fit the bound and its source has not failed.
    pub fn is_replayable(&self) -> bool {
        self.lock().is_none_or(|state| state.replayable())
    }

    /// The shared state, `None` for an empty body.
    fn lock(&self) -> Option<MutexGuard<'_, Shared<B>>> {
        self.shared.as_ref().map(|shared| lock(shared))
    }
}

fn lock<B>(shared: &Mutex<Shared<B>>) -> MutexGuard<'_, Shared<B>> {
    // A panic while the lock is held can only come from the source body's `poll_frame`; the
    // buffer is consistent between frames, so a poisoned lock is still usable.
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<B> Body for ReplayBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        let Some(shared) = this.shared.clone() else {
            return Poll::Ready(None);
        };
        let mut state = lock(&shared);
        if state.failed {
            return Poll::Ready(Some(Err(Box::new(BodyNotReplayable::SourceFailed))));
        }
        if this.position < state.read {
            // Behind the source: send what an earlier copy read, if it was kept.
            let Some(chunk) = state.chunks.get(this.position).cloned() else {
                return Poll::Ready(Some(Err(Box::new(BodyNotReplayable::TooLong))));
            };
            this.position += 1;
            this.sent += chunk.len() as u64;
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        if state.complete {
            if !std::mem::replace(&mut this.trailers_sent, true) {
                if let Some(trailers) = state.trailers.clone() {
                    return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
                }
            }
            return Poll::Ready(None);
        }
        let Some(source) = state.source.as_mut() else {
            return Poll::Ready(None);
        };
        // Caught up with the source: read on from it.
        match Pin::new(source).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) => {
                    state.read += 1;
                    state.bytes += data.len() as u64;
                    this.position = state.read;
                    this.sent += data.len() as u64;
                    if !state.overflowed {
                        if state.bytes <= state.limit as u64 {
                            state.chunks.push(data.clone());
                        } else {
                            state.overflowed = true;
                            state.chunks = Vec::new();
                        }
                    }
                    Poll::Ready(Some(Ok(Frame::data(data))))
                }
                Err(frame) => {
                    // Trailers are a body's last frame: the source is done.
                    if let Some(trailers) = frame.trailers_ref() {
                        state.trailers = Some(trailers.clone());
                        state.complete = true;
                        state.source = None;
                        this.trailers_sent = true;
                    }
                    Poll::Ready(Some(Ok(frame)))
                }
            },
            Poll::Ready(None) => {
                state.complete = true;
                state.source = None;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => {
                // What was read is not the whole body, and what follows (if the source goes on)
                // would be sent without the failed part: no copy may be completed from here.
                state.failed = true;
                state.source = None;
                state.chunks = Vec::new();
                Poll::Ready(Some(Err(e.into())))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        let Some(state) = self.lock() else {
            return true;
        };
        state.complete
            && self.position == state.read
            && (self.trailers_sent || state.trailers.is_none())
    }

    fn size_hint(&self) -> SizeHint {
        let Some(state) = self.lock() else {
            return SizeHint::with_exact(0);
        };
        if state.complete && self.position == state.read {
            return SizeHint::with_exact(0);
        }
        // The original's hint, less what this copy has sent: every attempt is framed as the
        // first, even after an earlier copy learned the exact length.
        let mut hint = SizeHint::new();
        if let Some(upper) = state.hint.upper() {
            hint.set_upper(upper.saturating_sub(self.sent));
        }
        hint.set_lower(state.hint.lower().saturating_sub(self.sent));
        hint
    }
}

impl<B> fmt::Debug for ReplayBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplayBody")
            .field("position", &self.position)
            .field("sent", &self.sent)
            .finish_non_exhaustive()
    }
}

/// Why a copy of a [`ReplayBody`] could not be completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BodyNotReplayable {
    /// The body's source failed while a copy read it.
    SourceFailed,
    /// The body outgrew the replay bound while another copy read it.
    TooLong,
}

impl fmt::Display for BodyNotReplayable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BodyNotReplayable::SourceFailed => {
                "the request body's source failed, so the body cannot be sent whole"
            }
            BodyNotReplayable::TooLong => {
                "the request body outgrew the replay bound while another attempt read it"
            }
        })
    }
}

impl std::error::Error for BodyNotReplayable {}
