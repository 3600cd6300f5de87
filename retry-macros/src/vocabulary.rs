//! The vocabulary of `#[retryable]`: its keys ([`keys`]), the duration strings ([`duration`]),
//! the nearest-name suggestion ([`spelling`]) and the checks every value passes ([`check`]).
//!
//! The runtime reads policies from configuration files (feature `serde`) with the same keys,
//! values, checks and messages. It cannot depend on this crate's code except through macros, so
//! [`expand`] (the hidden `__vocabulary!`) emits these four files, as written, into the
//! runtime: one table and one set of checks, compiled in both crates, instead of a second copy
//! that would drift. The files use nothing but `std` and each other (`super::...`), which is
//! what lets them compile in either place.

pub(crate) mod check;
pub(crate) mod duration;
pub(crate) mod keys;
pub(crate) mod spelling;

use keys::{KEYS, Takes};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Ident, Item};

/// The files emitted, with the name of the module each becomes.
const FILES: [(&str, &str); 4] = [
    ("keys", include_str!("vocabulary/keys.rs")),
    ("duration", include_str!("vocabulary/duration.rs")),
    ("spelling", include_str!("vocabulary/spelling.rs")),
    ("check", include_str!("vocabulary/check.rs")),
];

/// The vocabulary as modules of the crate that invokes `__vocabulary!()` (the runtime), without
/// the files' tests, and `impl crate::config::Word` for each runtime enum a key names by word
/// (`Backoff`, `Jitter`, `Nested`): its words, from the table.
pub(crate) fn expand() -> TokenStream {
    let mut out = TokenStream::new();
    for (name, text) in FILES {
        let name = Ident::new(name, Span::call_site());
        match syn::parse_file(text) {
            Ok(file) => {
                let attrs = file.attrs;
                let items = file.items.into_iter().filter(|item| !is_test(item));
                out.extend(quote! {
                    // Not every item is used in both crates.
                    #[allow(dead_code, unreachable_pub)]
                    pub(crate) mod #name {
                        #(#attrs)*
                        #(#items)*
                    }
                });
            }
            // The files are this crate's own modules, so they parse; should one not, say so
            // where the vocabulary is asked for.
            Err(error) => out.extend(error.to_compile_error()),
        }
    }
    out.extend(words());
    out
}

/// `impl crate::config::Word` for every runtime enum that a policy key names by word.
fn words() -> TokenStream {
    KEYS.iter()
        .filter(|key| key.on_policy)
        .filter_map(|key| match &key.takes {
            Takes::Word { runtime, words } => {
                let runtime = Ident::new(runtime, Span::call_site());
                let (text, variant): (Vec<&str>, Vec<Ident>) = words
                    .iter()
                    .map(|(word, variant)| (*word, Ident::new(variant, Span::call_site())))
                    .unzip();
                Some(quote! {
                    impl crate::config::Word for crate::#runtime {
                        fn word(self) -> &'static str {
                            match self {
                                #(crate::#runtime::#variant => #text,)*
                            }
                        }
                        fn from_word(word: &str) -> ::core::option::Option<Self> {
                            match word {
                                #(#text => ::core::option::Option::Some(crate::#runtime::#variant),)*
                                _ => ::core::option::Option::None,
                            }
                        }
                    }
                })
            }
            _ => None,
        })
        .collect()
}

/// Whether `item` is `#[cfg(test)]`: the files' own tests stay in this crate.
fn is_test(item: &Item) -> bool {
    let attrs = match item {
        Item::Mod(m) => &m.attrs,
        Item::Fn(f) => &f.attrs,
        Item::Use(u) => &u.attrs,
        Item::Const(c) => &c.attrs,
        _ => return false,
    };
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg") && attr.parse_args::<Ident>().is_ok_and(|arg| arg == "test")
    })
}
