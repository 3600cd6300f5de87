//! Parsing `#[classify(...)]` attributes into typed settings.
//!
//! Each setting keeps the attribute it came from and the key token, so that later passes can
//! point at exactly what the user wrote. Mistakes are collected, not returned: one bad tag does
//! not hide the next one.

use crate::errors::Errors;
use crate::vocabulary::spelling::nearest;
use proc_macro2::TokenTree;
use syn::meta::ParseNestedMeta;
use syn::{Attribute, Expr, ExprLit, ExprPath, Ident, Lit, Path, Token, token};

/// The classes a tag can name (a `default`, all but `already_done`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Transient,
    Permanent,
    IdempotentOnly,
    AlreadyDone,
}

impl Class {
    const KEYWORDS: &'static [&'static str] =
        &["transient", "permanent", "idempotent_only", "already_done"];

    fn from_keyword(word: &str) -> Option<Self> {
        match word {
            "transient" => Some(Class::Transient),
            "permanent" => Some(Class::Permanent),
            "idempotent_only" => Some(Class::IdempotentOnly),
            "already_done" => Some(Class::AlreadyDone),
            _ => None,
        }
    }

    pub(crate) fn keyword(self) -> &'static str {
        match self {
            Class::Transient => "transient",
            Class::Permanent => "permanent",
            Class::IdempotentOnly => "idempotent_only",
            Class::AlreadyDone => "already_done",
        }
    }

    /// The name of the matching `ErrorClass` variant.
    pub(crate) fn variant_name(self) -> &'static str {
        match self {
            Class::Transient => "Transient",
            Class::Permanent => "Permanent",
            Class::IdempotentOnly => "IdempotentOnly",
            Class::AlreadyDone => "AlreadyDone",
        }
    }
}

/// Where a variant's (or a struct's) class comes from.
pub(crate) enum Tag {
    Class(Class),
    Delegate,
    With(ExprPath),
}

impl Tag {
    /// How the tag reads in messages.
    fn describe(&self) -> &'static str {
        match self {
            Tag::Class(class) => class.keyword(),
            Tag::Delegate => "delegate",
            Tag::With(_) => "with = ...",
        }
    }

    fn same_kind(&self, other: &Tag) -> bool {
        match (self, other) {
            (Tag::Class(a), Tag::Class(b)) => a == b,
            (Tag::Delegate, Tag::Delegate) | (Tag::With(_), Tag::With(_)) => true,
            _ => false,
        }
    }
}

/// A parsed setting with the attribute and the key token it came from.
pub(crate) struct Setting<'a, T> {
    /// The whole `#[classify(...)]`, for diagnostics about the attribute rather than one key.
    pub(crate) original: &'a Attribute,
    pub(crate) key: Ident,
    pub(crate) value: T,
}

/// Everything `#[classify(...)]` can say about one item; which parts are accepted depends on
/// the [`Place`].
pub(crate) struct Attrs<'a> {
    pub(crate) tag: Option<Setting<'a, Tag>>,
    pub(crate) default: Option<Setting<'a, Class>>,
    pub(crate) krate: Option<Setting<'a, Path>>,
    pub(crate) retry_after: Option<Setting<'a, ()>>,
    /// A class (a tag, or an enum's `default`) was written but could not be used, and that is
    /// already reported: a second "has no class" error about the same item would be noise.
    pub(crate) class_attempted: bool,
}

/// The kind of item an attribute sits on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Enum,
    Struct,
    Union,
    Variant,
    Field,
}

/// The tags that give a variant (or a struct) its class.
const TAGS: &[&str] = &[
    "transient",
    "permanent",
    "idempotent_only",
    "already_done",
    "delegate",
    "with",
];

/// Every key the attribute knows, wherever it belongs.
pub(super) const ALL: &[&str] = &[
    "transient",
    "permanent",
    "idempotent_only",
    "already_done",
    "delegate",
    "with",
    "default",
    "crate",
    "retry_after",
];

