//! What the arguments and the function allow together: conflicts between keys, and keys the
//! function's shape rules out.

use super::attr::{Args, Errors, Value};
use crate::vocabulary::check;
use syn::{ItemFn, ReturnType, Type};

/// Keys that the table says cannot be set together, and `multiplier` beside a backoff that is
/// not exponential.
pub(crate) fn conflicts(args: &Args, errors: &mut Errors) {
    for setting in &args.settings {
        for other in &args.settings {
            if setting.spec.excludes.contains(&other.spec.name) {
                errors.at(
                    &other.key,
                    format!(
                        "`{}` cannot be combined with `{} = ...`: {}",
                        other.key, setting.spec.name, setting.spec.instead
                    ),
                );
            }
        }
    }
    if let Some(key) = args.get("key") {
        if args.get("circuit").is_none() && args.get("budget").is_none() {
            errors.at(
                &key.key,
                "`key` picks a breaker or a budget from a `static PerKey<..>`: name one with `circuit = ...` or `budget = ...`",
            );
        }
    }
    if let (Some(m), Some(backoff)) = (args.get("multiplier"), args.word("backoff")) {
        if backoff != "Exponential" {
            errors.at(&m.key, check::MULTIPLIER_WITHOUT_EXPONENTIAL);
        }
    }
}

/// Check what the arguments and the signature allow together; return the declared return type
/// (`declared` for an `#[async_trait]` method, whose signature shows only the boxed future).
pub(crate) fn validate(
    args: &Args,
    func: &ItemFn,
    is_async: bool,
    declared: Option<Type>,
    errors: &mut Errors,
) -> Option<Type> {
    let sig = &func.sig;
    if let Some(constness) = &sig.constness {
        errors.at(
            constness,
            "`#[retryable]` cannot apply to a `const fn`: retrying needs sleeps and a clock, which do not exist at compile time",
        );
    }
    if let Some(variadic) = &sig.variadic {
        errors.at(
            variadic,
            "`#[retryable]` cannot apply to a variadic function",
        );
    }
    if !is_async {
        if let Some(s) = args.get("attempt_timeout") {
            errors.at(
                &s.key,
                "`attempt_timeout` needs an `async fn`: a sync attempt cannot be cancelled from outside; use `deadline` to bound the whole call",
            );
        }
        if let Some(s) = args.get("sleep") {
            errors.at(
                &s.key,
                "`sleep` only applies to an `async fn`; a sync function sleeps on its thread (virtually inside `testing::record_sleeps`)",
            );
        }
    }
    if let Some(s) = args.get("attempt_timeout") {
        if matches!(s.value, Value::Duration(d) if d.is_zero()) {
            errors.at(
                &s.key,
                "`attempt_timeout` must be longer than zero: a zero timeout cancels every attempt that waits for anything",
            );
        }
    }
    if let Some(s) = args.get("hedge") {
        hedge(args, sig, is_async, &s.key, errors);
    }
    if declared.is_some() {
        return declared;
    }
    match &sig.output {
        ReturnType::Type(_, ty) => Some((**ty).clone()),
        ReturnType::Default => {
            errors.at(
                &sig.ident,
                format!(
                    "`#[retryable]` retries functions that return `Result<T, E>`, and `{}` returns nothing; return a `Result` whose error says whether it is worth retrying",
                    sig.ident
                ),
            );
            None
        }
    }
}

/// `hedge` runs attempts side by side: an `async fn`, declared `idempotent`, whose attempts can
/// share every argument.
fn hedge(args: &Args, sig: &syn::Signature, is_async: bool, key: &syn::Ident, errors: &mut Errors) {
    if !is_async {
        errors.at(
            key,
            "`hedge` needs an `async fn`: hedged attempts run side by side, which a sync function cannot do on one thread",
        );
    }
    if !matches!(
        args.get("idempotent").map(|s| &s.value),
        Some(Value::Flag(true))
    ) {
        errors.at(
            key,
            if args.get("policy").is_some() {
                "`hedge` runs the operation more than once at the same time, which is only safe for an idempotent one: declare it with `idempotent` beside `policy = ..` (the attribute cannot read the policy's own flag when it expands)"
            } else {
                "`hedge` runs the operation more than once at the same time, which is only safe for an idempotent one: declare it with `idempotent`"
            },
        );
    }
    if let Some(attempts) = args.get("attempts") {
        if matches!(attempts.value, Value::Count(1)) {
            errors.at(
                key,
                "`hedge` with `attempts = 1` never starts a second attempt: the hedge would never fire; allow at least 2 attempts (every hedge is one), or drop `hedge`",
            );
        }
    }
    for arg in &sig.inputs {
        let exclusive = match arg {
            syn::FnArg::Receiver(r) => match &r.kind {
                syn::ReceiverKind::Reference(_, _, mutability) => mutability.is_some(),
                syn::ReceiverKind::Typed(_, ty) => exclusive_reference(ty),
                _ => false,
            },
            syn::FnArg::Typed(t) => exclusive_reference(&t.ty),
        };
        if exclusive {
            errors.at(
                arg,
                "a hedged function's attempts run at the same time, and a `&mut` argument can be lent to only one of them; take `&` (with a `Mutex` or atomics for what the attempts change), or drop `hedge`",
            );
        }
    }
}

/// Whether `ty` is a `&mut` reference.
fn exclusive_reference(ty: &Type) -> bool {
    matches!(ty, Type::Reference(r) if r.mutability.is_some())
}
