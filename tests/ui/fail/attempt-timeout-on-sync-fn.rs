use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(attempt_timeout = "1s")]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
