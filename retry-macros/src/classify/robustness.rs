//! `#[derive(Classify)]` never panics: arbitrary `#[classify(...)]` contents (random tags,
//! values of every kind, nesting, unicode, huge numbers) on enums, variants, fields, structs
//! and unions either derive an impl, or derive an impl *and* `compile_error!`s beside it.
//!
//! The generator writes `tag = value` pairs, not random token fragments: random fragments
//! rarely form a well-placed tag with a value, so they never reach the code behind one (an
//! unstructured generator for `#[retryable]` missed a panic planted behind `attempts = 0`).

use super::derive;
use proc_macro2::TokenStream;
use proptest::prelude::*;
use std::str::FromStr;

/// Every tag the derive knows, near misses, and keys no single-ident rule accepts.
fn tags() -> Vec<&'static str> {
    let mut tags = KNOWN.to_vec();
    tags.extend([
        "transiant",
        "idempotent",
        "retry",
        "self",
        "r#type",
        "a::b",
        "::x",
        "with::x",
        "é",
        "日本",
    ]);
    tags
}

const VALUES: &[&str] = &[
    "transient",
    "permanent",
    "idempotent_only",
    "delegate",
    "with",
    "\"transient\"",
    "\"\"",
    "\"∞\"",
    "resource_class",
    "Self::class_of",
    "::my::retry_kit",
    "crate::x",
    "<T as Tr>::f",
    "a::<u8>::b",
    "0",
    "-1",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    "1e309",
    "2.0f32",
    "true",
    "'x'",
    "b\"x\"",
    "|e| e",
    "f()",
    "&X",
    "[1, 2]",
    "{ }",
    "(transient)",
    "X + 1",
    "日本",
    "#[a] f",
];

/// What may follow a key: nothing, `= value`, a parenthesised list, or stray tokens.
const AFTER: &[&str] = &[
    "",
    "",
    "",
    "",
    "=",
    "()",
    "(transient)",
    "::",
    ",",
    "= =",
    "+",
];

/// Keys the derive accepts somewhere; any other key is a mistake wherever it is written.
use super::attr::ALL as KNOWN;

/// Generated source text, and whether it certainly holds a mistake (a key no place accepts,
/// or a union). Other mistakes (misplaced, duplicate, conflicting tags, bad values) are
/// generated too; the oracle only claims what it can know without re-implementing the rules.
#[derive(Clone, Debug, Default)]
struct Text {
    text: String,
    wrong: bool,
}

impl Text {
    fn join(parts: Vec<Text>, sep: &str) -> Text {
        Text {
            wrong: parts.iter().any(|p| p.wrong),
            text: parts
                .into_iter()
                .map(|p| p.text)
                .collect::<Vec<_>>()
                .join(sep),
        }
    }
}

/// One `#[classify(...)]`: 0..4 tag entries, each a tag with a value, with a parenthesised
/// nested list, or bare, followed by whatever `AFTER` gives.
fn attribute() -> impl Strategy<Value = Text> {
    let entry = (
        prop::sample::select(tags()),
        prop::option::weighted(0.4, prop::sample::select(VALUES)),
        prop::sample::select(AFTER),
    )
        .prop_map(|(tag, value, after)| Text {
            text: match value {
                Some(value) => format!("{tag} = {value}{after}"),
                None => format!("{tag}{after}"),
            },
            wrong: !KNOWN.contains(&tag),
        });
    prop::collection::vec(entry, 0..4).prop_map(|entries| {
        let list = Text::join(entries, ", ");
        Text {
            text: format!("#[classify({})]", list.text),
            wrong: list.wrong,
        }
    })
}

/// Zero to two attributes on one item.
fn attributes() -> impl Strategy<Value = Text> {
    prop::collection::vec(attribute(), 0..3).prop_map(|attrs| Text::join(attrs, " "))
}

const FIELD_TYPES: &[&str] = &[
    "Duration",
    "Option<Duration>",
    "core::time::Duration",
    "u64",
    "String",
    "std::io::Error",
    "T",
    "Option<T>",
    "&'a str",
    "dyn Send + Sync",
];

/// A field list of 0..3 fields: unit, tuple or named, each field with its own attributes.
fn fields() -> impl Strategy<Value = Text> {
    let field = (attributes(), prop::sample::select(FIELD_TYPES));
    (0..3usize, prop::collection::vec(field, 0..3)).prop_map(|(shape, fields)| {
        let list: Vec<Text> = fields
            .into_iter()
            .enumerate()
            .map(|(i, (attrs, ty))| Text {
                text: match shape {
                    1 => format!("{} {ty}", attrs.text),
                    _ => format!("{} f{i}: {ty}", attrs.text),
                },
                wrong: attrs.wrong,
            })
            .collect();
        let list = Text::join(list, ", ");
        match shape {
            0 => Text::default(),
            1 => Text {
                text: format!("({})", list.text),
                wrong: list.wrong,
            },
            _ => Text {
                text: format!("{{ {} }}", list.text),
                wrong: list.wrong,
            },
        }
    })
}

