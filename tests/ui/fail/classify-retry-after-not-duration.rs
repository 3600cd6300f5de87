//! A type the derive cannot judge by its name (here a newtype) is checked by the trait bound,
//! whose message says the same thing at the same place.
use retry_kit::Classify;

#[derive(Debug)]
struct Seconds(u64);

#[derive(Debug, Classify)]
enum ApiError {
    #[classify(transient)]
    Throttled {
        #[classify(retry_after)]
        wait: Seconds,
    },
}

fn main() {}
