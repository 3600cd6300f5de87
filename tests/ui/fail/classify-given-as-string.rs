use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

#[retryable(classify = "my_classifier")]
fn f() -> Result<(), E> { Ok(()) }

fn main() {}
