//! `#[derive(Classify)]`, in thiserror's order: read the input into a borrowed AST with its
//! parsed `#[classify(...)]` tags ([`ast`], [`attr`]), check the tags against the shape of the
//! type ([`valid`]), then write the impl ([`expand`]).
//!
//! Every mistake is collected, each at its own token, and reported together with an impl in
//! which whatever was wrong falls back to `Permanent`: the user sees the real mistakes and
//! nothing that merely follows from the impl being missing.

mod ast;
mod attr;
mod expand;
#[cfg(test)]
mod robustness;
mod valid;

use proc_macro2::TokenStream;
use quote::ToTokens;
use std::fmt::Display;

pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let input = match syn::parse2::<syn::DeriveInput>(input) {
        Ok(input) => input,
        // Not an item at all: rustc has already reported the syntax error.
        Err(error) => return error.to_compile_error(),
    };
    let mut errors = Errors::default();
    let ast = ast::Input::from_syn(&input, &mut errors);
    valid::check(&ast, &mut errors);
    let mut tokens = expand::impl_classify(&ast);
    tokens.extend(errors.into_compile_errors());
    tokens
}

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

    fn into_compile_errors(self) -> TokenStream {
        self.0
            .map(syn::Error::into_compile_error)
            .unwrap_or_default()
    }
}
