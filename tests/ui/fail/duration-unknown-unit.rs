use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(base = "10 fortnights")]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
