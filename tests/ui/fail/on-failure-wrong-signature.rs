use retry_kit::{retryable, Classify, Failure};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

// The hook takes the record by value, not `&Failure<'_, Busy>`.
fn log(_: Failure<'_, Busy>) {}

#[retryable(attempts = 3, on_failure = log)]
fn call() -> Result<(), Busy> {
    Ok(())
}

fn main() {}
