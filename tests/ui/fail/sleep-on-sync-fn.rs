use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

async fn nap(_: std::time::Duration) {}

#[retryable(sleep = nap)]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
