//! [`FaultBody`]: the response body of a [`FaultService`](super::FaultService), the inner
//! service's body or the empty body of an injected status.

use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use std::pin::Pin;
use std::task::{Context, Poll};

pin_project! {
    /// The body of a response through a [`FaultLayer`](super::FaultLayer): the inner service's
    /// own body when the request was sent on, or an empty body when a `Status` or `RetryAfter`
    /// fault answered instead. It is a body of the inner body's `Data` and `Error`, whatever
    /// that body is (hyper's `Incoming` included: the layer does not make one up, so it needs
    /// no `Default`).
    ///
    /// ```
    /// # extern crate retry_runtime as retry_kit;
    /// use http_body_util::BodyExt;
    /// use retry_kit::faults::FaultBody;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let passed = FaultBody::passed(String::from("answer"));
    /// assert!(!passed.is_injected());
    /// assert_eq!(passed.collect().await.unwrap().to_bytes(), "answer");
    ///
    /// let injected = FaultBody::<String>::injected();
    /// assert!(injected.is_injected());
    /// assert!(injected.collect().await.unwrap().to_bytes().is_empty());
    /// # }
    /// ```
    #[derive(Debug)]
    pub struct FaultBody<B> {
        #[pin]
        inner: Inner<B>,
    }
}

pin_project! {
    #[project = InnerProj]
    #[derive(Debug)]
    enum Inner<B> {
        Passed {
            #[pin]
            body: B,
        },
        Injected,
    }
}

impl<B> FaultBody<B> {
    /// The inner service's body, passed through.
    pub fn passed(body: B) -> Self {
        FaultBody {
            inner: Inner::Passed { body },
        }
    }

    /// The empty body of an injected status.
    pub fn injected() -> Self {
        FaultBody {
            inner: Inner::Injected,
        }
    }

    /// Whether a fault answered (the body is empty and the inner service never saw the
    /// request).
    pub fn is_injected(&self) -> bool {
        matches!(self.inner, Inner::Injected)
    }

    /// The inner service's body, or `None` for an injected answer.
    pub fn into_inner(self) -> Option<B> {
        match self.inner {
            Inner::Passed { body } => Some(body),
            Inner::Injected => None,
        }
    }
}

impl<B: Body> Body for FaultBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        match self.project().inner.project() {
            InnerProj::Passed { body } => body.poll_frame(cx),
            InnerProj::Injected => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Passed { body } => body.is_end_stream(),
            Inner::Injected => true,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Passed { body } => body.size_hint(),
            Inner::Injected => SizeHint::with_exact(0),
        }
    }
}
