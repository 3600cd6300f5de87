//! `#[retryable(...)]`: parse the arguments, validate them against the function, expand.

mod args;
mod expand;
mod fresh;
#[cfg(test)]
mod robustness;
mod shape;

pub(crate) use args::nearest;
pub(crate) use expand::retryable;
