//! A variant takes exactly one class source; `retry_after` cannot sit beside `delegate`.
use retry_kit::{Classify, ErrorClass};

fn by_code(_: &ApiError) -> ErrorClass {
    ErrorClass::Permanent
}

#[derive(Debug, Classify)]
enum ApiError {
    #[classify(transient, permanent)]
    Busy,
    #[classify(delegate)]
    #[classify(with = by_code)]
    Io(std::io::Error),
    #[classify(delegate)]
    Open(#[classify(retry_after)] retry_kit::CircuitOpen),
}

fn main() {}
