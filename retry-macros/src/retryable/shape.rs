//! Where the retry loop goes: around the function's body, or around the user's block inside
//! what another attribute already made of the function.
//!
//! - `#[async_trait]` on the impl expands first and turns each `async fn` into a sync `fn`
//!   returning `Pin<Box<dyn Future>>`, whose `async move` block ends in
//!   `let __ret: R = { <the user's block> };`. The loop replaces that block, so the arguments
//!   are moved into the future once and every attempt borrows them afresh.
//! - `#[tracing::instrument]` above `#[retryable]` expands first too and wraps the user's block
//!   (which it marks with an `if false { let __tracing_attr_fake_return ... }` that fixes its
//!   type) in one span per call. The loop goes around that marked block, inside the span, so the
//!   call keeps one span and the retry events land in it, as with the other order. A tracing
//!   expansion without the mark cannot be taken apart safely: that is an error saying which
//!   order to use.

use super::attr::Errors;
use super::fresh::{self, Binding};
use proc_macro2::{Group, TokenStream, TokenTree};
use syn::{Block, Expr, ItemFn, Pat, Stmt, Type};

/// What the function's body is.
pub(crate) enum Body {
    /// The body as the user wrote it.
    Plain,
    /// An `#[async_trait]` method's body.
    AsyncTrait,
    /// A body `#[tracing::instrument]` rewrote.
    Instrumented,
}

