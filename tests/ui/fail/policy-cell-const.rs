// A `const PolicyCell` is a new cell wherever it is named: `set` would change a copy that no
// call ever reads. `#[retryable(policy = CELL)]` refuses it at the path; a `static` cell, and a
// `const` policy, are accepted (tests/ui/pass/policy-cell-static.rs).
use retry_kit::{retryable, Classify, PolicyCell, RetryPolicy};

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

const RELOADED: PolicyCell = PolicyCell::new(RetryPolicy::new().attempts(3));

#[retryable(policy = RELOADED)]
fn fetch() -> Result<(), Busy> {
    Ok(())
}

#[retryable(policy = RELOADED, idempotent)]
fn fetch_overridden() -> Result<(), Busy> {
    Ok(())
}

fn main() {
    let _ = fetch();
    let _ = fetch_overridden();
}
