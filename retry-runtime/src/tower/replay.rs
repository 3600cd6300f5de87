//! A request body that can be sent again: [`ReplayBody`] passes the first attempt's body through
//! while it copies it into a bounded buffer, and later attempts replay the buffer (then go on
//! reading the original where an earlier attempt stopped). Each copy is framed as the first: it
//! reports the original body's size hint (so a `Content-Length` body stays one, a chunked one
//! stays chunked) and ends with the original's trailers.
//!
//! Copies may be read at the same time (a hedged call's attempts, or an attempt the inner
//! service still drives after the next one started). Only one copy at a time reads the source,
//! and the source wakes only the copy that polled it last; so a copy that pulls a frame (or
//! the end, or a failure) wakes every other copy that was waiting for it.
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
use std::task::{Context, Poll, Waker};

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
    /// How many copies have been made: the next copy's number.
    copies: usize,
    /// The copies waiting for the source's next frame.
    waiting: Waiting,
}

impl<B> Shared<B> {
    fn replayable(&self) -> bool {
        !self.overflowed && !self.failed
    }
}

/// The copies that found the source pending, by number, with their wakers. The source keeps
/// the waker of the copy that polled it last only, so whichever copy it wakes must wake the
/// others once it has pulled what they wait for (they then replay it from the buffer, or meet
/// the end or the failure). The first waiter is kept in place: a body sent once, whose only
/// copy waits on a slow source, allocates nothing for this.
#[derive(Default)]
struct Waiting {
    first: Option<(usize, Waker)>,
    more: Vec<(usize, Waker)>,
}

impl Waiting {
    /// Copy `copy` waits for the source, to be woken by `waker` (replacing the waker it left
    /// before, so polling again never makes the list grow).
    fn register(&mut self, copy: usize, waker: &Waker) {
        let mut slots = self.first.iter_mut().chain(self.more.iter_mut());
        if let Some((_, known)) = slots.find(|(c, _)| *c == copy) {
            known.clone_from(waker);
            return;
        }
        let entry = (copy, waker.clone());
        match self.first {
            None => self.first = Some(entry),
            Some(_) => self.more.push(entry),
        }
    }

    /// Wake every waiting copy but `copy` (which is not waiting: it is the one awake). Called
    /// on what was taken out of the shared state, once the lock is released, so that a waker
    /// which runs code at once cannot meet the lock held.
    fn wake_all_but(self, copy: usize) {
        for (waiter, waker) in self.first.into_iter().chain(self.more) {
            if waiter != copy {
                waker.wake();
            }
        }
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
    /// This copy's number among the copies of its body (0 for the first).
    copy: usize,
    /// This copy may be among the waiting: dropping it wakes the others, since the source may
    /// hold this copy's waker and no other.
    may_wait: bool,
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
                copy: 0,
                may_wait: false,
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
                copies: 1,
                waiting: Waiting::default(),
            }))),
            position: 0,
            sent: 0,
            trailers_sent: false,
            copy: 0,
            may_wait: false,
        }
    }

    /// Another copy for the next attempt, or `None` when the body went past the bound or its
    /// source failed.
    pub fn replay(&self) -> Option<Self> {
        let copy = match self.lock() {
            None => 0,
            Some(state) if !state.replayable() => return None,
            Some(mut state) => {
                state.copies += 1;
                state.copies - 1
            }
        };
        Some(ReplayBody {
            shared: self.shared.clone(),
            position: 0,
            sent: 0,
            trailers_sent: false,
            copy,
            may_wait: false,
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
        let Poll::Ready(polled) = Pin::new(source).poll_frame(cx) else {
            state.waiting.register(this.copy, cx.waker());
            this.may_wait = true;
            return Poll::Pending;
        };
        let frame = match polled {
            Some(Ok(frame)) => match frame.into_data() {
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
                    Some(Ok(Frame::data(data)))
                }
                Err(frame) => {
                    // Trailers are a body's last frame: the source is done.
                    if let Some(trailers) = frame.trailers_ref() {
                        state.trailers = Some(trailers.clone());
                        state.complete = true;
                        state.source = None;
                        this.trailers_sent = true;
                    }
                    Some(Ok(frame))
                }
            },
            None => {
                state.complete = true;
                state.source = None;
                None
            }
            Some(Err(e)) => {
                // What was read is not the whole body, and what follows (if the source goes on)
                // would be sent without the failed part: no copy may be completed from here.
                state.failed = true;
                state.source = None;
                state.chunks = Vec::new();
                Some(Err(e.into()))
            }
        };
        // The copies that waited for this frame (or the end, or the failure) can go on.
        let waiting = std::mem::take(&mut state.waiting);
        drop(state);
        this.may_wait = false;
        waiting.wake_all_but(this.copy);
        Poll::Ready(frame)
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

impl<B> Drop for ReplayBody<B> {
    fn drop(&mut self) {
        // A copy dropped while it waits (a cancelled attempt) may be the only one whose waker
        // the source holds: the others must poll the source again to be woken by it.
        if !self.may_wait {
            return;
        }
        if let Some(shared) = &self.shared {
            let waiting = std::mem::take(&mut lock(shared).waiting);
            waiting.wake_all_but(self.copy);
        }
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