impl Place {
    fn accepted(self) -> &'static [&'static str] {
        match self {
            Place::Enum => &["default", "crate"],
            Place::Struct => &[
                "transient",
                "permanent",
                "idempotent_only",
                "already_done",
                "delegate",
                "with",
                "crate",
            ],
            Place::Union => &["crate"],
            Place::Variant => TAGS,
            Place::Field => &["retry_after"],
        }
    }

    /// The accepted keys as a user writes them.
    fn expected(self) -> &'static str {
        match self {
            Place::Enum => "`default = transient | permanent | idempotent_only` or `crate = path`",
            Place::Struct => {
                "`transient`, `permanent`, `idempotent_only`, `already_done`, `delegate`, `with = path` or `crate = path`"
            }
            Place::Union => "`crate = path`",
            Place::Variant => {
                "`transient`, `permanent`, `idempotent_only`, `already_done`, `delegate` or `with = path`"
            }
            Place::Field => "`retry_after`",
        }
    }
}

/// Parse every `#[classify(...)]` among `attrs`. `owner` names the item in messages, such as
/// ``variant `Reset` `` or ``field `wait` of variant `Throttled` ``.
pub(crate) fn get<'a>(
    attrs: &'a [Attribute],
    place: Place,
    owner: &str,
    errors: &mut Errors,
) -> Attrs<'a> {
    let mut parsed = Attrs {
        tag: None,
        default: None,
        krate: None,
        retry_after: None,
        class_attempted: false,
    };
    for attr in attrs.iter().filter(|a| a.path().is_ident("classify")) {
        let mut parser = Parser {
            attr,
            place,
            owner,
            attrs: &mut parsed,
            errors,
        };
        // Only tokens that are not `key` / `key = value` at all end this attribute early.
        if let Err(error) = attr.parse_nested_meta(|meta| parser.key(&meta)) {
            parser.errors.push(error);
        }
    }
    parsed
}

struct Parser<'p, 'a> {
    attr: &'a Attribute,
    place: Place,
    owner: &'p str,
    attrs: &'p mut Attrs<'a>,
    errors: &'p mut Errors,
}

