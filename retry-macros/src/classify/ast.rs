//! The derive input as a borrowed tree: the user's syntax plus the parsed tags of each part.

use super::attr::{self, Attrs, Place};
use crate::errors::Errors;
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Generics, Ident, Index, Member, Type};

pub(crate) enum Input<'a> {
    Enum(Enum<'a>),
    Struct(Struct<'a>),
    Union(Union<'a>),
}

pub(crate) struct Enum<'a> {
    pub(crate) original: &'a DeriveInput,
    pub(crate) attrs: Attrs<'a>,
    pub(crate) variants: Vec<Variant<'a>>,
}

/// A struct is classified like a single variant: its own tag, its own fields.
pub(crate) struct Struct<'a> {
    pub(crate) original: &'a DeriveInput,
    pub(crate) body: Variant<'a>,
}

pub(crate) struct Union<'a> {
    pub(crate) original: &'a DeriveInput,
    pub(crate) attrs: Attrs<'a>,
    pub(crate) union_token: &'a syn::token::Union,
}

/// An enum variant, or the body of a struct.
pub(crate) struct Variant<'a> {
    pub(crate) ident: &'a Ident,
    /// `None` for a struct, whose pattern is `Self { .. }`.
    pub(crate) variant: Option<&'a Ident>,
    /// How messages name it: ``variant `Reset` `` or ``struct `Timeout` ``.
    pub(crate) owner: String,
    pub(crate) attrs: Attrs<'a>,
    pub(crate) fields: Vec<Field<'a>>,
}

pub(crate) struct Field<'a> {
    pub(crate) original: &'a syn::Field,
    /// How messages name it: ``field `wait` of variant `Throttled` ``.
    pub(crate) owner: String,
    pub(crate) attrs: Attrs<'a>,
    pub(crate) member: Member,
    pub(crate) ty: &'a Type,
}

impl<'a> Input<'a> {
    pub(crate) fn from_syn(input: &'a DeriveInput, errors: &mut Errors) -> Self {
        let name = &input.ident;
        match &input.data {
            Data::Enum(data) => {
                let owner = format!("enum `{name}`");
                Input::Enum(Enum {
                    original: input,
                    attrs: attr::get(&input.attrs, Place::Enum, &owner, errors),
                    variants: data
                        .variants
                        .iter()
                        .map(|v| {
                            let owner = format!("variant `{}`", v.ident);
                            Variant::from_syn(
                                &v.ident,
                                Some(&v.ident),
                                owner,
                                &v.attrs,
                                &v.fields,
                                Place::Variant,
                                errors,
                            )
                        })
                        .collect(),
                })
            }
            Data::Struct(data) => Input::Struct(Struct {
                original: input,
                body: Variant::from_syn(
                    name,
                    None,
                    format!("struct `{name}`"),
                    &input.attrs,
                    &data.fields,
                    Place::Struct,
                    errors,
                ),
            }),
            Data::Union(data) => {
                let owner = format!("union `{name}`");
                Input::Union(Union {
                    original: input,
                    attrs: attr::get(&input.attrs, Place::Union, &owner, errors),
                    union_token: &data.union_token,
                })
            }
        }
    }

    pub(crate) fn original(&self) -> &'a DeriveInput {
        match self {
            Input::Enum(e) => e.original,
            Input::Struct(s) => s.original,
            Input::Union(u) => u.original,
        }
    }

    pub(crate) fn generics(&self) -> &'a Generics {
        &self.original().generics
    }

    /// The path generated code uses for the runtime: `crate = ...`, or the facade.
    pub(crate) fn krate(&self) -> TokenStream {
        let attrs = match self {
            Input::Enum(e) => &e.attrs,
            Input::Struct(s) => &s.body.attrs,
            Input::Union(u) => &u.attrs,
        };
        match &attrs.krate {
            Some(setting) => {
                let path = &setting.value;
                quote!(#path)
            }
            None => quote!(::retry_kit),
        }
    }
}

impl<'a> Variant<'a> {
    fn from_syn(
        ident: &'a Ident,
        variant: Option<&'a Ident>,
        owner: String,
        attrs: &'a [syn::Attribute],
        fields: &'a syn::Fields,
        place: Place,
        errors: &mut Errors,
    ) -> Self {
        let attrs = attr::get(attrs, place, &owner, errors);
        let fields = fields
            .iter()
            .enumerate()
            .map(|(i, field)| Field::from_syn(i, field, &owner, errors))
            .collect();
        Variant {
            ident,
            variant,
            owner,
            attrs,
            fields,
        }
    }

    /// The fields marked `#[classify(retry_after)]`, in declaration order.
    pub(crate) fn retry_after_fields(&self) -> impl Iterator<Item = &Field<'a>> {
        self.fields.iter().filter(|f| f.attrs.retry_after.is_some())
    }
}

impl<'a> Field<'a> {
    fn from_syn(index: usize, field: &'a syn::Field, parent: &str, errors: &mut Errors) -> Self {
        let (member, owner) = match &field.ident {
            Some(name) => (
                Member::Named(name.clone()),
                format!("field `{name}` of {parent}"),
            ),
            None => (
                Member::Unnamed(Index::from(index)),
                format!("field {index} of {parent}"),
            ),
        };
        Field {
            original: field,
            attrs: attr::get(&field.attrs, Place::Field, &owner, errors),
            owner,
            member,
            ty: &field.ty,
        }
    }
}
