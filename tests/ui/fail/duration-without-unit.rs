use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(max_delay = "30")]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
