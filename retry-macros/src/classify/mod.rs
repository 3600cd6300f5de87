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

use crate::errors::Errors;
use proc_macro2::TokenStream;

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
