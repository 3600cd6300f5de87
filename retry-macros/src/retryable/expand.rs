//! Rewriting the function body into a retry loop over the runtime's `Call` engine.
//!
//! The signature is kept token for token; only the body changes. Each attempt runs the user's
//! block once, in a wrapper made fresh inside the loop (a non-`move` closure called at once, or a
//! non-`move` async block awaited at once), so arguments are borrowed anew by every attempt and
//! never cloned.

use super::attr::{self, Args, Errors};
use super::fresh::{self, Binding};
use super::policy::{duration, policy};
use super::protection::Protection;
use super::shape::{self, Body};
use super::valid;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, ItemFn, Path, Type};

pub(crate) fn retryable(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = attr::parse(attr, &mut errors);
    valid::conflicts(&args, &mut errors);
    let mut func: ItemFn = match syn::parse2(item.clone()) {
        Ok(func) => func,
        Err(e) => {
            errors.at_span(
                e.span(),
                format!("`#[retryable]` goes on a function with a body; {e}"),
            );
            return with_errors(errors, item);
        }
    };
    let mut bindings = fresh::take_from_signature(&mut func.sig, &mut errors);
    let (body, declared) = Body::of(&mut func, &mut bindings, &mut errors);
    let is_async = func.sig.asyncness.is_some() || matches!(body, Body::AsyncTrait);
    let ret = valid::validate(&args, &func, is_async, declared, &mut errors);
    match (errors.into_result(), ret) {
        (Ok(()), Some(ret)) => expand(&args, func, &body, ret, is_async, &bindings),
        (result, _) => {
            let errors = result.err().map(|e| e.to_compile_error());
            // Still emit the function as written, so the rest of the crate type-checks and
            // only the real mistakes are reported.
            quote!(#errors #item)
        }
    }
}

fn with_errors(errors: Errors, item: TokenStream) -> TokenStream {
    let errors = errors.into_result().err().map(|e| e.to_compile_error());
    quote!(#errors #item)
}

fn expand(
    args: &Args,
    func: ItemFn,
    body: &Body,
    ret: Type,
    is_async: bool,
    bindings: &[Binding],
) -> TokenStream {
    let krate: Path = match args.path("crate") {
        Some(path) => path.clone(),
        None => syn::parse_quote!(::retry_kit),
    };
    let ItemFn {
        attrs,
        vis,
        sig,
        mut block,
        ..
    } = func;
    // Inner attributes (`#![allow(...)]` at the top of the body) stay at the top of the body.
    let (outer, inner): (Vec<_>, Vec<_>) = attrs
        .into_iter()
        .partition(|a| matches!(a.style, syn::AttrStyle::Outer));
    let ret_span = ret.span();
    let erased = erase_impl_trait(ret.clone());
    // Without syn's `extra-traits`, compare the tokens; a `_` left by `#[async_trait]` in place
    // of an `impl Trait` counts as one too.
    let had_impl_trait =
        quote!(#erased).to_string() != quote!(#ret).to_string() || contains_infer(&quote!(#ret));
    let ret = erased;

    let call = Ident::new("__rk", Span::mixed_site());
    let classifier = Ident::new("__rk_classifier", Span::mixed_site());
    let hook = Ident::new("__rk_hook", Span::mixed_site());
    let meter = Ident::new("__RK_METER", Span::mixed_site());
    // Type errors about the outcome (not a `Result`, an error without `Classify`) point at the
    // declared return type.
    let after = Ident::new("after", ret_span);

    let classify = classifier_expr(args, &krate, &ret, had_impl_trait);
    // The user's hook is called from a closure whose argument names the record type, so a
    // function of the wrong signature is a type mismatch at the `on_failure` value naming
    // `Failure<'_, E>` (with `retry_if`, `Failure<'_, Rejected<T, E>>`), not an unmet bound of
    // the engine's.
    let hook_expr = match args.path("on_failure") {
        Some(path) if !had_impl_trait => {
            let record = if args.get("retry_if").is_some() {
                quote!(#krate::run::expand::RejectedOf<#ret>)
            } else {
                quote!(#krate::run::expand::ErrorOf<#ret>)
            };
            // At the value, so that a mismatch points there.
            let f = Ident::new("__rk_failure", Span::mixed_site().located_at(path.span()));
            quote_spanned!(path.span()=>
                |#f: &#krate::Failure<'_, #record>| #path(#f)
            )
        }
        Some(path) => quote!(#path),
        None => quote!(#krate::run::NoHook),
    };
    // With `retry_if` the records carry `Rejected` values, whose `Display` the probe cannot
    // name: events go without the error text.
    let hook_expr = described(
        hook_expr,
        &ret,
        had_impl_trait || args.get("retry_if").is_some(),
        &krate,
    );
    let name = syn::LitStr::new(&sig.ident.unraw().to_string(), sig.ident.span());
    let path = quote!(concat!(module_path!(), "::", #name));
    let (policy_setup, policy_ref) = policy(args, &krate, &path);
    // The clock is read at the start for `Failure::elapsed` when there is a hook, and for
    // `tracing` events when a subscriber listens.
    let needs_clock = match args.get("on_failure") {
        Some(_) => quote!(true),
        None => quote!(#krate::observe::wants_clock()),
    };
    let protection = Protection::new(args, &krate, &call, &hook, &ret);
    let start = protection.start(
        &call,
        quote!(if #needs_clock {
            #krate::run::Call::clocked(#policy_ref)
        } else {
            #krate::run::Call::new(#policy_ref)
        }),
    );
    let protection_setup = &protection.setup;
    let prelude = fresh::prelude(
        bindings,
        &krate,
        is_async && args.duration("hedge").is_some(),
    );
    // A result that borrows (`Result<&T, E>`) is the usual cause of a borrow error between
    // attempts (a body returning a borrow of data it mutates): such errors then point at the
    // return type rather than at the attribute.
    let wrapper_span = if borrows(&quote!(#ret)) {
        ret_span
    } else {
        Span::call_site()
    };
    let closure = quote_spanned!(wrapper_span=> ||);
    let async_block = quote_spanned!(wrapper_span=> async);
    let sleep = match args.path("sleep") {
        Some(path) => quote!(#path),
        // tokio's `Sleep` awaited directly, not through an `async fn` wrapper, so the
        // wrapper's state does not add to the size of every retryable future.
        None => quote!(#krate::run::tokio_sleep),
    };

    // With `retry_if`, each attempt's outcome passes the predicate before the engine sees it.
    let flagged = |attempt: TokenStream| -> TokenStream {
        match args.path("retry_if") {
            Some(flag) => quote!(#krate::run::expand::reject_if(#attempt, #flag)),
            None => attempt,
        }
    };
    let classify = match args.path("retry_if") {
        Some(_) => quote!(#krate::run::expand::IfRejected(#classify)),
        None => classify,
    };

    // The engine and the crate's one loop (the same `Retry` expands) around the user's block:
    // an expression whose value is the call's outcome. A breaker that refuses the first attempt
    // `return`s, which leaves whatever encloses the block: the function, or the `async move`
    // block or `move` closure that `#[async_trait]` or `#[tracing::instrument]` made of its
    // body, whose output is the declared outcome type too.
    let retry_loop = |block: TokenStream| -> TokenStream {
        let block = if prelude.is_empty() {
            block
        } else {
            quote!({ #prelude #block })
        };
        let run = if let (true, Some(delay)) = (is_async, args.duration("hedge")) {
            hedged(HedgeParts {
                krate: &krate,
                call: &call,
                after: Ident::new("after_hedged", ret_span),
                classifier: &classifier,
                hook: &hook,
                ret: &ret,
                attempt: quote!(#async_block #block),
                sleep: &sleep,
                timeout: protection.timeout.as_ref(),
                retry_if: args.path("retry_if"),
                delay: duration(delay),
            })
        } else if is_async {
            let attempt = match &protection.timeout {
                Some(timeout) => {
                    let out = Ident::new("__rk_out", Span::mixed_site());
                    // The limit is the smaller of the timeout and the time left before the
                    // deadline: no attempt runs past it.
                    quote!({
                        let #out = #call
                            .attempt_timed::<#ret, _, _, _, _>(&#timeout, #async_block #block, #sleep)
                            .await;
                        #call.settle::<#ret, _>(&#timeout, #out)
                    })
                }
                None => quote!(#call.attempt_async::<#ret, _>(#async_block #block).await),
            };
            let attempt = flagged(attempt);
            quote!(#krate::run::retry_async!(
                #call.#after(&#classifier, &mut #hook) <- #attempt, sleep: #sleep
            ))
        } else {
            let attempt = flagged(quote!(#call.attempt_sync::<#ret, _>(#closure #block)));
            quote!(#krate::run::retry_sync!(
                #call.#after(&#classifier, &mut #hook) <- #attempt
            ))
        };
        // With `retry_if`, the loop runs on `Rejected` outcomes: back to the function's.
        let (run, classified) = match args.path("retry_if") {
            Some(_) => (
                quote!(#krate::run::expand::accept_rejected(#run)),
                quote!(&#classifier.0),
            ),
            None => (run, quote!(&#classifier)),
        };
        let run = match args.path("already_done") {
            Some(resolve) => {
                quote!(#krate::run::expand::resolve_already_done(#run, #classified, #resolve))
            }
            None => run,
        };
        let timed_setup = &protection.timed_setup;
        // The key of the work the value names, evaluated once per call: at the value, so that
        // a value that cannot be hashed is reported there.
        let keyed = match args.expr("idempotency_key") {
            Some(value) => quote_spanned!(value.span()=> #call.keyed_by(&(#value));),
            None => TokenStream::new(),
        };
        quote!({
            #policy_setup
            let #classifier = #classify;
            let mut #hook = {
                static #meter: #krate::observe::Meter = #krate::observe::Meter::new(#path);
                #krate::observe::observed_as(#hook_expr, &#meter)
            };
            #protection_setup
            #start
            #keyed
            #timed_setup
            #run
        })
    };

    let body = match body {
        Body::Plain => retry_loop(quote!(#block)),
        Body::AsyncTrait => {
            shape::wrap_async_trait(&mut block, retry_loop);
            let stmts = &block.stmts;
            quote!(#(#stmts)*)
        }
        Body::Instrumented => {
            let stmts = &block.stmts;
            let stmts = quote!(#(#stmts)*);
            // `Body::of` checked that the marked block is there.
            shape::wrap_instrumented(stmts.clone(), &mut { retry_loop }).unwrap_or(stmts)
        }
    };
    quote! {
        #(#outer)*
        #vis #sig {
            #(#inner)*
            #body
        }
    }
}

/// What the hedged loop is made of.
struct HedgeParts<'a> {
    krate: &'a Path,
    call: &'a Ident,
    /// `after_hedged`, spanned at the return type.
    after: Ident,
    classifier: &'a Ident,
    hook: &'a Ident,
    ret: &'a Type,
    /// The async block of one attempt.
    attempt: TokenStream,
    sleep: &'a TokenStream,
    /// The name of the attempt timeout, with `attempt_timeout`.
    timeout: Option<&'a Ident>,
    retry_if: Option<&'a Path>,
    delay: TokenStream,
}

/// The hedged loop (`hedge = ...`): the attempt future is made afresh for every attempt that
/// starts, timed by the same timeout as a sequential attempt, and an `Ok` passed through
/// `retry_if`.
fn hedged(parts: HedgeParts<'_>) -> TokenStream {
    let HedgeParts {
        krate,
        call,
        after,
        classifier,
        hook,
        ret,
        attempt,
        sleep,
        timeout,
        retry_if,
        delay,
    } = parts;
    let out = Ident::new("__rk_out", Span::mixed_site());
    let timeout = match timeout {
        Some(timeout) => quote!(&#timeout),
        None => quote!(&#krate::run::NoTimeout),
    };
    let then = match retry_if {
        Some(flag) => quote!(|#out| #krate::run::expand::reject_if(#out, #flag)),
        None => quote!(|#out| #out),
    };
    quote!(#krate::run::retry_hedged!(
        #call.#after(&#classifier, &mut #hook) <- #attempt,
        outcome: #ret, timeout: #timeout, then: #then, sleep: #sleep, hedge: #delay
    ))
}

/// Whether a type's tokens hold a reference or a lifetime.
fn borrows(tokens: &TokenStream) -> bool {
    tokens.clone().into_iter().any(|tt| match tt {
        proc_macro2::TokenTree::Punct(p) => p.as_char() == '&' || p.as_char() == '\'',
        proc_macro2::TokenTree::Group(g) => borrows(&g.stream()),
        _ => false,
    })
}

/// Whether `tokens` contain a `_` (an inferred type).
fn contains_infer(tokens: &TokenStream) -> bool {
    tokens.clone().into_iter().any(|tt| match tt {
        proc_macro2::TokenTree::Ident(i) => i == "_",
        proc_macro2::TokenTree::Group(g) => contains_infer(&g.stream()),
        _ => false,
    })
}

/// The failure hook paired with the error's `Display`, found by autoref specialisation on the
/// declared outcome type (see `retry_runtime::observe`). The hook, not the classifier, carries
/// it, so that a missing `Classify` impl is still reported about the classifier alone.
fn described(hook: TokenStream, ret: &Type, had_impl_trait: bool, krate: &Path) -> TokenStream {
    if had_impl_trait {
        // `_` in the outcome type cannot be named outside the body; go without the text.
        return hook;
    }
    quote!({
        #[allow(unused_imports)]
        use #krate::__private::{ViaDisplay as _, ViaNothing as _};
        (&#krate::__private::DisplayProbe::<#ret>::new()).described(#hook)
    })
}

fn classifier_expr(args: &Args, krate: &Path, ret: &Type, had_impl_trait: bool) -> TokenStream {
    let retry_after = args.path("retry_after");
    // As for the hook: a `classify` function of the wrong signature is a type mismatch at the
    // value, naming the error type.
    let class = args.path("classify").map(|class| {
        if had_impl_trait {
            return quote!(#class);
        }
        let e = Ident::new("__rk_error", Span::mixed_site().located_at(class.span()));
        quote_spanned!(class.span()=>
            |#e: &#krate::run::expand::ErrorOf<#ret>| -> #krate::ErrorClass { #class(#e) }
        )
    });
    match (class, retry_after) {
        (None, None) => quote!(#krate::run::ByTrait),
        (Some(class), None) => quote!(#class),
        (class, Some(retry_after)) => {
            let class = match class {
                Some(path) => quote!(#path),
                None => quote!(#krate::run::expand::class_of),
            };
            quote!(#krate::run::WithRetryAfter(#class, #retry_after))
        }
    }
}

/// Replace `impl Trait` anywhere in a type with `_`, so that a return type such as
/// `Result<impl Display, E>` can annotate an expression.
fn erase_impl_trait(ty: Type) -> Type {
    match ty {
        Type::ImplTrait(t) => Type::Infer(syn::TypeInfer {
            attrs: Vec::new(),
            underscore_token: syn::Token![_](t.span()),
        }),
        Type::Path(mut p) => {
            for segment in &mut p.path.segments {
                if let syn::PathArguments::AngleBracketed(generic) = &mut segment.arguments {
                    for arg in &mut generic.args {
                        if let syn::GenericArgument::Type(t) = arg {
                            *t = erase_impl_trait(t.clone());
                        }
                    }
                }
            }
            Type::Path(p)
        }
        Type::Reference(mut r) => {
            *r.elem = erase_impl_trait(*r.elem);
            Type::Reference(r)
        }
        Type::Tuple(mut t) => {
            for elem in &mut t.elems {
                *elem = erase_impl_trait(elem.clone());
            }
            Type::Tuple(t)
        }
        Type::Slice(mut s) => {
            *s.elem = erase_impl_trait(*s.elem);
            Type::Slice(s)
        }
        Type::Array(mut a) => {
            *a.elem = erase_impl_trait(*a.elem);
            Type::Array(a)
        }
        Type::Paren(mut p) => {
            *p.elem = erase_impl_trait(*p.elem);
            Type::Paren(p)
        }
        Type::Group(mut g) => {
            *g.elem = erase_impl_trait(*g.elem);
            Type::Group(g)
        }
        other => other,
    }
}
