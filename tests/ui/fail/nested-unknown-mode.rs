use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(nested = "never")]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
