use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

#[derive(Clone, Copy)]
struct Counter(u32);

impl Counter {
    #[retryable(attempts = 3)]
    fn bump(mut self) -> Result<u32, Busy> {
        self.0 += 1;
        Ok(self.0)
    }
}

fn main() {}
