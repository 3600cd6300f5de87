use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(backoff = "fixed", multiplier = 3.0)]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
