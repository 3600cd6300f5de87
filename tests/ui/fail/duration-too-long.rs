use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(deadline = "18446744073709551616s")]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
