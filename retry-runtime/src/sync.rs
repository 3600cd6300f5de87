//! The atomics and locks the shared state (breaker, budget, `PerKey`'s table) is built on:
//! std's, or loom's under `--cfg loom`, so that the loom models in `tests/loom.rs` check the
//! real code rather than a copy of it (as tokio does).
//!
//! loom's atomics and locks cannot be built in a `const fn`; [`const_unless_loom!`] keeps the
//! public constructors `const` in every normal build.
//!
//! `PerKey`'s values live as long as the table, so nothing of theirs is reference-counted.

#[cfg(loom)]
pub(crate) use loom::hint::spin_loop;
#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering, fence};

#[cfg(not(loom))]
pub(crate) use std::hint::spin_loop;
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering, fence};

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

/// One turn of a loop that waits for another thread (a write to a recycled `PerKey` entry that
/// is finishing): a spin hint, then the rest of the time slice, since the writer may have been
/// preempted. Under loom, a yield, which its scheduler needs to run the other thread.
#[inline]
pub(crate) fn wait_a_turn(turn: u32) {
    #[cfg(loom)]
    {
        let _ = turn;
        loom::thread::yield_now();
    }
    #[cfg(not(loom))]
    if turn < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}
