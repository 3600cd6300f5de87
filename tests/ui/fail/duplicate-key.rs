use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(attempts = 3, base = "1s", attempts = 4)]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
