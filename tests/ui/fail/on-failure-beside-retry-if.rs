use retry_kit::{retryable, Classify, Failure};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

fn pending(done: &bool) -> bool {
    !done
}

// With `retry_if`, the records carry `Rejected<bool, Busy>`: a flagged value or an error.
fn log(_: &Failure<'_, Busy>) {}

#[retryable(attempts = 3, retry_if = pending, on_failure = log)]
fn poll() -> Result<bool, Busy> {
    Ok(true)
}

fn main() {}
