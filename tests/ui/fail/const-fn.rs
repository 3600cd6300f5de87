use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable]
const fn f() -> Result<(), E> { Ok(()) }

fn main() {}
