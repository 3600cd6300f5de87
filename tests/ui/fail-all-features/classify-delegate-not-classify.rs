//! `delegate` to a field whose type has no `Classify` impl is reported at that type.
use retry_kit::Classify;

#[derive(Debug, Classify)]
enum ApiError {
    #[classify(delegate)]
    Message(String),
}

fn main() {}
