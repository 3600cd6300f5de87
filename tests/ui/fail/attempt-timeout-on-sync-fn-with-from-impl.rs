// Even with `From<TimedOut>` in place, a sync attempt cannot be timed out: the error is about
// the function, at the key.
use retry_kit::{retryable, Classify, TimedOut};

#[derive(Debug, Classify)]
enum E {
    #[classify(transient)]
    Busy,
    #[classify(delegate)]
    Timeout(TimedOut),
}

impl From<TimedOut> for E {
    fn from(t: TimedOut) -> Self {
        E::Timeout(t)
    }
}

#[retryable(attempts = 2, attempt_timeout = "2s")]
fn fetch() -> Result<(), E> {
    Err(E::Busy)
}

fn main() {
    let _ = fetch();
}
