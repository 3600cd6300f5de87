//! The atomics and locks the shared state (breaker, budget, `PerKey`'s table) is built on:
//! std's, or loom's under `--cfg loom`, so that the loom models in `tests/loom.rs` check the
//! real code rather than a copy of it (as tokio does).
//!
//! loom's atomics and locks cannot be built in a `const fn`; [`const_unless_loom!`] keeps the
//! public constructors `const` in every normal build.
//!
//! `Arc` is not here: `PerKey::get` hands std's `Arc` to the rest of the crate (the layers hold
//! it through a request), and what the models check of the table is its lock's.

#[cfg(loom)]
pub(crate) use loom::hint::spin_loop;
#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(loom)]
pub(crate) use loom::sync::MutexGuard;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering, fence};

#[cfg(not(loom))]
pub(crate) use std::hint::spin_loop;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

/// A `const fn` in normal builds, a plain `fn` under loom, whose atomics and locks are not
/// const-constructible. The item is written once, with `const`.
macro_rules! const_unless_loom {
    ($(#[$attr:meta])* $vis:vis const fn $($rest:tt)*) => {
        #[cfg(not(loom))]
        $(#[$attr])* $vis const fn $($rest)*
        #[cfg(loom)]
        $(#[$attr])* $vis fn $($rest)*
    };
}
pub(crate) use const_unless_loom;
