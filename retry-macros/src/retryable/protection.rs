//! The expansion of the shared protection keys (`adaptive`, `circuit`, `budget`, `key`,
//! `attempt_timeout`): how the engine is equipped, how the first attempt is admitted, and how
//! a timeout becomes the function's error.

use super::attr::Args;
use super::policy::duration;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Path, Type};

/// The shared protection of `adaptive`, `circuit`, `budget` and `attempt_timeout`: how the
/// engine is equipped, the first attempt's admission, and the timeout of each attempt.
pub(super) struct Protection {
    /// Before the engine is made: with `key`, the key's breaker and budget.
    pub(super) setup: TokenStream,
    /// How the engine is equipped with the protection (through `Equip`, as every front end
    /// equips its calls), if it has any: see [`Protection::start`].
    equip: Option<Equipped>,
    /// Before the first attempt: return `E::from(CircuitOpen)` if the breaker refuses it.
    admit: TokenStream,
    /// Before the loop: the attempt timeout, a limit and the conversion of a timeout into the
    /// error type.
    pub(super) timed_setup: TokenStream,
    /// The name of the attempt timeout, with `attempt_timeout`.
    pub(super) timeout: Option<Ident>,
}

/// What equips the new call: the `Protections` protection (a temporary each time it is needed, never
/// a local: a borrowed local would be kept in an async retryable future across every await)
/// and the error type `Equip` is asked for.
struct Equipped {
    /// `Equip::<E>`, with the crate's path.
    trait_path: TokenStream,
    shared: TokenStream,
}

