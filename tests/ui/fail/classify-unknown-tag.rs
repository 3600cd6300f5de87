//! Unknown tags say what is accepted where they are, and suggest the nearest valid one.
use retry_kit::Classify;
use std::time::Duration;

#[derive(Debug, Classify)]
#[classify(defualt = transient)]
enum ApiError {
    #[classify(transiant)]
    Busy,
    #[classify(idempotent)]
    Timeout,
    #[classify(retry)]
    Flaky,
    #[classify(permanent)]
    Throttled {
        #[classify(retry_afer)]
        wait: Duration,
    },
    #[classify(retry_kit::transient)]
    Qualified,
}

fn main() {}
