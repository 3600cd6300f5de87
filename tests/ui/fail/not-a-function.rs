use retry_kit::retryable;

#[retryable(attempts = 3)]
struct NotAFunction;

fn main() {}
