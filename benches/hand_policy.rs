//! tower's `retry` with the policy a user writes by hand, the peer of the crate's tower layers
//! in `layer.rs` and `layer_cases.rs`: three attempts, every error (and, for HTTP, every 5xx)
//! retried, the request cloned for each attempt.

use http::{Request, Response};
use std::future::{Ready, ready};
use std::io;
use tower::retry::Policy;

/// Attempts left, the first included.
#[derive(Clone)]
pub struct ThreeAttempts(pub u32);

impl ThreeAttempts {
    fn again(&mut self, failed: bool) -> Option<Ready<()>> {
        if failed && self.0 > 1 {
            self.0 -= 1;
            Some(ready(()))
        } else {
            None
        }
    }
}

impl Policy<u64, u64, io::Error> for ThreeAttempts {
    type Future = Ready<()>;

    fn retry(&mut self, _: &mut u64, result: &mut io::Result<u64>) -> Option<Self::Future> {
        self.again(result.is_err())
    }

    fn clone_request(&mut self, req: &u64) -> Option<u64> {
        Some(*req)
    }
}

impl Policy<Request<String>, Response<()>, io::Error> for ThreeAttempts {
    type Future = Ready<()>;

    fn retry(
        &mut self,
        _: &mut Request<String>,
        result: &mut io::Result<Response<()>>,
    ) -> Option<Self::Future> {
        let failed = match result {
            Ok(response) => response.status().is_server_error(),
            Err(_) => true,
        };
        self.again(failed)
    }

    fn clone_request(&mut self, req: &Request<String>) -> Option<Request<String>> {
        let mut clone = Request::new(req.body().clone());
        *clone.method_mut() = req.method().clone();
        *clone.uri_mut() = req.uri().clone();
        *clone.version_mut() = req.version();
        *clone.headers_mut() = req.headers().clone();
        Some(clone)
    }
}
