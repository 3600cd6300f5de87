#![deny(warnings, unused_qualifications)]

use retry_kit::{retryable, Classify, TimedOut};

#[derive(Debug, Classify)]
enum ReadError {
    #[classify(transient)]
    Unavailable,
    #[classify(delegate)]
    Timeout(TimedOut),
}

impl From<TimedOut> for ReadError {
    fn from(t: TimedOut) -> Self {
        ReadError::Timeout(t)
    }
}

struct Replica {
    name: String,
}

fn not_ready(n: &usize) -> bool {
    *n == 0
}

impl Replica {
    // Hedged with every key that combines with it: the future is `Send`.
    #[retryable(attempts = 4, idempotent, hedge = "20ms", attempt_timeout = "1s",
                deadline = "5s", retry_if = not_ready)]
    async fn read(&self, key: &str, mut tries: u32) -> Result<usize, ReadError> {
        tries += 1;
        if self.name.is_empty() {
            return Err(ReadError::Unavailable);
        }
        Ok(key.len() + tries as usize)
    }
}

fn assert_send<T: Send>(_: T) {}

fn main() {
    let replica = Replica { name: "a".into() };
    assert_send(replica.read("k", 0));
}