impl Protection {
    /// The engine `call`, made by `new_call`, equipped and admitted.
    pub(super) fn start(&self, call: &Ident, new_call: TokenStream) -> TokenStream {
        let Protection { equip, admit, .. } = self;
        match equip {
            // The new call is equipped in the same expression, so that it is built in place:
            // bound first, it was copied into the equipped call.
            Some(Equipped { trait_path, shared }) => quote! {
                let mut #call = #trait_path::equip(&(#shared), #new_call);
                #admit
            },
            None => quote!(let mut #call = #new_call; #admit),
        }
    }

    pub(super) fn new(args: &Args, krate: &Path, call: &Ident, hook: &Ident, ret: &Type) -> Self {
        let mut setup = TokenStream::new();
        // `.adaptive(..)`, `.circuit(..)` and `.budget(..)` on a `Protections` protection.
        let mut shared = TokenStream::new();
        // What admitting the first attempt needs: the breaker, and of the budget only its
        // type (`run::expand::refusal_of`), so that the budget is not read a second time.
        let mut admit_shared = TokenStream::new();
        let mut admit = TokenStream::new();
        if let Some(path) = args.path("adaptive") {
            // A path that is not an adaptive policy is reported at the path.
            let source = quote_spanned!(path.span()=> &#path as &dyn #krate::adaptive::Adapt);
            shared.extend(quote!(.adaptive(#source)));
            admit_shared.extend(quote!(.adaptive(#source)));
        }
        // With `key = ...`, the breaker and the budget are the key's, from a `PerKey`: the key
        // is hashed once, before the first attempt, and each value is held for the call.
        let key_hash = Ident::new("__rk_key", Span::mixed_site());
        if let Some(key) = args.expr("key") {
            // At the key, so that a key that cannot be hashed is reported there.
            setup.extend(quote_spanned!(key.span()=>
                let #key_hash = #krate::per_key::key_hash(&(#key));
            ));
        }
        // With both, either may be shared by every key (a per-host breaker beside one global
        // budget), as long as one is chosen by key: checked at the `key` key.
        let both = match (args.get("key"), args.path("circuit"), args.path("budget")) {
            (Some(k), Some(circuit), Some(budget)) => {
                setup.extend(quote_spanned!(k.key.span()=>
                    #krate::per_key::one_by_key(&#circuit, &#budget);
                ));
                true
            }
            _ => false,
        };
        // The breaker, then the budget: the shared one, or the key's held for the call.
        // Each through its public trait's method, so that a value of the wrong type is reported
        // as that trait, with no glue of the crate's in the error.
        let slots = [
            ("circuit", "CircuitBreaker", "AsBreaker", "as_breaker"),
            ("budget", "RetryBudget", "AsBudget", "as_budget"),
        ];
        for (name, held_type, as_trait, as_method) in slots {
            let Some(path) = args.path(name) else {
                continue;
            };
            let method = Ident::new(name, Span::call_site());
            let as_trait = Ident::new(as_trait, Span::call_site());
            let as_method = Ident::new(as_method, Span::call_site());
            // Spanned at the path, so a value of the wrong type is reported there (for a
            // `PerKey`, once: the value's type is named, so later uses do not ask again).
            let value = if args.get("key").is_some() {
                let held = Ident::new(&format!("__rk_{name}"), Span::mixed_site());
                let held_type = Ident::new(held_type, Span::call_site());
                let pick = if both {
                    quote_spanned!(path.span()=> #krate::per_key::pick::<#krate::#held_type, _>)
                } else {
                    quote_spanned!(path.span()=> #krate::per_key::keyed::<#krate::#held_type, _>)
                };
                // A new entry is labelled with the key's `Display` text, if it has one: the key
                // is evaluated again for that, only when the entry is made.
                let key = args.expr("key");
                setup.extend(quote_spanned!(path.span()=>
                    let #held = #pick(&#path, #key_hash, &|| {
                        #[allow(unused_imports)]
                        use #krate::__private::{
                            KeyViaDebug as _, KeyViaDisplay as _, KeyViaNothing as _,
                        };
                        (&&#krate::__private::KeyText(&(#key))).text()
                    });
                ));
                // The lease itself, with the tenancy the key was looked up under.
                quote!(#held)
            } else {
                quote_spanned!(path.span()=> #krate::#as_trait::#as_method(&#path))
            };
            let value = match args.get("circuit") {
                // With its conversion of a refusal: a missing `From<CircuitOpen>` is reported at
                // the `circuit` key.
                Some(s) if name == "circuit" => {
                    let at_key = respan(quote!(#ret), s.key.span());
                    let conversion = quote_spanned!(s.key.span()=> #krate::run::expand::circuit_open::<#at_key>());
                    quote!((#value, #conversion))
                }
                _ => value,
            };
            // At the path, so that a value that is not a budget is reported once, there, and not
            // again where the slot's type (`AsBudget::Slot`) is used.
            shared.extend(quote_spanned!(path.span()=> .#method(#value)));
            let admitted = if name == "budget" && args.get("key").is_none() {
                quote_spanned!(path.span()=> #krate::run::expand::refusal_of(&#path))
            } else {
                value
            };
            admit_shared.extend(quote_spanned!(path.span()=> .#method(#admitted)));
        }
        let shared_value = quote!(#krate::run::Protections::new() #shared);
        let admit_value = quote!(#krate::run::Protections::new() #admit_shared);
        let error = quote!(#krate::run::expand::ErrorOf<#ret>);
        let equip = if shared.is_empty() {
            None
        } else {
            // A temporary each time it is needed, never a local: a borrowed local would be kept
            // in an async retryable future across every await.
            Some(Equipped {
                trait_path: quote!(#krate::run::Equip::<#error>),
                shared: shared_value.clone(),
            })
        };
        // A budget slot may refuse the first attempt too (an `AdaptiveThrottle`); for a budget
        // the admission folds away.
        if args.get("circuit").is_some() || args.get("budget").is_some() {
            let refused = Ident::new("__rk_refused", Span::mixed_site());
            admit = quote! {
                if let ::core::result::Result::Err(#refused) =
                    #krate::run::Equip::<#error>::admit(&(#admit_value), &mut #call)
                {
                    #krate::observe::refused(&mut #hook);
                    return ::core::result::Result::Err(#refused);
                }
            };
        }
        let limit = args.duration("attempt_timeout");
        let (timed_setup, timeout) = match (args.get("attempt_timeout"), limit) {
            (Some(s), Some(limit)) => {
                let timeout = Ident::new("__rk_timeout", Span::mixed_site());
                // A missing `From<TimedOut>` is reported at the `attempt_timeout` key.
                let at_key = respan(quote!(#ret), s.key.span());
                let conversion =
                    quote_spanned!(s.key.span()=> #krate::run::expand::timed_out::<#at_key>());
                let limit = duration(limit);
                let setup = quote!(let #timeout = (#limit, #conversion););
                (setup, Some(timeout))
            }
            _ => (TokenStream::new(), None),
        };
        Protection {
            setup,
            equip,
            admit,
            timed_setup,
            timeout,
        }
    }
}

/// `tokens` with every span set to `span`, so that an error about them is reported there.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let proc_macro2::TokenTree::Group(g) = &tt {
                let mut group = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tt = group.into();
            }
            tt.set_span(span);
            tt
        })
        .collect()
}
