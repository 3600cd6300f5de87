//! `delegate` needs exactly one field to take the class from.
use retry_kit::Classify;

#[derive(Debug, Classify)]
enum ApiError {
    #[classify(delegate)]
    Unit,
    #[classify(delegate)]
    Pair(std::io::Error, std::io::Error),
    #[classify(delegate)]
    Named {},
}

#[derive(Debug, Classify)]
#[classify(delegate)]
struct Wrapper {
    io: std::io::Error,
    context: String,
}

fn main() {}
