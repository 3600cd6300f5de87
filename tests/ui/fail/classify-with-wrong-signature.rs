//! A `with` function of the wrong shape is a type mismatch at its path.
use retry_kit::Classify;

fn is_retryable(_: &ApiError) -> bool {
    true
}

#[derive(Debug, Classify)]
enum ApiError {
    #[classify(with = is_retryable)]
    Quota,
}

fn main() {}
