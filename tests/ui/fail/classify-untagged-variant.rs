//! Untagged variants without an enum default, and an untagged struct: each is named at its
//! identifier, all are reported at once, and the impl is still emitted (no "`Classify` is not
//! implemented" at the uses below).
use retry_kit::{Classify, ErrorClass};

#[derive(Debug, Classify)]
enum DbError {
    #[classify(transient)]
    ConnectionReset,
    Deadlock,
    UniqueViolation { constraint: String },
}

#[derive(Debug, Classify)]
struct PoolExhausted;

fn class_of<E: Classify>(error: &E) -> ErrorClass {
    error.class()
}

fn main() {
    let _ = class_of(&DbError::Deadlock);
    let _ = class_of(&PoolExhausted);
}
