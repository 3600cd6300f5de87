use retry_kit::retryable;

#[derive(Debug)]
struct Plain;

#[retryable]
fn f() -> Result<(), Plain> {
    Err(Plain)
}

fn main() {}
