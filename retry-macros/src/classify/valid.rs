//! The rules a parsed input must follow, beyond what each attribute says on its own.
//!
//! Expansion asks the same questions ([`delegate_field`], [`retry_after_field`]) so that it
//! uses only the parts that passed, and falls back where they did not.

use super::ast::{Field, Input, Variant};
use super::attr::Tag;
use crate::errors::Errors;
use syn::{GenericArgument, PathArguments, Type};

pub(crate) fn check(input: &Input<'_>, errors: &mut Errors) {
    match input {
        Input::Enum(e) => {
            for variant in &e.variants {
                let covered = variant.attrs.tag.is_some()
                    || variant.attrs.class_attempted
                    || e.attrs.default.is_some()
                    || e.attrs.class_attempted;
                if !covered {
                    errors.at(
                        variant.ident,
                        format!(
                            "{} has no class: tag it `#[classify(transient)]`, `permanent`, \
                             `idempotent_only`, `delegate` or `with = path`, or give enum `{}` \
                             a `#[classify(default = ...)]` for its untagged variants",
                            variant.owner, e.original.ident,
                        ),
                    );
                }
                check_body(variant, errors);
            }
        }
        Input::Struct(s) => {
            if s.body.attrs.tag.is_none() && !s.body.attrs.class_attempted {
                errors.at(
                    s.body.ident,
                    format!(
                        "{} has no class: tag it `#[classify(transient)]`, `permanent`, \
                         `idempotent_only`, `delegate` or `with = path`",
                        s.body.owner,
                    ),
                );
            }
            check_body(&s.body, errors);
        }
        Input::Union(u) => errors.at(
            u.union_token,
            format!(
                "`Classify` cannot be derived for union `{}`: a union does not know which of its \
                 fields is set; use an enum, or implement `Classify` by hand",
                u.original.ident,
            ),
        ),
    }
}

fn check_body(variant: &Variant<'_>, errors: &mut Errors) {
    let owner = &variant.owner;
    let delegate = match &variant.attrs.tag {
        Some(setting) if matches!(setting.value, Tag::Delegate) => Some(&setting.key),
        _ => None,
    };
    if let Some(key) = delegate {
        let count = variant.fields.len();
        if count != 1 {
            let has = match count {
                0 => "has no fields".to_owned(),
                n => format!("has {n} fields; to decide from several fields, use `with = path`"),
            };
            errors.at(
                key,
                format!(
                    "`delegate` on {owner} needs exactly one field, whose `Classify` impl gives \
                     the class and retry-after, but it {has}"
                ),
            );
        }
    }

    let mut marked = variant.retry_after_fields();
    if let Some(first) = marked.next() {
        for extra in marked {
            if let Some(setting) = &extra.attrs.retry_after {
                errors.at(
                    setting.original,
                    format!(
                        "{owner} has `retry_after` on two fields, {} and {}: the wait comes from \
                         one field; keep one",
                        field_name(first),
                        field_name(extra),
                    ),
                );
            }
        }
    }
    for field in variant.retry_after_fields() {
        let Some(setting) = &field.attrs.retry_after else {
            continue;
        };
        if delegate.is_some() {
            errors.at(
                setting.original,
                format!(
                    "`retry_after` on {owner} conflicts with `delegate`, which already takes the \
                     retry-after from the delegated field's `Classify` impl; remove one"
                ),
            );
        } else if let Some(found) = not_a_duration(field.ty) {
            errors.at(
                field.ty,
                format!(
                    "`retry_after` reads a `Duration` or an `Option<Duration>`, but {} is {found}: \
                     store the wait as a `std::time::Duration`",
                    field.owner,
                ),
            );
        }
    }
}

/// The field whose `Classify` impl a `delegate` tag forwards to, when the tag is usable.
pub(crate) fn delegate_field<'v, 'a>(variant: &'v Variant<'a>) -> Option<&'v Field<'a>> {
    match (&variant.attrs.tag, variant.fields.as_slice()) {
        (Some(setting), [field]) if matches!(setting.value, Tag::Delegate) => Some(field),
        _ => None,
    }
}

/// The field a variant's `retry_after` is read from, when the marking is usable: the first one
/// marked, unless the variant delegates or the type is certainly wrong (already reported).
pub(crate) fn retry_after_field<'v, 'a>(variant: &'v Variant<'a>) -> Option<&'v Field<'a>> {
    if matches!(&variant.attrs.tag, Some(s) if matches!(s.value, Tag::Delegate)) {
        return None;
    }
    variant
        .retry_after_fields()
        .next()
        .filter(|field| not_a_duration(field.ty).is_none())
}

fn field_name(field: &Field<'_>) -> String {
    match &field.original.ident {
        Some(name) => format!("`{name}`"),
        None => match &field.member {
            syn::Member::Unnamed(index) => format!("`{}`", index.index),
            syn::Member::Named(name) => format!("`{name}`"),
        },
    }
}

/// Why `ty` certainly is not a `Duration` or `Option<Duration>`, judged from its syntax.
///
/// Only types that cannot be an alias of `Duration` are rejected here (numbers, strings,
/// tuples, ...); anything else, such as `type Wait = Duration`, is left to the
/// `IntoRetryAfter` bound in the expansion, whose error points at the same type.
fn not_a_duration(ty: &Type) -> Option<String> {
    const PRIMITIVES: &[&str] = &[
        "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
        "f32", "f64", "bool", "char", "str", "String",
    ];
    let shown = || {
        let text = quote::quote!(#ty).to_string();
        format!("`{}`", tidy(&text))
    };
    match ty {
        Type::Group(group) => not_a_duration(&group.elem),
        Type::Paren(paren) => not_a_duration(&paren.elem),
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?;
            if path.path.segments.len() == 1
                && PRIMITIVES.contains(&last.ident.to_string().as_str())
            {
                return Some(shown());
            }
            if last.ident != "Option" {
                return None;
            }
            let PathArguments::AngleBracketed(args) = &last.arguments else {
                return None;
            };
            match args.args.first() {
                Some(GenericArgument::Type(inner)) if args.args.len() == 1 => {
                    not_a_duration(inner).map(|_| shown())
                }
                _ => None,
            }
        }
        Type::Tuple(_)
        | Type::Array(_)
        | Type::Slice(_)
        | Type::Reference(_)
        | Type::Ptr(_)
        | Type::FnPtr(_)
        | Type::Never(_) => Some(shown()),
        _ => None,
    }
}

/// `Option < u64 >` as a user writes it: `Option<u64>`.
fn tidy(text: &str) -> String {
    text.replace(" < ", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
        .replace("& ", "&")
}
