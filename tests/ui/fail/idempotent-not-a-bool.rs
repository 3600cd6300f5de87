use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(idempotent = "yes")]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
