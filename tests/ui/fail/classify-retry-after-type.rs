//! `retry_after` on a field that cannot be a `Duration` is reported at the field's type.
use retry_kit::Classify;

#[derive(Debug, Classify)]
#[classify(default = transient)]
enum ApiError {
    Throttled {
        #[classify(retry_after)]
        wait_secs: u64,
    },
    Busy(#[classify(retry_after)] Option<u32>),
    Header(#[classify(retry_after)] String),
}

fn main() {}