/// A derive input that is correct: an enum whose variants each carry one valid tag (or inherit
/// a `default`), `retry_after` on `Duration` fields, `delegate` on single-field variants,
/// `with = path`, sometimes `crate = path`; or a tagged struct. Without these, mangled inputs
/// almost never reach the expansion of a tag (113 clean derives in 3 000 draws, 4 with a tag).
fn wellformed() -> impl Strategy<Value = Text> {
    let class = prop::sample::select(&["transient", "permanent", "idempotent_only"][..]);
    let tag =
        prop::sample::select(&["transient", "permanent", "idempotent_only", "already_done"][..]);
    let variant = (
        0..6usize,
        tag,
        prop::sample::select(&["Duration", "Option<Duration>"][..]),
    )
        .prop_map(|(kind, class, duration)| match kind {
            // `@` stands for the variant's number.
            0 => format!("#[classify({class})] V@"),
            1 => format!(
                "#[classify({class})] V@ {{ #[classify(retry_after)] wait: {duration}, code: u16 }}"
            ),
            2 => format!("#[classify({class})] V@(#[classify(retry_after)] {duration})"),
            3 => "#[classify(delegate)] V@(std::io::Error)".to_owned(),
            4 => "#[classify(with = Self::class_of)] V@(u16)".to_owned(),
            _ => "V@(String)".to_owned(),
        });
    (
        prop::option::of(class),
        prop::bool::ANY,
        prop::collection::vec(variant, 1..5),
        0..4usize,
    )
        .prop_map(|(default, krate, variants, kind)| {
            let mut top = Vec::new();
            if let Some(class) = default {
                top.push(format!("default = {class}"));
            }
            if krate {
                top.push("crate = ::retry_kit".to_owned());
            }
            let top = if top.is_empty() {
                String::new()
            } else {
                format!("#[classify({})]", top.join(", "))
            };
            let text = if kind == 0 {
                format!("#[classify(transient)] {top} struct S {{ #[classify(retry_after)] wait: Duration }}")
            } else {
                // Untagged variants need the default; number them so names differ.
                let default = if top.contains("default") { "" } else { "#[classify(default = permanent)]" };
                let variants: Vec<String> = variants
                    .iter()
                    .enumerate()
                    .map(|(i, v)| v.replace('@', &i.to_string()))
                    .collect();
                format!("{default} {top} enum E {{ {} }}", variants.join(", "))
            };
            Text { text, wrong: false }
        })
}

/// Derive inputs: a third correct, the rest mangled anywhere.
fn input() -> impl Strategy<Value = Text> {
    prop_oneof![1 => wellformed(), 2 => mangled()]
}

/// A whole derive input: an enum of 0..4 variants, a struct, or a union, with attributes at
/// every place, and sometimes generics.
fn mangled() -> impl Strategy<Value = Text> {
    let variant = (attributes(), fields());
    let generics = prop::sample::select(&["", "<T>", "<'a, T: Clone>", "<T: Send + 'static>"][..]);
    (
        0..3usize,
        attributes(),
        generics,
        prop::collection::vec(variant, 0..4),
        fields(),
    )
        .prop_map(|(kind, top, generics, variants, body)| {
            let t = &top.text;
            match kind {
                0 => {
                    let variants: Vec<Text> = variants
                        .into_iter()
                        .enumerate()
                        .map(|(i, (attrs, fields))| Text {
                            text: format!("{} V{i} {}", attrs.text, fields.text),
                            wrong: attrs.wrong || fields.wrong,
                        })
                        .collect();
                    let list = Text::join(variants, ", ");
                    Text {
                        text: format!("{t} enum E{generics} {{ {} }}", list.text),
                        wrong: top.wrong || list.wrong,
                    }
                }
                1 => {
                    let b = &body.text;
                    Text {
                        text: match b.chars().next() {
                            Some('(') => format!("{t} struct S{generics} {b};"),
                            None => format!("{t} struct S{generics};"),
                            _ => format!("{t} struct S{generics} {b}"),
                        },
                        wrong: top.wrong || body.wrong,
                    }
                }
                _ => {
                    let b = &body.text;
                    Text {
                        text: match b.starts_with('{') {
                            true => format!("{t} union U{generics} {b}"),
                            false => format!("{t} union U{generics} {{ a: u8 }}"),
                        },
                        wrong: true,
                    }
                }
            }
        })
}

