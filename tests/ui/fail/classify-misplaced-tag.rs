//! Keys that exist but belong elsewhere say where they go.
use retry_kit::Classify;
use std::time::Duration;

#[derive(Debug, Classify)]
#[classify(retry_after)]
enum ApiError {
    #[classify(default = permanent)]
    Busy,
    #[classify(transient, crate = ::retry_kit, retry_after)]
    Throttled {
        #[classify(transient, default = permanent)]
        wait: Duration,
    },
    #[classify(retry_after)]
    Untagged,
}

#[derive(Debug, Classify)]
#[classify(transient)]
enum MeantADefault {
    Reset,
}

#[derive(Debug, Classify)]
#[classify(default = transient)]
struct Reset;

fn main() {}
