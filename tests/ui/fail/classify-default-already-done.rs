use retry_kit::Classify;

// `already_done` names the one answer that means a duplicate: it cannot be every variant's
// class.
#[derive(Debug, Classify)]
#[classify(default = already_done)]
enum E {
    Duplicate,
}

fn main() {}
