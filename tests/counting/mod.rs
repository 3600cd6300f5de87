//! A global allocator that counts the allocations made on one thread while it is asked to:
//! what the allocation tests (`allocations.rs`, `metrics_global.rs`) measure with. Each test
//! binary that uses it installs it (`#[global_allocator] static A: Counting = Counting;`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

pub struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is passed to `System` unchanged; the thread-locals are `const`-initialised
// `Cell`s, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.with(|n| n.set(n.get() + 1));
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Start counting this thread's allocations from 0.
pub fn start() {
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
}

/// Stop counting; the allocations since [`start`].
pub fn stop() -> usize {
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.with(Cell::get)
}
