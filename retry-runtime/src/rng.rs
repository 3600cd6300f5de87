//! This thread's jitter generator: fast, seeded from the OS on first use, reseedable by
//! [`testing::seed_jitter`](crate::testing::seed_jitter) so that a schedule is reproducible.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cell::RefCell;

thread_local! {
    static JITTER: RefCell<Option<SmallRng>> = const { RefCell::new(None) };
}

/// One uniform draw for a jitter computation. Only called when a failure needs a delay.
pub(crate) fn draw() -> u64 {
    JITTER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let rng = slot.get_or_insert_with(|| SmallRng::seed_from_u64(rand::random()));
        rng.next_u64()
    })
}

pub(crate) fn seed(seed: u64) {
    JITTER.with(|cell| *cell.borrow_mut() = Some(SmallRng::seed_from_u64(seed)));
}
