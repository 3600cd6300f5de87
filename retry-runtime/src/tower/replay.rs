//! A request body that can be sent again: [`ReplayBody`] passes the first attempt's body through
//! while it copies it into a bounded buffer, and later attempts replay the buffer (then go on
//! reading the original where an earlier attempt stopped). A body longer than the bound is sent
//! once: the copy stops, and the layer does not retry the request — never a truncated or empty
//! replay.

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

/// The state every copy of one request's body shares.
struct Shared<B> {
    /// The original body, read by whichever copy gets past the buffer first.
    source: Option<B>,
    /// What has been read from the source so far, while it fits the bound.
    chunks: Vec<Bytes>,
    buffered: usize,
    limit: usize,
    /// The source ended; `trailers` are its trailers, if any.
    complete: bool,
    trailers: Option<HeaderMap>,
    /// The source was longer than the bound: it cannot be replayed.
    overflowed: bool,
}

/// One copy of a request's body for one attempt: the first copy streams the original and keeps
/// what it sends (up to a bound), and [`replay`](Self::replay) makes the next attempt's copy.
///
/// ```
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
    /// The next chunk of the buffer this copy sends.
    position: usize,
    /// This copy has read from the source past the buffer (it is the one streaming).
    streaming: bool,
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
                streaming: false,
                trailers_sent: false,
            };
        }
        ReplayBody {
            shared: Some(Arc::new(Mutex::new(Shared {
                source: Some(body),
                chunks: Vec::new(),
                buffered: 0,
                limit,
                complete: false,
                trailers: None,
                overflowed: false,
            }))),
            position: 0,
            streaming: false,
            trailers_sent: false,
        }
    }

    /// Another copy for the next attempt, or `None` when the body went past the bound.
    pub fn replay(&self) -> Option<Self> {
        if !self.is_replayable() {
            return None;
        }
        Some(ReplayBody {
            shared: self.shared.clone(),
            position: 0,
            streaming: false,
            trailers_sent: false,
        })
    }

    /// Whether another copy can be made.
    pub fn is_replayable(&self) -> bool {
        self.lock().is_none_or(|state| !state.overflowed)
    }

    /// The shared state, `None` for an empty body.
    fn lock(&self) -> Option<MutexGuard<'_, Shared<B>>> {
        // A panic while the lock is held can only come from the source body's `poll_frame`;
        // the buffer is consistent between frames, so a poisoned lock is still usable.
        let shared = self.shared.as_ref()?;
        Some(
            shared
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }
}

impl<B> Body for ReplayBody<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.get_mut();
        let Some(shared) = this.shared.clone() else {
            return Poll::Ready(None);
        };
        let mut state = shared.lock().unwrap_or_else(|p| p.into_inner());
        if !this.streaming && this.position < state.chunks.len() {
            let chunk = state.chunks[this.position].clone();
            this.position += 1;
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        if state.complete {
            if !this.trailers_sent {
                this.trailers_sent = true;
                if let Some(trailers) = state.trailers.clone() {
                    return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
                }
            }
            return Poll::Ready(None);
        }
        // Past the buffer: read on from the source.
        let Some(source) = state.source.as_mut() else {
            return Poll::Ready(None);
        };
        this.streaming = true;
        match Pin::new(source).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let frame = match frame.into_data() {
                    Ok(data) => {
                        if !state.overflowed && state.buffered + data.len() <= state.limit {
                            state.buffered += data.len();
                            state.chunks.push(data.clone());
                            this.position = state.chunks.len();
                        } else if !state.overflowed {
                            state.overflowed = true;
                            state.chunks = Vec::new();
                        }
                        Frame::data(data)
                    }
                    Err(frame) => {
                        if let Some(trailers) = frame.trailers_ref() {
                            state.trailers = Some(trailers.clone());
                            this.trailers_sent = true;
                        }
                        frame
                    }
                };
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) => {
                state.complete = true;
                state.source = None;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.shared.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        let Some(state) = self.lock() else {
            return SizeHint::with_exact(0);
        };
        match (&state.source, state.complete) {
            (_, true) => SizeHint::with_exact(state.buffered as u64),
            (Some(source), false) if self.position == 0 && state.chunks.is_empty() => {
                source.size_hint()
            }
            _ => SizeHint::default(),
        }
    }
}
