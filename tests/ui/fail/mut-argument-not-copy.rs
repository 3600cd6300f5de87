use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

// Each attempt must start from the caller's `line`; a `String` would need a clone.
#[retryable(attempts = 3)]
fn shout(mut line: String) -> Result<String, Busy> {
    line.push('!');
    Ok(line)
}

fn main() {}
