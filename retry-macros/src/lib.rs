//! Procedural macros of [`retry-kit`](https://docs.rs/retry-kit). Depend on `retry-kit`, which
//! re-exports them with their documentation; the generated code names the runtime through it.
#![forbid(unsafe_code)]

use proc_macro::TokenStream;

mod classify;
mod retryable;

/// Rewrite a function into a retry loop. See the `retry-kit` crate for the keys and semantics.
#[proc_macro_attribute]
pub fn retryable(attr: TokenStream, item: TokenStream) -> TokenStream {
    retryable::retryable(attr.into(), item.into()).into()
}

/// Implement `Classify` from `#[classify(...)]` tags. See the `retry-kit` crate.
#[proc_macro_derive(Classify, attributes(classify))]
pub fn derive_classify(input: TokenStream) -> TokenStream {
    classify::derive(input.into()).into()
}
