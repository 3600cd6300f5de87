use retry_kit::{retryable, ErrorClass};

#[derive(Debug)]
struct Busy;

// Takes the error by value, not `&Busy`.
fn class_of(_: Busy) -> ErrorClass {
    ErrorClass::Transient
}

#[retryable(attempts = 3, classify = class_of)]
fn call() -> Result<(), Busy> {
    Ok(())
}

fn main() {}
