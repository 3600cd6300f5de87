//! `with` names a function; it does not take a string, a closure, or nothing.
use retry_kit::Classify;

#[derive(Debug, Classify)]
enum ApiError {
    #[classify(with = "by_code")]
    Quoted,
    #[classify(with = |_: &ApiError| retry_kit::ErrorClass::Transient)]
    Closure,
    #[classify(with)]
    Missing,
    #[classify(with(by_code))]
    Called,
}

fn main() {}
