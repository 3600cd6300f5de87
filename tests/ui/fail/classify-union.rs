//! A union cannot say which field is set, so it cannot be classified by tags. The error is the
//! only one: the impl is still emitted, so the use below does not add "not implemented".
use retry_kit::Classify;

#[derive(Classify)]
#[classify(transient)]
union Raw {
    code: u32,
    bits: f32,
}

fn needs_classify<E: Classify>(_: &E) {}

fn main() {
    needs_classify(&Raw { code: 1 });
}
