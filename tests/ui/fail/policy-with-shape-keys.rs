use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

const P: retry_kit::RetryPolicy = retry_kit::RetryPolicy::new();

#[retryable(policy = P, attempts = 3, jitter = "none")]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
