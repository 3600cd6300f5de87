//! A variant's wait comes from one field.
use retry_kit::Classify;
use std::time::Duration;

#[derive(Debug, Classify)]
enum ApiError {
    #[classify(transient)]
    Throttled {
        #[classify(retry_after)]
        header: Duration,
        #[classify(retry_after)]
        body: Option<Duration>,
    },
    #[classify(transient)]
    Busy(
        #[classify(retry_after)] Duration,
        #[classify(retry_after)] Duration,
        #[classify(retry_after)] Duration,
    ),
}

fn main() {}
