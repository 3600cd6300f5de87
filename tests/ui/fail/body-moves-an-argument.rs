use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

fn consume(_: String) {}

#[retryable]
fn f(name: String) -> Result<(), E> {
    consume(name);
    Ok(())
}

fn main() {}
