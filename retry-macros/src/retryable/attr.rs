//! Parsing `#[retryable(...)]` arguments into [`Args`], driven by the table in [`keys`].
//!
//! Every mistake is collected, each at its own token, so that one compile shows them all.

use super::duration::parse_duration;
use super::keys::{self, Key, Takes};
use super::suggest::unknown_key_message;
pub(crate) use crate::errors::Errors;
use crate::spelling::nearest;
use proc_macro2::TokenStream;
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

/// The value of `spec` in `value`, or an error at `value` saying what it takes.
fn parse_value(spec: &'static Key, value: &Expr, errors: &mut Errors) -> Option<Value> {
    match &spec.takes {
        Takes::Count => attempts(value, errors).map(Value::Count),
        Takes::Factor => multiplier(value, errors).map(Value::Factor),
        Takes::Duration => duration(spec, value, errors).map(Value::Duration),
        Takes::Word { words, .. } => choice(spec, value, words, errors).map(Value::Word),
        Takes::Flag => match value {
            Expr::Lit(ExprLit {
                lit: Lit::Bool(b), ..
            }) => Some(Value::Flag(b.value)),
            _ => {
                errors.at(
                    value,
                    format!(
                        "`{0}` is a flag: write `{0}` or `{0} = true`/`false`",
                        spec.name
                    ),
                );
                None
            }
        },
        Takes::Path(what) => as_path(spec, what, value, errors).map(Value::Path),
        Takes::Expr => Some(Value::Expr(value.clone())),
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

fn attempts(value: &Expr, errors: &mut Errors) -> Option<u32> {
    let Expr::Lit(ExprLit {
        lit: Lit::Int(int), ..
    }) = value
    else {
        errors.at(
            value,
            "`attempts` takes a whole number of attempts, such as `attempts = 5`",
        );
        return None;
    };
    match int.base10_parse::<u32>() {
        Ok(0) => {
            errors.at(
                int,
                "`attempts` counts every attempt including the first, so it must be at least 1",
            );
            None
        }
        Ok(n) => Some(n),
        Err(_) => {
            errors.at(
                int,
                format!("`attempts` must be a whole number from 1 to {}", u32::MAX),
            );
            None
        }
    }
}

fn multiplier(value: &Expr, errors: &mut Errors) -> Option<f64> {
    let parsed = match value {
        Expr::Lit(ExprLit {
            lit: Lit::Float(f), ..
        }) => f.base10_parse::<f64>().ok(),
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_parse::<f64>().ok(),
        _ => None,
    };
    match parsed {
        Some(m) if m.is_finite() && m > 1.0 => Some(m),
        Some(_) => {
            errors.at(
                value,
                "`multiplier` must be a number greater than 1, such as `multiplier = 1.5`; for a constant delay use `backoff = \"fixed\"`",
            );
            None
        }
        None => {
            errors.at(
                value,
                "`multiplier` takes a number greater than 1, such as `multiplier = 2.0`",
            );
            None
        }
    }
}

fn string_value<'e>(spec: &Key, value: &'e Expr, errors: &mut Errors) -> Option<&'e syn::LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s),
        _ => {
            errors.at(
                value,
                format!("`{}` takes a string, such as `{}`", spec.name, spec.example),
            );
            None
        }
    }
}

/// The runtime variant that the word in `value` names.
fn choice(
    spec: &Key,
    value: &Expr,
    words: &[(&'static str, &'static str)],
    errors: &mut Errors,
) -> Option<&'static str> {
    let lit = string_value(spec, value, errors)?;
    let text = lit.value();
    if let Some((_, variant)) = words.iter().find(|(word, _)| *word == text) {
        return Some(variant);
    }
    let names: Vec<&str> = words.iter().map(|(w, _)| *w).collect();
    let hint = match nearest(&text, &names) {
        Some(near) => format!("did you mean \"{near}\"? "),
        None => String::new(),
    };
    let listed: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    errors.at(
        lit,
        format!(
            "unknown {} \"{text}\"; {hint}expected one of {}",
            spec.name,
            listed.join(", ")
        ),
    );
    None
}

fn duration(spec: &Key, value: &Expr, errors: &mut Errors) -> Option<Duration> {
    let lit = string_value(spec, value, errors)?;
    match parse_duration(&lit.value()) {
        Ok(d) => Some(d),
        Err(why) => {
            errors.at(lit, format!("`{}`: {why}", spec.name));
            None
        }
    }
}

fn as_path(spec: &Key, what: &str, value: &Expr, errors: &mut Errors) -> Option<Path> {
    if let Expr::Path(p) = value {
        if p.qself.is_none() && p.attrs.is_empty() {
            return Some(p.path.clone());
        }
    }
    errors.at(
        value,
        format!(
            "`{}` takes a path to {what}, written without quotes or calls",
            spec.name
        ),
    );
    None
}
