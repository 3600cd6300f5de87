//! `#[retryable(...)]`: parse the arguments, validate them against the function, expand.

mod attr;
mod expand;
mod fresh;
mod policy;
mod protection;
#[cfg(test)]
mod robustness;
mod shape;
mod suggest;
mod valid;

pub(crate) use expand::retryable;
