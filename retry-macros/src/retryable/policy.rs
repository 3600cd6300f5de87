//! The expansion of the policy keys: a constant `RetryPolicy` the call finds through a
//! zero-sized type, or the `policy = ...` expression with its overrides.

use super::attr::{Args, Value};
use crate::vocabulary::keys::Takes;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Path};

/// The statements that make the policy, and an expression naming it for `Call::new` (a
/// `CallPolicy`): every key the table marks `on_policy` becomes a call of the builder method
/// of its name.
///
/// The policy type also names the operation, `name` (the function's path), for the keys of
/// calls nested inside another's attempt.
pub(super) fn policy(args: &Args, krate: &Path, name: &TokenStream) -> (TokenStream, TokenStream) {
    let operation = quote! {
        const OPERATION: u64 = #krate::run::operation_id(#name);
    };
    let setters = |on_given: bool| -> TokenStream {
        args.settings
            .iter()
            .filter(|s| s.spec.on_policy && !(on_given && is_shape(s.spec.name)))
            .map(|s| {
                let method = Ident::new(s.spec.name, Span::call_site());
                let value = policy_value(&s.value, &s.spec.takes, krate);
                quote!(.#method(#value))
            })
            .collect()
    };

    if let Some(expr) = args.expr("policy") {
        let overrides = setters(true);
        let value = Ident::new("__rk_policy", Span::mixed_site());
        let span = expr.span();
        // A value that is not a policy is reported once, by `expect_policy` at the value; the
        // probe then takes the call's snapshot of the policy (a reference to it, or a copy out
        // of a `PolicyCell`, kept for the whole call) without a second error.
        let expect = quote_spanned!(span=> #krate::run::expand::expect_policy);
        let source = Ident::new("__rk_source", Span::mixed_site());
        let snapshot = quote! {{
            #[allow(unused_imports)]
            use #krate::__private::{PolicyViaAsPolicy as _, PolicyViaNothing as _};
            (&#krate::__private::PolicyProbe(#source)).snapshot()
        }};
        let borrow = quote!(::core::borrow::Borrow::<#krate::RetryPolicy>::borrow);
        // A path in capitals names a `static` or a `const`: a `static PolicyCell` is what a
        // reload reaches, a `const` one is a new cell at every use, which no reload ever
        // reaches. Borrowing it for `'static` refuses the `const` (a `const` policy is promoted
        // and passes).
        let for_ever = if names_an_item(expr) {
            let lives = quote_spanned!(span=> #krate::__private::lives_for_ever);
            quote!(#lives(&#expr);)
        } else {
            TokenStream::new()
        };
        let setup = if overrides.is_empty() {
            quote! {
                #for_ever
                let #source = &(#expr);
                #expect(#source);
                let #value = #snapshot;
            }
        } else {
            // In a block, so that nothing of the source outlives the copy (an async retryable
            // future would carry it across every await).
            quote! {
                let #value: #krate::RetryPolicy = {
                    #for_ever
                    let #source = &(#expr);
                    #expect(#source);
                    (*#borrow(&#snapshot)) #overrides
                };
            }
        };
        // The call holds the snapshot itself: a `&RetryPolicy` where the policy cannot change
        // (one pointer, as before cells), the policy by value otherwise (a cell's copy, or the
        // policy with the overrides applied), and no local beside it.
        let named = Ident::new("__RkOperation", Span::mixed_site());
        let setup = quote! {
            #setup
            #[derive(::core::clone::Clone, ::core::marker::Copy)]
            struct #named<S>(S);
            impl<S> #krate::run::CallPolicy for #named<S>
            where
                S: ::core::borrow::Borrow<#krate::RetryPolicy> + ::core::marker::Copy,
            {
                #[inline(always)]
                fn policy(&self) -> &#krate::RetryPolicy {
                    #borrow(&self.0)
                }
                #operation
                type Notes = #krate::run::plumbing::FullNotes;
            }
        };
        return (setup, quote!(#named(#value)));
    }

    // The policy is a constant, and the call finds it through a zero-sized type rather than a
    // reference: an async retryable future then carries no pointer to it across its awaits,
    // and the constant's fields fold into the code.
    let setters = setters(false);
    let name = Ident::new("__RkPolicy", Span::mixed_site());
    let notes = match notes(args) {
        Notes::Nothing => quote!(#krate::run::plumbing::NoNotes),
        Notes::Start => quote!(#krate::run::plumbing::StartNotes),
        Notes::Full => quote!(#krate::run::plumbing::FullNotes),
    };
    (
        quote! {
            #[derive(::core::clone::Clone, ::core::marker::Copy)]
            struct #name;
            impl #krate::run::CallPolicy for #name {
                #[inline(always)]
                fn policy(&self) -> &#krate::RetryPolicy {
                    const POLICY: #krate::RetryPolicy = #krate::RetryPolicy::new() #setters;
                    &POLICY
                }
                #operation
                type Notes = #notes;
            }
        },
        quote!(#name),
    )
}

/// What a call under the attribute's constant policy notes between its attempts
/// (`CallPolicy::Notes`), so that it stores none of the rest when it starts, and an async one
/// keeps none of it across its awaits.
enum Notes {
    /// Nothing: no deadline, hook, decorrelated jitter, `nested = "once"`, adaptive policy or
    /// attempt timeout.
    Nothing,
    /// The start time alone: a deadline or a hook, and none of the others.
    Start,
    /// The start time, the previous sleep, the limit and the timeout flag.
    Full,
}

fn notes(args: &Args) -> Notes {
    let full = args.word("jitter") == Some("Decorrelated")
        || args.word("nested") == Some("Once")
        || ["adaptive", "attempt_timeout"]
            .iter()
            .any(|key| args.get(key).is_some());
    if full {
        Notes::Full
    } else if ["deadline", "on_failure"]
        .iter()
        .any(|key| args.get(key).is_some())
    {
        Notes::Start
    } else {
        Notes::Nothing
    }
}

/// Whether `expr` is a path to a `static` or a `const` by Rust's naming (its last segment in
/// capitals, such as `POLICY` or `config::RELOADED`), outside a generic `Self`.
fn names_an_item(expr: &syn::Expr) -> bool {
    let syn::Expr::Path(path) = expr else {
        return false;
    };
    if path.qself.is_some() || path.path.segments.iter().any(|s| s.ident == "Self") {
        return false;
    }
    path.path.segments.last().is_some_and(|last| {
        let name = last.ident.to_string();
        name.chars().any(|c| c.is_ascii_uppercase())
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    })
}

/// Whether `policy = ...` already fixes the key `name` (a key it excludes).
fn is_shape(name: &str) -> bool {
    crate::vocabulary::keys::find("policy").is_some_and(|policy| policy.excludes.contains(&name))
}

/// The argument of a policy builder method for a parsed value.
fn policy_value(value: &Value, takes: &Takes, krate: &Path) -> TokenStream {
    match (value, takes) {
        (Value::Count(n), _) => quote!(#n),
        (Value::Factor(m), _) => quote!(#m),
        (Value::Duration(d), _) => duration(*d),
        (Value::Flag(b), _) => quote!(#b),
        (Value::Word(variant), Takes::Word { runtime, .. }) => {
            let runtime = Ident::new(runtime, Span::call_site());
            let variant = Ident::new(variant, Span::call_site());
            quote!(#krate::#runtime::#variant)
        }
        (Value::Path(path), _) => quote!(#path),
        (Value::Expr(expr), _) => quote!(#expr),
        (Value::Word(variant), _) => {
            let variant = Ident::new(variant, Span::call_site());
            quote!(#variant)
        }
    }
}

/// A `Duration` as an expression, exactly.
pub(super) fn duration(d: std::time::Duration) -> TokenStream {
    let (secs, nanos) = (d.as_secs(), d.subsec_nanos());
    quote!(::core::time::Duration::new(#secs, #nanos))
}
