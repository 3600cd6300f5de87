//! Values where none is taken, and `default` / `crate` values of the wrong form.
use retry_kit::Classify;
use std::time::Duration;

#[derive(Debug, Classify)]
#[classify(default = delegate)]
enum ApiError {
    #[classify(transient = true)]
    Busy,
    #[classify(permanent)]
    Throttled {
        #[classify(retry_after(secs))]
        wait: Duration,
    },
}

#[derive(Debug, Classify)]
#[classify(default = "transient")]
enum Quoted {
    A,
}

#[derive(Debug, Classify)]
#[classify(default = transent, crate = "retry_kit")]
enum Misspelt {
    A,
}

#[derive(Debug, Classify)]
#[classify(default)]
enum NoValue {
    A,
}

fn main() {}
