//! `adaptive`, `nested` and the Display probe, expanded in a crate with the strictest common lints:
//! free, generic, async and trait-impl functions, and a return type with `impl Trait`.
#![deny(warnings, unused_qualifications, missing_docs)]

use retry_kit::adaptive::{AdaptivePolicy, Stats, Tuning};
use retry_kit::{retryable, Classify};
use std::fmt;

/// The error.
#[derive(Debug, Classify)]
pub enum E {
    /// Retry it.
    #[classify(transient)]
    Busy,
}

impl fmt::Display for E {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("busy")
    }
}

fn calm(_: &Stats, t: Tuning) -> Tuning {
    t
}

static ADAPT: AdaptivePolicy = AdaptivePolicy::new(&[calm]);
static SMALL: AdaptivePolicy<8> = AdaptivePolicy::new(&[]);

/// Adaptive and nested.
#[retryable(attempts = 4, adaptive = ADAPT, nested = "once")]
pub fn sync_adaptive() -> Result<(), E> {
    Ok(())
}

/// Async, with a window of another size.
#[retryable(adaptive = SMALL, nested = "retry")]
pub async fn async_adaptive(x: &mut u32) -> Result<u32, E> {
    *x += 1;
    Ok(*x)
}

/// Generic without a `Display` bound.
#[retryable(attempts = 2, base = "0ms")]
pub fn generic<T: Default, Err: Classify>() -> Result<T, Err> {
    Ok(T::default())
}

/// `impl Trait` in the outcome.
#[retryable(attempts = 2, base = "0ms")]
pub fn opaque() -> Result<impl fmt::Display, E> {
    Ok(1)
}

/// A trait with a retried method.
pub trait Store {
    /// Save.
    fn save(&self) -> Result<(), E>;
}

/// A store.
pub struct Memory;

impl Store for Memory {
    #[retryable(attempts = 2, base = "0ms", adaptive = ADAPT)]
    fn save(&self) -> Result<(), E> {
        Ok(())
    }
}

/// `r#` names are shown without the prefix.
#[retryable(attempts = 2, base = "0ms")]
pub fn r#match() -> Result<(), E> {
    Ok(())
}

fn main() {
    let _ = sync_adaptive();
    let mut x = 0;
    let _ = async_adaptive(&mut x);
    let _ = generic::<u8, E>();
    let _ = opaque();
    let _ = Memory.save();
    let _ = r#match();
}