impl<'a> Parser<'_, 'a> {
    fn key(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        let Some(key) = single_ident(&meta.path) else {
            self.attrs.class_attempted |= self.meant_a_class("", false);
            let path = &meta.path;
            let text = quote::quote!(#path).to_string().replace(' ', "");
            self.errors.at(
                &meta.path,
                format!(
                    "unknown classify tag `{text}` on {}: expected {}",
                    self.owner,
                    self.place.expected()
                ),
            );
            return skip_value(meta);
        };
        let name = key.to_string();
        if !self.place.accepted().contains(&name.as_str()) {
            let known = ALL.contains(&name.as_str());
            if self.place == Place::Union && known {
                // The union itself is the mistake, reported once by the validation pass.
                return skip_value(meta);
            }
            self.attrs.class_attempted |= self.meant_a_class(&name, known);
            let message = if known {
                self.misplaced(&name)
            } else {
                self.unknown(&name)
            };
            self.errors.at(&key, message);
            return skip_value(meta);
        }
        match name.as_str() {
            "delegate" => {
                self.no_value(meta, &key)?;
                self.set_tag(key, Tag::Delegate);
            }
            "with" => match self.with_value(meta, &key)? {
                Some(path) => self.set_tag(key, Tag::With(path)),
                None => self.attrs.class_attempted = true,
            },
            "default" => self.default(meta, key)?,
            "crate" => self.krate(meta, key)?,
            "retry_after" => {
                self.no_value(meta, &key)?;
                let setting = self.setting(key, ());
                set_once(
                    &mut self.attrs.retry_after,
                    setting,
                    self.owner,
                    self.errors,
                    |()| None,
                );
            }
            word => {
                // The only accepted keys left are the three classes.
                if let Some(class) = Class::from_keyword(word) {
                    self.no_value(meta, &key)?;
                    self.set_tag(key, Tag::Class(class));
                }
            }
        }
        Ok(())
    }

    /// Whether a rejected key was most likely meant to give this item its class.
    fn meant_a_class(&self, name: &str, known: bool) -> bool {
        match self.place {
            Place::Variant | Place::Struct => !known || name == "default",
            Place::Enum if known => TAGS.contains(&name),
            Place::Enum => nearest(name, self.place.accepted()) != Some("crate"),
            Place::Union | Place::Field => false,
        }
    }

    fn setting<T>(&self, key: Ident, value: T) -> Setting<'a, T> {
        Setting {
            original: self.attr,
            key,
            value,
        }
    }

    fn set_tag(&mut self, key: Ident, tag: Tag) {
        let owner = self.owner;
        match &self.attrs.tag {
            None => self.attrs.tag = Some(self.setting(key, tag)),
            Some(first) if first.value.same_kind(&tag) => {
                let message = match tag {
                    Tag::With(_) => format!(
                        "duplicate `with` on {owner}: it already has a classifying function; keep one"
                    ),
                    _ => format!("duplicate tag `{}` on {owner}: remove one", tag.describe()),
                };
                self.errors.at(&key, message);
            }
            Some(first) => {
                let message = format!(
                    "conflicting tags on {owner}: `{}` here, but it is already tagged `{}`; \
                     keep exactly one of `transient`, `permanent`, `idempotent_only`, \
                     `already_done`, `delegate` or `with = path`",
                    tag.describe(),
                    first.value.describe(),
                );
                self.errors.at(&key, message);
            }
        }
    }

    fn unknown(&self, word: &str) -> String {
        let owner = self.owner;
        match nearest(word, self.place.accepted()) {
            Some(near) => {
                format!("unknown classify tag `{word}` on {owner}; did you mean `{near}`?")
            }
            None => format!(
                "unknown classify tag `{word}` on {owner}: expected {}",
                self.place.expected()
            ),
        }
    }

    /// A key that exists but belongs somewhere else.
    fn misplaced(&self, word: &str) -> String {
        let owner = self.owner;
        match (self.place, word) {
            (Place::Union, _) => format!(
                "`{word}` on {owner}: a union cannot be classified by tags; implement `Classify` by hand"
            ),
            (Place::Enum, "transient" | "permanent" | "idempotent_only") => format!(
                "`{word}` on {owner} would apply to every variant: write \
                 `#[classify(default = {word})]` for the untagged variants, or tag each variant"
            ),
            (Place::Enum, "retry_after") => format!(
                "`retry_after` goes on a field (a `Duration` or `Option<Duration>`), not on {owner}"
            ),
            (Place::Enum, _) => format!("`{word}` goes on a variant, not on {owner}"),
            (Place::Struct, "default") => format!(
                "`default` is for an enum's untagged variants; tag {owner} itself, \
                 e.g. `#[classify(transient)]`"
            ),
            (Place::Struct | Place::Variant, "retry_after") => format!(
                "`retry_after` goes on a field of {owner}, the one holding a `Duration` or \
                 `Option<Duration>`"
            ),
            (Place::Variant, "default") => format!(
                "`default` goes on the enum, not on {owner}; to classify {owner} itself, \
                 write its class: `#[classify(transient)]`"
            ),
            (Place::Variant | Place::Field, "crate") => {
                format!("`crate` goes on the type's own `#[classify(...)]`, not on {owner}")
            }
            (Place::Field, "default") => format!("`default` goes on the enum, not on {owner}"),
            (Place::Field, _) => {
                format!("`{word}` goes on the variant or struct, not on {owner}")
            }
            _ => format!(
                "unknown classify tag `{word}` on {owner}: expected {}",
                self.place.expected()
            ),
        }
    }

    /// A flag such as `transient` or `retry_after`: report and skip a value given to it.
    fn no_value(&mut self, meta: &ParseNestedMeta<'_>, key: &Ident) -> syn::Result<()> {
        if meta.input.peek(Token![=]) || meta.input.peek(token::Paren) {
            self.errors.at(
                key,
                format!("`{key}` takes no value: write `#[classify({key})]`"),
            );
            skip_value(meta)?;
        }
        Ok(())
    }

    /// The right-hand side of `key = value`, or `None` (reported) when there is no `=`.
    fn value(
        &mut self,
        meta: &ParseNestedMeta<'_>,
        key: &Ident,
        form: &str,
    ) -> syn::Result<Option<Expr>> {
        if !meta.input.peek(Token![=]) {
            let message = format!("`{key}` on {} needs a value: `{key} = {form}`", self.owner);
            self.errors.at(key, message);
            skip_value(meta)?;
            return Ok(None);
        }
        meta.value()?.parse().map(Some)
    }

    fn with_value(
        &mut self,
        meta: &ParseNestedMeta<'_>,
        key: &Ident,
    ) -> syn::Result<Option<ExprPath>> {
        let Some(value) = self.value(meta, key, "path::to::function")? else {
            return Ok(None);
        };
        let owner = self.owner;
        match value {
            Expr::Path(path) if path.attrs.is_empty() => return Ok(Some(path)),
            Expr::Lit(ExprLit { lit: Lit::Str(text), .. }) => self.errors.at(
                &text,
                format!(
                    "`with` on {owner} takes a path, not a string: write `with = {}` without quotes",
                    text.value()
                ),
            ),
            other => self.errors.at(
                &other,
                format!(
                    "`with` on {owner} takes a path to a `fn(&Self) -> ErrorClass`, such as \
                     `with = resource_class`: move this expression into a function and name it here"
                ),
            ),
        }
        Ok(None)
    }

    fn default(&mut self, meta: &ParseNestedMeta<'_>, key: Ident) -> syn::Result<()> {
        // Until a usable class is read, the untagged variants are covered by this report.
        self.attrs.class_attempted = true;
        let Some(value) = self.value(meta, &key, "transient")? else {
            return Ok(());
        };
        let owner = self.owner;
        let word = match &value {
            Expr::Path(path) if path.attrs.is_empty() && path.qself.is_none() => {
                single_ident(&path.path).map(|ident| ident.to_string())
            }
            Expr::Lit(ExprLit {
                lit: Lit::Str(text),
                ..
            }) => {
                let message = format!(
                    "`default` on {owner} takes a class word, not a string: write \
                     `default = {}` without quotes",
                    text.value()
                );
                self.errors.at(text, message);
                return Ok(());
            }
            _ => None,
        };
        let class = word.as_deref().and_then(Class::from_keyword);
        let Some(class) = class.filter(|c| *c != Class::AlreadyDone) else {
            let suggestion = match word.as_deref() {
                Some(tag @ ("delegate" | "with")) => {
                    format!("; `{tag}` is not a class: put it on each variant it applies to")
                }
                Some("already_done") => "; `already_done` names the one answer that means a \
                     duplicate: tag that variant"
                    .to_owned(),
                Some(other) => nearest(other, Class::KEYWORDS)
                    .map(|near| format!("; did you mean `{near}`?"))
                    .unwrap_or_default(),
                None => String::new(),
            };
            let message = format!(
                "`default` on {owner} must be `transient`, `permanent` or `idempotent_only`{suggestion}"
            );
            self.errors.at(&value, message);
            return Ok(());
        };
        let setting = self.setting(key, class);
        set_once(
            &mut self.attrs.default,
            setting,
            owner,
            self.errors,
            |first| Some(format!("`{}`", first.keyword())),
        );
        self.attrs.class_attempted = false;
        Ok(())
    }

    fn krate(&mut self, meta: &ParseNestedMeta<'_>, key: Ident) -> syn::Result<()> {
        let Some(value) = self.value(meta, &key, "path::to::retry_kit")? else {
            return Ok(());
        };
        let owner = self.owner;
        let path = match value {
            Expr::Path(path) if path.attrs.is_empty() && path.qself.is_none() => path.path,
            other => {
                let message = format!(
                    "`crate` on {owner} takes the path where `retry_kit` is reachable, \
                     such as `crate = ::my_facade::retry_kit`"
                );
                self.errors.at(&other, message);
                return Ok(());
            }
        };
        let setting = self.setting(key, path);
        set_once(
            &mut self.attrs.krate,
            setting,
            owner,
            self.errors,
            |first| {
                Some(format!(
                    "`{}`",
                    quote::quote!(#first).to_string().replace(' ', "")
                ))
            },
        );
        Ok(())
    }
}

/// Store a key that may be given once. A repeat is reported at its key, saying what the first
/// one set when `first_was` can tell, and the first one is kept.
fn set_once<'a, T>(
    slot: &mut Option<Setting<'a, T>>,
    new: Setting<'a, T>,
    owner: &str,
    errors: &mut Errors,
    first_was: impl FnOnce(&T) -> Option<String>,
) {
    let Some(first) = slot else {
        *slot = Some(new);
        return;
    };
    let key = &new.key;
    let message = match first_was(&first.value) {
        Some(was) => format!("duplicate `{key}` on {owner}: it is already {was}; keep one"),
        None => format!("duplicate `{key}` on {owner}: keep one"),
    };
    errors.at(key, message);
}

/// The key as one identifier (`crate` included), or `None` for a longer path such as `a::b`.
fn single_ident(path: &Path) -> Option<Ident> {
    match (&path.leading_colon, path.segments.first()) {
        (None, Some(segment)) if path.segments.len() == 1 && segment.arguments.is_none() => {
            Some(segment.ident.clone())
        }
        _ => None,
    }
}

/// Consume whatever value follows a key that was reported, so the rest of the attribute is
/// still read.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(token::Paren) {
        meta.input.parse::<TokenTree>()?;
    }
    Ok(())
}
