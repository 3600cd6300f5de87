//! The `#[retryable]` expansion never panics: arbitrary argument token streams (random keys,
//! literals of every kind, nesting, huge numbers, empty strings, unicode) either expand to a
//! function or to `compile_error!` beside the untouched function.

use super::expand::retryable;
use proc_macro2::TokenStream;
use proptest::prelude::*;
use std::str::FromStr;

/// Every accepted key, and a few near misses that are not.
fn keys() -> Vec<&'static str> {
    let mut keys = super::keys::names();
    keys.extend(["atempts", "self", "r#type", "a::b", "::x", "é"]);
    keys
}

const VALUES: &[&str] = &[
    "0",
    "1",
    "3",
    "-1",
    "4294967295",
    "4294967296",
    "340282366920938463463374607431768211456",
    "1.5",
    "0.5",
    "1.0",
    "1e309",
    "1000.0",
    "2.0f32",
    "5u8",
    "true",
    "false",
    "'x'",
    "b\"x\"",
    "\"\"",
    "\"100ms\"",
    "\"1.5s\"",
    "\"0ms\"",
    "\"18446744073709551615s\"",
    "\"18446744073709551616s\"",
    "\"1.0000000001s\"",
    "\"µs\"",
    "\"5µs\"",
    "\"∞\"",
    "\"exponential\"",
    "\"fixed\"",
    "\"linear\"",
    "\"full\"",
    "\"equal\"",
    "\"decorrelated\"",
    "\"none\"",
    "\"once\"",
    "\"retry\"",
    "\".\"",
    "[1, 2]",
    "{ }",
    "(1)",
    "|x| x",
    "f()",
    "&X",
    "a::b",
    "::a",
    "crate::x",
    "self.policy",
    "日本",
    "X + 1",
];

const GARBAGE: &[&str] = &[
    "", "", "", "", "=", ",", "#", "::", "..", "(", ")", "+", "= =", ", ,",
];

/// `key = value` pairs (some bare keys, some stray tokens), joined by commas.
fn fragments() -> impl Strategy<Value = String> {
    let pair = (
        prop::sample::select(keys()),
        prop::option::weighted(0.9, prop::sample::select(VALUES)),
        prop::sample::select(GARBAGE),
    )
        .prop_map(|(k, v, g)| match v {
            Some(v) => format!("{k} = {v} {g}"),
            None => format!("{k} {g}"),
        });
    prop::collection::vec(pair, 0..6).prop_map(|pairs| pairs.join(", "))
}

fn items() -> impl Strategy<Value = &'static str> {
    prop::sample::select(
        &[
            "fn f() -> Result<(), E> { Ok(()) }",
            "async fn f(&mut self) -> Result<u8, E> { Ok(1) }",
            "const fn f() -> Result<(), E> { Ok(()) }",
            "fn f() {}",
            "struct S;",
            "fn f(x: impl Into<u8>) -> Result<impl Sized, E> { Ok(x.into()) }",
        ][..],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn arbitrary_arguments_never_panic_and_errors_are_compile_errors(args in fragments(), item in items()) {
        // Token streams that do not even lex are not something a compiler hands a macro.
        let (Ok(attr), Ok(item_tokens)) = (TokenStream::from_str(&args), TokenStream::from_str(item)) else {
            return Ok(());
        };
        let out = std::panic::catch_unwind(|| retryable(attr, item_tokens.clone()).to_string());
        let out = match out {
            Ok(out) => out,
            Err(_) => return Err(TestCaseError::fail(format!("panicked on `{args}` for `{item}`"))),
        };
        if out.contains("compile_error") {
            // On error the item is still emitted exactly as written.
            prop_assert!(out.ends_with(&item_tokens.to_string()), "item lost for `{args}`: {out}");
        } else {
            // Accepted arguments expand to a function.
            prop_assert!(syn::parse_str::<syn::ItemFn>(&out).is_ok(), "`{args}` gave {out}");
        }
    }
}

#[test]
fn valid_arguments_expand_without_errors() {
    let attr = TokenStream::from_str(
        r#"attempts = 5, base = "1.5s", max_delay = "18446744073709551615s", multiplier = 1000.0, jitter = "decorrelated", idempotent"#,
    )
    .unwrap();
    let item = TokenStream::from_str("fn f() -> Result<(), E> { Ok(()) }").unwrap();
    let out = retryable(attr, item).to_string();
    assert!(!out.contains("compile_error"), "{out}");
    assert!(out.contains("18446744073709551615u64"), "{out}");
}
