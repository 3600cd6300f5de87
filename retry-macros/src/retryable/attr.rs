//! Parsing `#[retryable(...)]` arguments into [`Args`], driven by the table in [`keys`].
//!
//! Every mistake is collected, each at its own token, so that one compile shows them all.

use super::suggest::unknown_key_message;
pub(crate) use crate::errors::Errors;
use crate::vocabulary::check;
use crate::vocabulary::keys::{self, Key, Takes};
use proc_macro2::TokenStream;
use quote::ToTokens;
use std::time::Duration;
use syn::meta::ParseNestedMeta;
use syn::{Expr, ExprLit, Ident, Lit, Path};

/// A parsed value, of the kind its key [`Takes`].
pub(crate) enum Value {
    Count(u32),
    Factor(f64),
    Duration(Duration),
    /// The variant of the runtime's enum that the word names.
    Word(&'static str),
    Flag(bool),
    Path(Path),
    Expr(Expr),
}

/// A key as written, the table's entry for it, and its value.
pub(crate) struct Setting {
    pub(crate) key: Ident,
    pub(crate) spec: &'static Key,
    pub(crate) value: Value,
}

/// The keys set, in the order written.
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) settings: Vec<Setting>,
}

impl Args {
    /// The setting of the key `name`, if it was set.
    pub(crate) fn get(&self, name: &str) -> Option<&Setting> {
        debug_assert!(keys::find(name).is_some(), "no key `{name}` in the table");
        self.settings.iter().find(|s| s.spec.name == name)
    }

    /// The path given to the key `name`.
    pub(crate) fn path(&self, name: &str) -> Option<&Path> {
        match &self.get(name)?.value {
            Value::Path(path) => Some(path),
            _ => None,
        }
    }

    /// The duration given to the key `name`.
    pub(crate) fn duration(&self, name: &str) -> Option<Duration> {
        match self.get(name)?.value {
            Value::Duration(d) => Some(d),
            _ => None,
        }
    }

    /// The word given to the key `name` (the runtime variant it names).
    pub(crate) fn word(&self, name: &str) -> Option<&'static str> {
        match self.get(name)?.value {
            Value::Word(variant) => Some(variant),
            _ => None,
        }
    }

    /// The expression given to the key `name`.
    pub(crate) fn expr(&self, name: &str) -> Option<&Expr> {
        match &self.get(name)?.value {
            Value::Expr(expr) => Some(expr),
            _ => None,
        }
    }
}

/// Parse the attribute's arguments. Errors in values are collected in `errors`; only tokens that
/// are not `key = value` pairs at all end the parse early (and land in `errors` too).
pub(crate) fn parse(tokens: TokenStream, errors: &mut Errors) -> Args {
    let mut args = Args::default();
    let parser = syn::meta::parser(|meta| args.parse_key(meta, errors));
    if let Err(e) = syn::parse::Parser::parse2(parser, tokens) {
        errors.push(e);
    }
    args
}

