//! Keys that exist but belong elsewhere say where they go.
use retry_kit::Classify;
use std::time::Duration;

#[derive(Debug, Classify)]
#[classify(transient, retry_after)]
enum ApiError {
    #[classify(default = permanent)]
    Busy,
    #[classify(transient, crate = ::retry_kit, retry_after)]
    Throttled {
        #[classify(transient, default = permanent)]
        wait: Duration,
    },
}

#[derive(Debug, Classify)]
#[classify(default = transient)]
struct Reset;

fn main() {}
