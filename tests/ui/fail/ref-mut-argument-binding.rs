use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

#[retryable(attempts = 3)]
fn bump((ref mut n, step): (u32, u32)) -> Result<u32, Busy> {
    *n += step;
    Ok(*n)
}

fn main() {}
