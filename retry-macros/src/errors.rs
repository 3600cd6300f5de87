//! One error collector for both macros, so that a single compile reports every mistake, each
//! at its own token.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use std::fmt::Display;

/// Collects every error so that one compile shows them all.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// An error at `tokens`, which may span several tokens (a type, a path).
    pub(crate) fn at(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// An error at one span.
    pub(crate) fn at_span(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// `Err` with every error collected, or `Ok` when there were none.
    pub(crate) fn into_result(self) -> Result<(), syn::Error> {
        match self.0 {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The collected errors as `compile_error!` invocations (nothing when there were none).
    pub(crate) fn into_compile_errors(self) -> TokenStream {
        self.0
            .map(syn::Error::into_compile_error)
            .unwrap_or_default()
    }
}
