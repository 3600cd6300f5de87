use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct E;

trait Api {
    #[retryable]
    fn call(&self) -> Result<(), E>;
}

fn main() {}
