use retry_kit::{retryable, Classify};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Unavailable;

struct Cache {
    hits: u32,
}

impl Cache {
    // Concurrent attempts cannot each hold `&mut self`.
    #[retryable(attempts = 3, idempotent, hedge = "50ms")]
    async fn lookup(&mut self, key: &str) -> Result<usize, Unavailable> {
        self.hits += 1;
        Ok(key.len())
    }
}

#[retryable(attempts = 3, idempotent, hedge = "50ms")]
async fn fill(buffer: &mut Vec<u8>) -> Result<usize, Unavailable> {
    buffer.push(1);
    Ok(buffer.len())
}

fn main() {
    let mut cache = Cache { hits: 0 };
    let _ = cache.lookup("k");
    let mut buffer = Vec::new();
    let _ = fill(&mut buffer);
}
