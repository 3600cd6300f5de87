//! Unknown tags say what is accepted where they are, and suggest the nearest valid one. A
//! variant whose tag was unreadable is not also reported as untagged; a variant with no tag at
//! all still is.
use retry_kit::Classify;
use std::time::Duration;

#[derive(Debug, Classify)]
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
    Plain,
}

#[derive(Debug, Classify)]
#[classify(defualt = transient)]
enum Defaulted {
    Untagged,
}

fn main() {}
