use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(atempts = 3)]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
