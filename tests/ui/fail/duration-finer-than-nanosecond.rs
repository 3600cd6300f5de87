use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(base = "1.0000000001s")]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
