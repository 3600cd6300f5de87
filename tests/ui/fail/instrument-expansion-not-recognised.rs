use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

// What an unknown version of `#[tracing::instrument]` could have made of the body: its span
// variable, without the marked block `#[retryable]` knows how to wrap.
#[retryable(attempts = 3)]
fn call() -> Result<(), Busy> {
    let __tracing_attr_span = ();
    let _ = __tracing_attr_span;
    Ok(())
}

fn main() {}
