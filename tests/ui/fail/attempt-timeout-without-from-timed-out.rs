use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

#[retryable(attempt_timeout = "2s")]
async fn fetch() -> Result<(), Busy> {
    Err(Busy)
}

fn main() {
    let _ = fetch();
}
