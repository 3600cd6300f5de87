use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

struct Cache {
    value: Option<String>,
}

impl Cache {
    // The body mutates `self` and returns a borrow of it: the borrow of one attempt would have
    // to outlive the next attempt's mutable borrow. A hand-written loop hits the same limit.
    #[retryable(attempts = 3)]
    fn get_or_load(&mut self) -> Result<&String, Busy> {
        if self.value.is_none() {
            self.value = Some("loaded".to_owned());
        }
        Ok(self.value.as_ref().unwrap())
    }
}

fn main() {}
