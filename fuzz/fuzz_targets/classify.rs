//! `#[derive(Classify)]` on arbitrary token streams: it never panics, and for every input that
//! is a type definition at all, it emits the `Classify` impl followed by nothing but
//! `compile_error!`s.
#![no_main]

use libfuzzer_sys::fuzz_target;
use retry_kit_fuzz::{derive_classify, tokens};

fuzz_target!(|data: &[u8]| {
    let Some(input) = tokens(data) else { return };
    let is_item = syn::parse2::<syn::DeriveInput>(input.clone()).is_ok();
    let out = derive_classify(input);
    if !is_item {
        return;
    }
    let file = syn::parse2::<syn::File>(out.clone())
        .unwrap_or_else(|e| panic!("unparsable output ({e}): {out}"));
    let mut items = file.items.iter();
    assert!(
        matches!(items.next(), Some(syn::Item::Impl(_))),
        "no impl first: {out}"
    );
    for item in items {
        assert!(
            matches!(item, syn::Item::Macro(m) if m.mac.path.is_ident("compile_error")
                || m.mac.path.segments.last().is_some_and(|s| s.ident == "compile_error")),
            "not a compile_error!: {out}"
        );
    }
});