/// Run the derive on `text` and check its output's shape: an impl of `Classify`, then only
/// `compile_error!`s, each with a message. Returns the number of `compile_error!`s, or `None`
/// for text that is not a derive input at all.
fn check(text: &str) -> Result<Option<usize>, TestCaseError> {
    let Ok(tokens) = TokenStream::from_str(text) else {
        // Text that does not even lex is not something a compiler hands a derive.
        return Ok(None);
    };
    if syn::parse2::<syn::DeriveInput>(tokens.clone()).is_err() {
        // Not an item: rustc reports that before any derive runs.
        return Ok(None);
    }
    let out = match std::panic::catch_unwind(|| derive(tokens)) {
        Ok(out) => out,
        Err(_) => return Err(TestCaseError::fail(format!("panicked on `{text}`"))),
    };
    let file = syn::parse2::<syn::File>(out.clone()).map_err(|e| {
        TestCaseError::fail(format!("`{text}` gave unparsable output ({e}): {out}"))
    })?;
    let mut items = file.items.iter();
    match items.next() {
        Some(syn::Item::Impl(imp))
            if imp.trait_.as_ref().is_some_and(|(path, _)| {
                path.segments.last().is_some_and(|s| s.ident == "Classify")
            }) => {}
        _ => {
            return Err(TestCaseError::fail(format!(
                "no impl first for `{text}`: {out}"
            )));
        }
    }
    let mut errors = 0;
    for item in items {
        match item {
            syn::Item::Macro(m)
                if m.mac
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "compile_error") =>
            {
                let message: syn::LitStr = m.mac.parse_body().map_err(|e| {
                    TestCaseError::fail(format!(
                        "compile_error! without a message for `{text}`: {e}"
                    ))
                })?;
                prop_assert!(!message.value().is_empty(), "empty message for `{}`", text);
                errors += 1;
            }
            other => {
                return Err(TestCaseError::fail(format!(
                    "unexpected item after the impl for `{text}`: {}",
                    quote::quote!(#other)
                )));
            }
        }
    }
    Ok(Some(errors))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn arbitrary_tags_never_panic_and_always_emit_the_impl(input in input()) {
        let errors = check(&input.text)?;
        if input.wrong {
            prop_assert!(errors != Some(0), "`{}` was accepted", input.text);
        }
    }
}

/// What the property above draws: enough inputs that derive cleanly, with tags, and every tag
/// the derive knows among them (so the expansion of each is exercised), measured on 2 000
/// draws of a fixed seed.
#[test]
fn the_generator_draws_clean_inputs_with_every_tag() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    let strategy = input();
    let (mut derivable, mut clean, mut tagged) = (0, 0, 0);
    let mut tags_seen = std::collections::BTreeSet::new();
    const DRAWS: usize = 2000;
    for _ in 0..DRAWS {
        let text = strategy.new_tree(&mut runner).unwrap().current().text;
        match check(&text).unwrap() {
            None => {}
            Some(errors) => {
                derivable += 1;
                if errors == 0 {
                    clean += 1;
                    if text.contains("#[classify(") {
                        tagged += 1;
                    }
                    for tag in KNOWN {
                        if text.contains(&format!("({tag}")) || text.contains(&format!(" {tag}")) {
                            tags_seen.insert(*tag);
                        }
                    }
                }
            }
        }
    }
    eprintln!("{DRAWS} draws: {derivable} derive inputs, {clean} clean, {tagged} clean with a tag");
    // Floors well below what the generator gives (about a third of draws are well-formed).
    assert!(
        derivable * 2 > DRAWS,
        "{derivable} of {DRAWS} are derive inputs"
    );
    assert!(clean * 5 > DRAWS, "{clean} of {DRAWS} derive cleanly");
    assert!(
        tagged * 5 > DRAWS,
        "{tagged} of {DRAWS} derive cleanly with a tag"
    );
    assert_eq!(tags_seen.len(), KNOWN.len(), "tags reached: {tags_seen:?}");
}

#[test]
fn the_generator_reaches_valid_inputs_and_every_kind_of_mistake() {
    // A tagged enum with a retry-after field derives cleanly...
    let valid = "#[classify(default = transient)] enum E<T> { #[classify(delegate)] V0(T), \
                 V1 { #[classify(retry_after)] f0: Option<Duration> }, #[classify(with = Self::f)] V2 }";
    assert_eq!(check(valid).unwrap(), Some(0));
    // ...and each of these mistakes is reported, all in one run, beside the impl.
    let mistakes = "#[classify(default = \"transient\", crate = 1e309)] enum E { \
                    #[classify(transient, permanent, transient = 18446744073709551616)] V0, \
                    #[classify(delegate)] V1(u8, u8), #[classify(with = |e| e)] V2, \
                    V3 { #[classify(retry_after)] f0: u64, #[classify(retry_after, 日本)] f1: String }, \
                    #[classify(a::b = ::x, é)] V4 }";
    assert!(check(mistakes).unwrap() >= Some(8));
    assert!(check("#[classify(crate = ::x)] union U { a: u8 }").unwrap() >= Some(1));
}

/// Found by the `classify` fuzz target: a `retry_after` field whose type is a list of bounds
/// was written after a `&` unparenthesised, so the emitted impl did not parse (`expected >`)
/// and buried the real diagnostics under a syntax error in generated code.
#[test]
fn a_retry_after_field_typed_as_a_list_of_bounds_still_gives_a_parsable_impl() {
    for ty in ["u32 +", "dyn Send + Sync", "dyn Send +", "impl Send + Sync"] {
        let input =
            format!("#[classify(transient)] struct S {{ #[classify(retry_after)] a: {ty} }}");
        assert!(check(&input).unwrap().is_some(), "{input}");
        let input =
            format!("enum E<T> {{ #[classify(permanent)] V(#[classify(retry_after)] {ty}, T) }}");
        assert!(check(&input).unwrap().is_some(), "{input}");
    }
}
