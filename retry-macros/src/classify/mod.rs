//! `#[derive(Classify)]`: a first, compact version (variant tags, enum default, `delegate`,
//! `with`, `retry_after` fields).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields, Ident, Path};

#[derive(Clone)]
enum Tag {
    Class(TokenStream),
    Delegate,
    With(Path),
}

pub(crate) fn derive(input: TokenStream) -> TokenStream {
    match syn::parse2::<DeriveInput>(input).and_then(|input| expand(&input)) {
        Ok(tokens) => tokens,
        Err(e) => e.to_compile_error(),
    }
}

fn tag_of(attrs: &[syn::Attribute], default_ok: bool) -> syn::Result<(Option<Tag>, Option<Tag>)> {
    let mut tag = None;
    let mut default = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("classify")) {
        attr.parse_nested_meta(|meta| {
            let class = |name: &str| -> TokenStream {
                let v = format_ident!("{}", name);
                quote!(::retry_kit::ErrorClass::#v)
            };
            if meta.path.is_ident("transient") {
                tag = Some(Tag::Class(class("Transient")));
            } else if meta.path.is_ident("permanent") {
                tag = Some(Tag::Class(class("Permanent")));
            } else if meta.path.is_ident("idempotent_only") {
                tag = Some(Tag::Class(class("IdempotentOnly")));
            } else if meta.path.is_ident("delegate") {
                tag = Some(Tag::Delegate);
            } else if meta.path.is_ident("with") {
                tag = Some(Tag::With(meta.value()?.parse()?));
            } else if default_ok && meta.path.is_ident("default") {
                let word: Ident = meta.value()?.parse()?;
                let name = match word.to_string().as_str() {
                    "transient" => "Transient",
                    "permanent" => "Permanent",
                    "idempotent_only" => "IdempotentOnly",
                    _ => {
                        return Err(meta.error(
                            "expected `default = transient`, `permanent` or `idempotent_only`",
                        ));
                    }
                };
                default = Some(Tag::Class(class(name)));
            } else {
                return Err(meta.error(
                    "expected `transient`, `permanent`, `idempotent_only`, `delegate` or `with = path`",
                ));
            }
            Ok(())
        })?;
    }
    Ok((tag, default))
}

fn retry_after_field(fields: &Fields) -> syn::Result<Option<(usize, Option<Ident>)>> {
    for (i, field) in fields.iter().enumerate() {
        if let Some(attr) = field.attrs.iter().find(|a| a.path().is_ident("classify")) {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("retry_after") {
                    Ok(())
                } else {
                    Err(meta.error("expected `retry_after` on a field"))
                }
            })?;
            return Ok(Some((i, field.ident.clone())));
        }
    }
    Ok(None)
}

fn binding(index: usize, ident: &Option<Ident>) -> TokenStream {
    match ident {
        Some(name) => quote!(#name),
        None => {
            let i = syn::Index::from(index);
            quote!(#i)
        }
    }
}

fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut class_arms = Vec::new();
    let mut after_arms = Vec::new();
    let mut bounds = Vec::new();
    let (own, default) = tag_of(&input.attrs, true)?;
    let variants: Vec<(TokenStream, &Fields, Option<Tag>)> = match &input.data {
        Data::Enum(e) => e
            .variants
            .iter()
            .map(|v| {
                let ident = &v.ident;
                let (tag, _) = tag_of(&v.attrs, false)?;
                let tag = tag.or_else(|| default.clone()).ok_or_else(|| {
                    syn::Error::new_spanned(
                        ident,
                        format!("variant `{ident}` has no `#[classify(...)]` tag and the enum has no `#[classify(default = ...)]`"),
                    )
                })?;
                Ok((quote!(Self::#ident), &v.fields, Some(tag)))
            })
            .collect::<syn::Result<_>>()?,
        Data::Struct(s) => {
            let tag = own.ok_or_else(|| {
                syn::Error::new_spanned(name, "add `#[classify(transient | permanent | idempotent_only | delegate | with = path)]` to the struct")
            })?;
            vec![(quote!(Self), &s.fields, Some(tag))]
        }
        Data::Union(u) => {
            return Err(syn::Error::new_spanned(
                u.union_token,
                "`Classify` cannot be derived for a union",
            ));
        }
    };
    for (path, fields, tag) in variants {
        let tag = tag.unwrap_or(Tag::Class(quote!(::retry_kit::ErrorClass::Permanent)));
        let class = match &tag {
            Tag::Class(c) => quote!(#path { .. } => #c),
            Tag::With(f) => quote!(#path { .. } => #f(self)),
            Tag::Delegate => {
                let field = fields.iter().next().ok_or_else(|| {
                    syn::Error::new_spanned(
                        &path,
                        "`delegate` needs a variant with exactly one field",
                    )
                })?;
                let ty = &field.ty;
                bounds.push(quote!(#ty: ::retry_kit::Classify));
                let b = binding(0, &field.ident);
                let arm = quote!(#path { #b: __rk_inner, .. });
                after_arms.push(quote!(#arm => ::retry_kit::Classify::retry_after(__rk_inner)));
                quote!(#arm => ::retry_kit::Classify::class(__rk_inner))
            }
        };
        class_arms.push(class);
        if !matches!(tag, Tag::Delegate) {
            if let Some((i, ident)) = retry_after_field(fields)? {
                let b = binding(i, &ident);
                after_arms.push(quote!(#path { #b: __rk_wait, .. } => ::retry_kit::__private::IntoRetryAfter::into_retry_after(__rk_wait)));
            }
        }
    }
    let extra_where = if bounds.is_empty() {
        quote!(#where_clause)
    } else if let Some(w) = where_clause {
        let preds = &w.predicates;
        quote!(where #preds, #(#bounds),*)
    } else {
        quote!(where #(#bounds),*)
    };
    Ok(quote! {
        #[automatically_derived]
        impl #impl_generics ::retry_kit::Classify for #name #ty_generics #extra_where {
            fn class(&self) -> ::retry_kit::ErrorClass {
                #[allow(unreachable_patterns)]
                match self {
                    #(#class_arms,)*
                }
            }
            fn retry_after(&self) -> ::core::option::Option<::core::time::Duration> {
                #[allow(unreachable_patterns)]
                match self {
                    #(#after_arms,)*
                    _ => ::core::option::Option::None,
                }
            }
        }
    })
}
