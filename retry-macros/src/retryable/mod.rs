//! `#[retryable(...)]`: parse the arguments, validate them against the function, expand.

mod args;
mod expand;
#[cfg(test)]
mod robustness;

pub(crate) use args::nearest;
pub(crate) use expand::retryable;