impl Body {
    /// Recognise the body of `func`, taking `mut` off the by-value bindings that an
    /// `#[async_trait]` expansion moved into its future. Returns the kind, and for an async trait
    /// method the declared output type (the signature only shows the boxed future).
    pub(crate) fn of(
        func: &mut ItemFn,
        bindings: &mut Vec<Binding>,
        errors: &mut Errors,
    ) -> (Body, Option<Type>) {
        if func.sig.asyncness.is_none() {
            let by_value_self = func.sig.receiver().is_some_and(|r| {
                matches!(
                    r.kind,
                    syn::ReceiverKind::Value | syn::ReceiverKind::Typed(..)
                )
            });
            if let Some(ret) = async_trait_output(&mut func.block, by_value_self, bindings, errors)
            {
                return (Body::AsyncTrait, Some(ret));
            }
        }
        let stmts = &func.block.stmts;
        let tokens = quote::quote!(#(#stmts)*);
        if contains_ident(&tokens, "__tracing_attr_span") {
            if wrap_instrumented(tokens, &mut |block| block).is_none() {
                errors.at_span(
                    proc_macro2::Span::call_site(),
                    "`#[tracing::instrument]` is above `#[retryable]`, and its expansion (from a tracing-attributes version this crate does not know) hides the function's own block, so each attempt would get a span of its own; put `#[retryable(...)]` above `#[tracing::instrument]`: one span per call, with the retry events inside it",
                );
            }
            return (Body::Instrumented, None);
        }
        (Body::Plain, None)
    }
}

/// The `async move` block of an `#[async_trait]` body: `Box::pin(async move { ... })`.
fn async_trait_block(block: &mut Block) -> Option<&mut Block> {
    let [Stmt::Expr(Expr::Call(call), None)] = &mut block.stmts[..] else {
        return None;
    };
    let Expr::Path(func) = &*call.func else {
        return None;
    };
    if func.path.segments.last()?.ident != "pin" || call.args.len() != 1 {
        return None;
    }
    match call.args.first_mut()? {
        Expr::Async(future) if future.capture.is_some() => Some(&mut future.block),
        _ => None,
    }
}

/// Whether `stmt` is `let __ret: R = { ... };`, returning `R`.
fn ret_local(stmt: &Stmt) -> Option<&Type> {
    let Stmt::Local(local) = stmt else {
        return None;
    };
    let Pat::Type(typed) = &local.pat else {
        return None;
    };
    let Pat::Ident(name) = &*typed.pat else {
        return None;
    };
    let init = local.init.as_ref()?;
    (name.ident == "__ret" && matches!(*init.expr, Expr::Block(_))).then_some(&*typed.ty)
}

/// For an `#[async_trait]` body: the declared output type. The argument bindings it declares
/// before the user's block lose their by-value `mut` (each attempt copies them afresh).
fn async_trait_output(
    block: &mut Block,
    by_value_self: bool,
    bindings: &mut Vec<Binding>,
    errors: &mut Errors,
) -> Option<Type> {
    let future = async_trait_block(block)?;
    let at = future.stmts.iter().position(|s| ret_local(s).is_some())?;
    for stmt in &mut future.stmts[..at] {
        let Stmt::Local(local) = stmt else { continue };
        if let Pat::Ident(p) = &local.pat {
            if p.ident == "__self" {
                // `let mut __self = self;` stands for `&mut self` as well as `mut self`; only
                // the by-value receiver carries changes between attempts.
                if let (true, Some(mutability)) = (by_value_self, &p.mutability) {
                    errors.at(mutability, fresh::MUT_SELF);
                }
                continue;
            }
        }
        fresh::take_from_pattern(&mut local.pat, bindings, errors);
    }
    ret_local(&future.stmts[at]).cloned()
}

/// Replace the user's block inside an `#[async_trait]` body with what `wrap` makes of it.
pub(crate) fn wrap_async_trait(block: &mut Block, wrap: impl FnOnce(TokenStream) -> TokenStream) {
    let Some(future) = async_trait_block(block) else {
        return;
    };
    let Some(at) = future.stmts.iter().position(|s| ret_local(s).is_some()) else {
        return;
    };
    if let Stmt::Local(syn::Local {
        init: Some(init), ..
    }) = &mut future.stmts[at]
    {
        let user_block = &init.expr;
        let wrapped = wrap(quote::quote!(#user_block));
        *init.expr = Expr::Verbatim(wrapped);
    }
}

/// Replace the user's block inside a `#[tracing::instrument]` body (the brace group that starts
/// with tracing's type-fixing `if false { let __tracing_attr_fake_return ... }`) with what
/// `wrap` makes of it. `None` if there is no such block.
pub(crate) fn wrap_instrumented(
    body: TokenStream,
    wrap: &mut dyn FnMut(TokenStream) -> TokenStream,
) -> Option<TokenStream> {
    let mut found = false;
    let out = replace_marked(body, wrap, &mut found);
    found.then_some(out)
}

fn replace_marked(
    tokens: TokenStream,
    wrap: &mut dyn FnMut(TokenStream) -> TokenStream,
    found: &mut bool,
) -> TokenStream {
    tokens
        .into_iter()
        .flat_map(|tt| match tt {
            TokenTree::Group(g) if !*found && is_marked(&g) => {
                *found = true;
                wrap(TokenTree::Group(g).into())
            }
            TokenTree::Group(g) => {
                let mut inner = Group::new(g.delimiter(), replace_marked(g.stream(), wrap, found));
                inner.set_span(g.span());
                TokenTree::Group(inner).into()
            }
            other => TokenStream::from(other),
        })
        .collect()
}

/// `{ ... if false { let __tracing_attr_fake_return ... } ... }`
fn is_marked(group: &Group) -> bool {
    if group.delimiter() != proc_macro2::Delimiter::Brace {
        return false;
    }
    let tokens: Vec<TokenTree> = group.stream().into_iter().collect();
    tokens.windows(3).any(|w| match w {
        [
            TokenTree::Ident(i),
            TokenTree::Ident(f),
            TokenTree::Group(edge),
        ] => {
            i == "if" && f == "false" && {
                let mut inside = edge.stream().into_iter();
                matches!(
                    (inside.next(), inside.next()),
                    (Some(TokenTree::Ident(l)), Some(TokenTree::Ident(n)))
                        if l == "let" && n == "__tracing_attr_fake_return"
                )
            }
        }
        _ => false,
    })
}

fn contains_ident(tokens: &TokenStream, name: &str) -> bool {
    tokens.clone().into_iter().any(|tt| match tt {
        TokenTree::Ident(i) => i == name,
        TokenTree::Group(g) => contains_ident(&g.stream(), name),
        _ => false,
    })
}
