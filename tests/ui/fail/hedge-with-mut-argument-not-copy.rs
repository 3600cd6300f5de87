use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Unavailable;

// Each attempt would need its own copy of the line, and hedged attempts run side by side.
#[retryable(attempts = 3, idempotent, hedge = "50ms")]
async fn send(mut line: String) -> Result<usize, Unavailable> {
    line.push('\n');
    Ok(line.len())
}

fn main() {
    let _ = send(String::new());
}
