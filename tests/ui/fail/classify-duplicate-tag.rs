//! The same tag twice, in one attribute or across two, on a variant, an enum or a field.
use retry_kit::{Classify, ErrorClass};
use std::time::Duration;

fn by_code(_: &ApiError) -> ErrorClass {
    ErrorClass::Permanent
}

#[derive(Debug, Classify)]
#[classify(default = permanent, crate = ::retry_kit)]
#[classify(default = transient, crate = ::retry_kit)]
enum ApiError {
    #[classify(transient, transient)]
    Busy,
    #[classify(with = by_code)]
    #[classify(with = by_code)]
    Quota,
    #[classify(transient)]
    Throttled {
        #[classify(retry_after, retry_after)]
        wait: Duration,
    },
}

fn main() {}
