use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(jitter = "random")]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