impl Args {
    fn parse_key(&mut self, meta: ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<()> {
        let Some(key) = meta
            .path
            .get_ident()
            .cloned()
            .or_else(|| crate_key(&meta.path))
        else {
            // A path such as `a::b = 1`: report it and skip its value.
            let value = skip_value(&meta)?;
            errors.at(
                &meta.path,
                unknown_key_message(&path_text(&meta.path), value.as_ref()),
            );
            return Ok(());
        };
        let name = key.to_string();
        let Some(spec) = keys::find(&name) else {
            let value = skip_value(&meta)?;
            errors.at(&key, unknown_key_message(&name, value.as_ref()));
            return Ok(());
        };
        if spec.takes == Takes::Flag && !meta.input.peek(syn::Token![=]) {
            self.set(key, spec, Value::Flag(true), errors);
            return Ok(());
        }
        let value = ungroup(meta.value()?.parse()?);
        if let Some(value) = parse_value(spec, &value, errors) {
            self.set(key, spec, value, errors);
        }
        Ok(())
    }

    fn set(&mut self, key: Ident, spec: &'static Key, value: Value, errors: &mut Errors) {
        if self.settings.iter().any(|s| s.spec == spec) {
            errors.at(
                &key,
                format!("duplicate key `{key}`: it is already set earlier in this attribute"),
            );
            return;
        }
        self.settings.push(Setting { key, spec, value });
    }
}

/// The value of `spec` in `value`, or an error at `value` saying what it takes. The checks and
/// their messages are the vocabulary's ([`check`]), shared with configuration files.
fn parse_value(spec: &'static Key, value: &Expr, errors: &mut Errors) -> Option<Value> {
    let checked = match &spec.takes {
        Takes::Count => match value {
            Expr::Lit(ExprLit {
                lit: Lit::Int(int), ..
            }) => {
                // Past `i128`, the count is out of range all the same.
                let n = int.base10_parse::<i128>().unwrap_or(i128::MAX);
                check::count(spec, n)
                    .map(Value::Count)
                    .map_err(|e| (int.to_token_stream(), e))
            }
            _ => Err((value.to_token_stream(), check::expected(spec))),
        },
        Takes::Factor => match number(value) {
            Some(m) => check::factor(spec, m)
                .map(Value::Factor)
                .map_err(|e| (value.to_token_stream(), e)),
            None => Err((value.to_token_stream(), check::expected(spec))),
        },
        Takes::Duration => {
            let lit = string_value(spec, value, errors)?;
            check::duration(spec, &lit.value())
                .map(Value::Duration)
                .map_err(|e| (lit.to_token_stream(), e))
        }
        Takes::Word { .. } => {
            let lit = string_value(spec, value, errors)?;
            check::word(spec, &lit.value())
                .map(Value::Word)
                .map_err(|e| (lit.to_token_stream(), e))
        }
        Takes::Flag => match value {
            Expr::Lit(ExprLit {
                lit: Lit::Bool(b), ..
            }) => Ok(Value::Flag(b.value)),
            _ => Err((value.to_token_stream(), check::expected(spec))),
        },
        Takes::Path(_) => match value {
            Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => {
                Ok(Value::Path(p.path.clone()))
            }
            _ => Err((value.to_token_stream(), check::expected(spec))),
        },
        Takes::Expr => Ok(Value::Expr(value.clone())),
    };
    match checked {
        Ok(value) => Some(value),
        Err((at, message)) => {
            errors.at(at, message);
            None
        }
    }
}

/// A value passed through a `macro_rules!` fragment (`$v:literal`, `$v:expr`) arrives wrapped in
/// an invisible group; look through it so that such values parse like written ones.
fn ungroup(value: Expr) -> Expr {
    match value {
        Expr::Group(group) => ungroup(*group.expr),
        other => other,
    }
}

/// `crate` is a keyword, so `meta.path.get_ident()` does not see it.
fn crate_key(path: &Path) -> Option<Ident> {
    let [segment] = path.segments.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    (segment.ident == "crate" && path.leading_colon.is_none()).then(|| segment.ident.clone())
}

fn path_text(path: &Path) -> String {
    quote::quote!(#path).to_string().replace(' ', "")
}

/// Skip an unknown key's value, returning it when it is `= expr` (for the suggestion).
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<Option<Expr>> {
    if meta.input.peek(syn::Token![=]) {
        return Ok(Some(ungroup(meta.value()?.parse()?)));
    }
    if meta.input.peek(syn::token::Paren) {
        let _: proc_macro2::Group = meta.input.parse()?;
    }
    Ok(None)
}

/// A number literal, integer or float.
fn number(value: &Expr) -> Option<f64> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Float(f), ..
        }) => f.base10_parse::<f64>().ok(),
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_parse::<f64>().ok(),
        _ => None,
    }
}

fn string_value<'e>(spec: &Key, value: &'e Expr, errors: &mut Errors) -> Option<&'e syn::LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s),
        _ => {
            errors.at(value, check::expected(spec));
            None
        }
    }
}
