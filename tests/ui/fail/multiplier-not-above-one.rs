use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(multiplier = 0.5)]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
