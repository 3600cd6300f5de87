//! `mut` arguments taken by value: each attempt gets a fresh copy.
//!
//! The `mut` is taken off the argument's binding (the function's type does not change) and the
//! attempt begins with `let mut name = FreshPerAttempt::<name, _>::fresh_copy(&name, || ());`
//! (the closure keeps rustc from suggesting a bound it cannot write), so the body's changes
//! stay in that attempt. The copy requires `Copy` (the runtime's `FreshPerAttempt` says why at
//! the argument); a clone would be a cost the user did not write, so it stays the user's
//! visible choice.

use super::attr::Errors;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::{FnArg, Ident, Pat, Path, Signature, Token};

/// A `mut` binding taken by value, whose `mut` moved into each attempt.
pub(crate) struct Binding {
    ident: Ident,
    mutability: Token![mut],
}

/// Take `mut` off every by-value binding in the signature's arguments, reporting the ones that
/// cannot get a fresh copy (`mut self`, `ref mut`).
pub(crate) fn take_from_signature(sig: &mut Signature, errors: &mut Errors) -> Vec<Binding> {
    let mut bindings = Vec::new();
    for arg in &mut sig.inputs {
        match arg {
            FnArg::Receiver(receiver) => {
                // The binding's own `mut` (`mut self`, `mut self: Box<Self>`), not `&mut self`.
                if let Some(mutability) = &receiver.mutability {
                    errors.at(mutability, MUT_SELF);
                }
            }
            FnArg::Typed(typed) => take_from_pattern(&mut typed.pat, &mut bindings, errors),
        }
    }
    bindings
}

pub(crate) const MUT_SELF: &str = "`mut self` would carry one attempt's changes into the next: `#[retryable]` runs the body once per attempt, each starting from the value the caller passed; take `&mut self` to change the receiver across attempts, or take `self` and copy what the body changes into a local (`let mut this = self.clone();`)";

/// Take `mut` off every by-value binding in `pat`.
pub(crate) fn take_from_pattern(pat: &mut Pat, bindings: &mut Vec<Binding>, errors: &mut Errors) {
    match pat {
        Pat::Ident(p) => {
            if let Some(mutability) = p.mutability {
                match &p.by_ref {
                    Some(by_ref) => errors.at(
                        quote::quote!(#by_ref #mutability),
                        "a `ref mut` binding in an argument would carry one attempt's changes into the next; bind it by value (`mut name`, copied afresh for every attempt) or take a `&mut` argument",
                    ),
                    None => {
                        p.mutability = None;
                        bindings.push(Binding {
                            ident: p.ident.clone(),
                            mutability,
                        });
                    }
                }
            }
            if let Some((_, sub)) = &mut p.subpat {
                take_from_pattern(sub, bindings, errors);
            }
        }
        Pat::Paren(p) => take_from_pattern(&mut p.pat, bindings, errors),
        Pat::Reference(p) => take_from_pattern(&mut p.pat, bindings, errors),
        Pat::Type(p) => take_from_pattern(&mut p.pat, bindings, errors),
        Pat::Tuple(p) => p
            .elems
            .iter_mut()
            .for_each(|e| take_from_pattern(e, bindings, errors)),
        Pat::TupleStruct(p) => p
            .elems
            .iter_mut()
            .for_each(|e| take_from_pattern(e, bindings, errors)),
        Pat::Slice(p) => p
            .elems
            .iter_mut()
            .for_each(|e| take_from_pattern(e, bindings, errors)),
        Pat::Or(p) => p
            .cases
            .iter_mut()
            .for_each(|e| take_from_pattern(e, bindings, errors)),
        Pat::Struct(p) => p
            .fields
            .iter_mut()
            .for_each(|f| take_from_pattern(&mut f.pat, bindings, errors)),
        _ => {}
    }
}

/// The statements that open every attempt: a fresh copy of each binding. `hedged`: the
/// attempts run side by side, and a type that is not `Copy` gets a note without `&mut`.
pub(crate) fn prelude(bindings: &[Binding], krate: &Path, hedged: bool) -> TokenStream {
    let fresh = if hedged {
        quote!(#krate::FreshPerHedgedAttempt)
    } else {
        quote!(#krate::FreshPerAttempt)
    };
    let mut out = TokenStream::new();
    for Binding { ident, mutability } in bindings {
        // A type named after the argument (in the macro's own hygiene, so it meets no name of
        // the user's), for the error's note: `let mut line = line.clone();`.
        let mut name = ident.clone();
        name.set_span(proc_macro2::Span::mixed_site().located_at(ident.span()));
        // Spanned at the argument, so that a type which is not `Copy` is reported there. The
        // closure is the trait's `Site`: rustc suggests no bound it cannot write, and a
        // closure's type cannot be written, so it does not suggest `impl Trait + FreshPerAttempt
        // <name>` (naming the type above) for an `impl Trait` or generic argument.
        let site = quote_spanned!(proc_macro2::Span::mixed_site()=> || ());
        out.extend(quote_spanned!(ident.span()=>
            #[allow(non_camel_case_types, dead_code)]
            struct #name {}
            let #mutability #ident = #fresh::<#name, _>::fresh_copy(&#ident, #site);
        ));
    }
    out
}
