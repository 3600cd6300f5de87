// Every policy source `#[retryable(policy = ...)]` accepts besides a literal: a `static` cell,
// a `const` and a `static` policy, a cell behind an argument, a field or an `Arc` (the check
// that refuses a `const PolicyCell` leaves these alone: tests/ui/fail/policy-cell-const.rs).
#![deny(warnings)]

use retry_kit::{retryable, Classify, PolicyCell, RetryPolicy};
use std::sync::Arc;

#[derive(Debug, Classify)]
#[classify(transient)]
struct Busy;

static CELL: PolicyCell = PolicyCell::new(RetryPolicy::new().attempts(3));
const POLICY: RetryPolicy = RetryPolicy::new().attempts(2);
static STATIC_POLICY: RetryPolicy = RetryPolicy::new().attempts(4);

mod config {
    pub static RELOADED: retry_kit::PolicyCell =
        retry_kit::PolicyCell::new(retry_kit::RetryPolicy::new());
}

#[retryable(policy = CELL)]
fn by_static_cell() -> Result<(), Busy> {
    Ok(())
}

#[retryable(policy = config::RELOADED, idempotent)]
fn by_path_with_override() -> Result<(), Busy> {
    Ok(())
}

#[retryable(policy = POLICY)]
fn by_const_policy() -> Result<(), Busy> {
    Ok(())
}

#[retryable(policy = STATIC_POLICY)]
fn by_static_policy() -> Result<(), Busy> {
    Ok(())
}

#[retryable(policy = cell)]
fn by_argument(cell: &PolicyCell) -> Result<(), Busy> {
    let _ = cell;
    Ok(())
}

struct Client {
    cell: PolicyCell,
    shared: Arc<PolicyCell>,
}

impl Client {
    #[retryable(policy = self.cell)]
    fn by_field(&self) -> Result<(), Busy> {
        Ok(())
    }

    #[retryable(policy = self.shared)]
    fn by_arc(&self) -> Result<(), Busy> {
        Ok(())
    }
}

fn main() {
    by_static_cell().unwrap();
    by_path_with_override().unwrap();
    by_const_policy().unwrap();
    by_static_policy().unwrap();
    by_argument(&CELL).unwrap();
    let client = Client {
        cell: PolicyCell::new(RetryPolicy::new()),
        shared: Arc::new(PolicyCell::new(RetryPolicy::new())),
    };
    client.by_field().unwrap();
    client.by_arc().unwrap();
}
