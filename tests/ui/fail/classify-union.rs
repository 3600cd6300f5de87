//! A union cannot say which field is set, so it cannot be classified by tags.
use retry_kit::Classify;

#[derive(Classify)]
#[classify(transient)]
union Raw {
    code: u32,
    bits: f32,
}

fn main() {}
