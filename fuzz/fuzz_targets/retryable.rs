//! `#[retryable(...)]` on arbitrary token streams. The first line of the input is the
//! attribute's arguments, the rest the item. It never panics; on error the item is emitted
//! unchanged after the `compile_error!`s, and without one the output is a function.
#![no_main]

use libfuzzer_sys::fuzz_target;
use retry_kit_fuzz::{retryable, tokens};

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let (attr, item) = (&data[..split], data.get(split + 1..).unwrap_or_default());
    let (Some(attr), Some(item)) = (tokens(attr), tokens(item)) else {
        return;
    };
    let out = retryable(attr, item.clone()).to_string();
    if out.contains("compile_error") {
        assert!(out.ends_with(&item.to_string()), "item lost: {out}");
    } else {
        assert!(
            syn::parse_str::<syn::ItemFn>(&out).is_ok(),
            "not a function: {out}"
        );
    }
});
