//! The macro implementations of `retry-macros`, compiled as an ordinary library so that a fuzz
//! target can call them.
//!
//! A `proc-macro = true` crate cannot be linked into another binary, and its entry points take
//! `proc_macro::TokenStream`, which only exists inside the compiler. Both macros are written as
//! `proc_macro2` functions behind thin entry points, so this crate includes their module trees
//! by path, unchanged: the code fuzzed is exactly the code shipped, and `retry-macros` needs no
//! extra public (even `#[doc(hidden)]`) surface or feature for it.
#![allow(dead_code, unreachable_pub)]

#[path = "../../retry-macros/src/classify/mod.rs"]
mod classify;
#[path = "../../retry-macros/src/errors.rs"]
mod errors;
#[path = "../../retry-macros/src/retryable/mod.rs"]
mod retryable;

use proc_macro2::TokenStream;
use std::str::FromStr;

/// `#[derive(Classify)]` on `input`.
pub fn derive_classify(input: TokenStream) -> TokenStream {
    classify::derive(input)
}

/// `#[retryable(attr)]` on `item`.
pub fn retryable(attr: TokenStream, item: TokenStream) -> TokenStream {
    retryable::retryable(attr, item)
}

/// Lex fuzz bytes as Rust tokens: `None` for bytes that are not UTF-8 or do not lex, which
/// the compiler never hands a macro.
pub fn tokens(bytes: &[u8]) -> Option<TokenStream> {
    let text = std::str::from_utf8(bytes).ok()?;
    TokenStream::from_str(text).ok()
}
