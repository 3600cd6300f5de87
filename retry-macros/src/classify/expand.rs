//! Writing the `Classify` impl.
//!
//! The impl is always emitted. A variant whose tags were wrong is classified `Permanent`, the
//! class that never retries, so the only errors the user sees are the ones already reported.

use super::ast::{Input, Variant};
use super::attr::{Class, Tag};
use super::valid::{delegate_field, retry_after_field};
use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Member, Type};

pub(crate) fn impl_classify(input: &Input<'_>) -> TokenStream {
    let krate = input.krate();
    let generics = input.generics();
    let params: Vec<&Ident> = generics.type_params().map(|p| &p.ident).collect();
    let mut cx = Context {
        krate: &krate,
        params: &params,
        bounds: Vec::new(),
    };

    let (class, retry_after) = match input {
        Input::Enum(e) if e.variants.is_empty() => (quote!(match *self {}), None),
        Input::Enum(e) => {
            let default = e
                .attrs
                .default
                .as_ref()
                .map_or(Class::Permanent, |s| s.value);
            let arms: Vec<(Arm, Option<Arm>)> = e
                .variants
                .iter()
                .map(|v| (cx.class_arm(v, default), cx.retry_after_arm(v)))
                .collect();
            let class_arms = arms.iter().map(|(class, _)| class.in_match());
            let class = quote!(match self { #(#class_arms)* });
            let retry_after = arms.iter().any(|(_, after)| after.is_some()).then(|| {
                let after_arms = e
                    .variants
                    .iter()
                    .zip(&arms)
                    .map(|(v, (_, after))| match after {
                        Some(arm) => arm.in_match(),
                        None => Arm::none(pattern_path(v)).in_match(),
                    });
                quote!(match self { #(#after_arms)* })
            });
            (class, retry_after)
        }
        Input::Struct(s) => {
            let class = cx.class_arm(&s.body, Class::Permanent).in_let();
            let retry_after = cx.retry_after_arm(&s.body).map(|arm| arm.in_let());
            (class, retry_after)
        }
        Input::Union(_) => (quote!(#krate::ErrorClass::Permanent), None),
    };

    let ident = &input.original().ident;
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let where_clause = if cx.bounds.is_empty() {
        quote!(#where_clause)
    } else {
        let existing = where_clause.map(|w| {
            let predicates = &w.predicates;
            if predicates.empty_or_trailing() {
                quote!(#predicates)
            } else {
                quote!(#predicates,)
            }
        });
        let bounds = &cx.bounds;
        quote!(where #existing #(#bounds,)*)
    };
    let retry_after = retry_after.map(|body| {
        quote! {
            fn retry_after(&self) -> ::core::option::Option<::core::time::Duration> {
                #body
            }
        }
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics #krate::Classify for #ident #ty_generics #where_clause {
            fn class(&self) -> #krate::ErrorClass {
                #class
            }
            #retry_after
        }
    }
}

struct Context<'c> {
    krate: &'c TokenStream,
    /// The type parameters of the input: a field type that mentions one needs a bound.
    params: &'c [&'c Ident],
    bounds: Vec<TokenStream>,
}

/// One variant's share of a method: a pattern (binding at most one field) and an expression.
struct Arm {
    /// `Self::Variant`, or `Self` for a struct.
    path: TokenStream,
    bind: Option<Member>,
    expr: TokenStream,
}

impl Context<'_> {
    fn class_arm(&mut self, variant: &Variant<'_>, default: Class) -> Arm {
        let krate = self.krate;
        let path = pattern_path(variant);
        let class = |class: Class| {
            let name = Ident::new(class.variant_name(), Span::call_site());
            quote!(#krate::ErrorClass::#name)
        };
        let tag = variant.attrs.tag.as_ref().map(|s| &s.value);
        let (bind, expr) = match tag {
            Some(Tag::Class(c)) => (None, class(*c)),
            None => (None, class(default)),
            Some(Tag::With(function)) => {
                // A typed local: a function of the wrong shape is reported at its path as a
                // mismatch with `fn(&Self) -> ErrorClass`, which says what is expected.
                let f = Ident::new("__classify_with", Span::mixed_site());
                let expr = quote!({
                    let #f: fn(&Self) -> #krate::ErrorClass = #function;
                    #f(self)
                });
                (None, expr)
            }
            Some(Tag::Delegate) => match delegate_field(variant) {
                Some(field) => {
                    let ty = field.ty;
                    self.bound_if_generic(ty, quote!(#krate::Classify));
                    let inner = binding();
                    let expr = quote!(<#ty as #krate::Classify>::class(#inner));
                    (Some(field.member.clone()), expr)
                }
                None => (None, class(Class::Permanent)),
            },
        };
        Arm { path, bind, expr }
    }

    /// `None` when the variant has no wait of its own.
    fn retry_after_arm(&mut self, variant: &Variant<'_>) -> Option<Arm> {
        let krate = self.krate;
        let inner = binding();
        let (field, expr) = if let Some(field) = delegate_field(variant) {
            let ty = field.ty;
            (
                field,
                quote!(<#ty as #krate::Classify>::retry_after(#inner)),
            )
        } else {
            let field = retry_after_field(variant)?;
            let ty = field.ty;
            // The trait is implemented for the borrowed field (`&Duration`, `&Option<Duration>`).
            // The `&` takes the field type's span so that a wrong type is reported there.
            let bound = quote!(#krate::class::IntoRetryAfter);
            let amp = quote_spanned!(ty.span()=> &);
            let ty = behind_reference(ty);
            if mentions(ty.to_token_stream(), self.params) {
                let lifetime = syn::Lifetime::new("'__classify", Span::mixed_site());
                self.bounds
                    .push(quote!(for<#lifetime> &#lifetime #ty: #bound));
            }
            (
                field,
                quote!(<#amp #ty as #bound>::into_retry_after(#inner)),
            )
        };
        Some(Arm {
            path: pattern_path(variant),
            bind: Some(field.member.clone()),
            expr,
        })
    }

    /// Generic field types need the trait as a bound on the impl; concrete ones are checked at
    /// the use, where the error points at the field's type.
    fn bound_if_generic(&mut self, ty: &Type, bound: TokenStream) {
        if mentions(ty.to_token_stream(), self.params) {
            self.bounds.push(quote!(#ty: #bound));
        }
    }
}

impl Arm {
    fn none(path: TokenStream) -> Self {
        Arm {
            path,
            bind: None,
            expr: quote!(::core::option::Option::None),
        }
    }

    fn pattern(&self) -> TokenStream {
        let path = &self.path;
        match &self.bind {
            Some(member) => {
                let inner = binding();
                quote!(#path { #member: #inner, .. })
            }
            None => quote!(#path { .. }),
        }
    }

    fn in_match(&self) -> TokenStream {
        let pattern = self.pattern();
        let expr = &self.expr;
        quote!(#pattern => #expr,)
    }

    /// The body of a struct's method: bind the field if one is needed, then the expression.
    fn in_let(&self) -> TokenStream {
        let expr = &self.expr;
        match &self.bind {
            Some(_) => {
                let pattern = self.pattern();
                quote!(let #pattern = self; #expr)
            }
            None => expr.clone(),
        }
    }
}

fn pattern_path(variant: &Variant<'_>) -> TokenStream {
    match variant.variant {
        Some(ident) => quote!(Self::#ident),
        None => quote!(Self),
    }
}

/// `ty` as it can follow a `&`: a list of bounds (`dyn A + B`, or a malformed `u32 +` that
/// rustc reports on its own) needs parentheses there, or the `+` is ambiguous and the impl
/// does not parse. Other types are written as they are, so no `unused_parens` lint fires.
fn behind_reference(ty: &Type) -> TokenStream {
    let bounds = match ty {
        Type::TraitObject(t) => &t.bounds,
        Type::ImplTrait(t) => &t.bounds,
        _ => return ty.to_token_stream(),
    };
    if bounds.len() > 1 || bounds.trailing_punct() {
        quote_spanned!(ty.span()=> (#ty))
    } else {
        ty.to_token_stream()
    }
}

/// The one name generated patterns bind; mixed-site, so it cannot collide with the user's.
fn binding() -> Ident {
    Ident::new("__classify_field", Span::mixed_site())
}

/// Whether the tokens name one of `params` (an over-approximation, which only adds a bound
/// that holds anyway).
fn mentions(tokens: TokenStream, params: &[&Ident]) -> bool {
    tokens.into_iter().any(|tree| match tree {
        TokenTree::Ident(ident) => params.iter().any(|p| **p == ident),
        TokenTree::Group(group) => mentions(group.stream(), params),
        _ => false,
    })
}
