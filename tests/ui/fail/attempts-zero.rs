use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(attempts = 0)]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
