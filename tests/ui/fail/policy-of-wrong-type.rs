use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(policy = 5u32)]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
