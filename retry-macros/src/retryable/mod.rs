//! `#[retryable(...)]`: parse the arguments, validate them against the function, expand.

mod attr;
mod duration;
mod expand;
mod fresh;
mod keys;
#[cfg(test)]
mod robustness;
mod shape;
mod suggest;
mod valid;

pub(crate) use expand::retryable;
pub(crate) use suggest::nearest;
