//! The table a context keeps of the calls nested in its attempts (see the module docs of
//! [`context`](super), keys of nested calls), and how a context that ends gives it back.
//!
//! A context that ends with a table does not free it: it hands it to a list of retired tables,
//! which the next context to need a table empties first. Freeing would be a call to the
//! allocator in the drop of every context, a call that a context without a table never makes,
//! but whose presence alone costs every retryable call that calls nothing else its stack frame
//! (a function that calls nothing keeps its locals below the stack pointer, with no frame to set
//! up: see benches/README.md, issue 37). Handing a table on is an exchange and a store, in
//! line.
//!
//! The list holds no more tables than were alive at once: every table is made by
//! [`Ordinals::make`], which frees the whole list first, so what waits in it at any time ended
//! after the last table was made. The list is global, not per thread, because an async call can
//! end on another thread than the one that made its table.

use crate::sync::{AtomicPtr, Ordering, const_unless_loom, wait_a_turn};
use std::ptr;

/// How many calls of each operation the current attempt of a call has made inside it, made by
/// the first nested call that asks for a key and owned by the call's context from then on.
#[derive(Debug)]
pub(super) struct Ordinals {
    counts: Vec<Count>,
    /// The table retired before this one, once this one is in the list of retired tables
    /// ([`unlinked`] until then).
    next: AtomicPtr<Ordinals>,
}

/// One operation's count of nested calls in one attempt of the enclosing call.
#[derive(Debug)]
struct Count {
    operation: u64,
    attempt: u32,
    calls: u32,
}

impl Ordinals {
    /// A new, empty table, for a context to own (and [`retire`] when it ends). The tables
    /// retired since the last one was made are freed first.
    pub(super) fn make() -> *mut Ordinals {
        RETIRED.free_all();
        Box::into_raw(Box::new(Ordinals {
            counts: Vec::new(),
            next: AtomicPtr::new(unlinked()),
        }))
    }

    /// The ordinal of the next call of `operation` in `attempt`: 0, 1, 2, ... (the counts of
    /// an earlier attempt start again).
    pub(super) fn next(&mut self, operation: u64, attempt: u32) -> u32 {
        match self.counts.iter_mut().find(|c| c.operation == operation) {
            Some(count) => {
                if count.attempt != attempt {
                    count.attempt = attempt;
                    count.calls = 0;
                }
                let n = count.calls;
                count.calls = count.calls.saturating_add(1);
                n
            }
            None => {
                self.counts.push(Count {
                    operation,
                    attempt,
                    calls: 1,
                });
                0
            }
        }
    }
}

/// Give back the table of a context that ends, without a call (see the module docs).
///
/// # Safety
///
/// `table` comes from [`Ordinals::make`], and nothing uses it after this.
#[inline(always)]
pub(super) unsafe fn retire(table: *mut Ordinals) {
    // SAFETY: the caller's.
    unsafe { RETIRED.push(table) }
}

/// The list of retired tables: a stack that contexts push onto and that [`Ordinals::make`]
/// takes whole. A push is an exchange of the head and a store of the table's link, with no
/// loop, so that it stays a few instructions in every context's drop; the link reads "not
/// yet" ([`unlinked`]) in between, and whoever takes the list waits for it (a wait of two
/// instructions, unless the pushing thread is preempted there). Nothing is ever popped alone.
pub(super) struct Retired {
    head: AtomicPtr<Ordinals>,
}

/// A table's link before its push has written it: an address no table has.
fn unlinked() -> *mut Ordinals {
    ptr::dangling_mut()
}

impl Retired {
    const_unless_loom! {
        pub(super) const fn new() -> Retired {
            Retired {
                head: AtomicPtr::new(ptr::null_mut()),
            }
        }
    }

    /// Add `table` to the list.
    ///
    /// # Safety
    ///
    /// `table` comes from [`Ordinals::make`] (its link [`unlinked`]), and nothing else uses it
    /// after this.
    #[inline(always)]
    pub(super) unsafe fn push(&self, table: *mut Ordinals) {
        // Release: whoever takes the list sees this table's counts. Acquire: the table it
        // displaces was published to this thread, which hands it on through the link below.
        let before = self.head.swap(table, Ordering::AcqRel);
        // SAFETY: the table is the caller's to give; until this store, whoever took the list
        // only waits on this field.
        unsafe { &*table }.next.store(before, Ordering::Release);
    }

    /// Free every table in the list; how many there were.
    pub(super) fn free_all(&self) -> usize {
        let mut table = self.head.swap(ptr::null_mut(), Ordering::Acquire);
        let mut freed = 0;
        while !table.is_null() {
            // SAFETY: every table in the list was given up by its context (`push`), and taking
            // the list whole made this thread its only owner, but for the link its push may
            // still be writing: read it (waiting for it) before freeing the table.
            let next = {
                let link = &unsafe { &*table }.next;
                let mut turn = 0;
                loop {
                    // Acquire: the push that wrote the link, and through it the table linked.
                    let next = link.load(Ordering::Acquire);
                    if next != unlinked() {
                        break next;
                    }
                    wait_a_turn(turn);
                    turn += 1;
                }
            };
            // SAFETY: as above; the link was its push's last use of the table.
            drop(unsafe { Box::from_raw(table) });
            table = next;
            freed += 1;
        }
        freed
    }
}

#[cfg(not(loom))]
static RETIRED: Retired = Retired::new();

// loom's atomics cannot be built in a `static`'s initializer: one list per model run.
#[cfg(loom)]
loom::lazy_static! {
    static ref RETIRED: Retired = Retired::new();
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn counts_restart_with_each_attempt_and_are_kept_per_operation() {
        let table = Ordinals::make();
        // SAFETY: made above, retired below, used by this thread only.
        let t = unsafe { &mut *table };
        assert_eq!([t.next(7, 1), t.next(7, 1), t.next(9, 1)], [0, 1, 0]);
        assert_eq!([t.next(7, 2), t.next(9, 2), t.next(7, 2)], [0, 0, 1]);
        // SAFETY: as above; not used after.
        unsafe { retire(table) };
    }

    #[test]
    fn retired_tables_are_freed_by_the_next_table_made() {
        let list = Retired::new();
        let made: Vec<_> = (0..3).map(|_| Ordinals::make()).collect();
        for &table in &made {
            // SAFETY: each made above and not used after.
            unsafe { list.push(table) };
        }
        assert_eq!(list.free_all(), 3);
        assert_eq!(list.free_all(), 0);
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// Two contexts ending on two threads while a third frees the list: each table is freed
    /// exactly once (a push lost to the other's, or a table taken twice, changes the count).
    #[test]
    fn tables_retired_on_two_threads_beside_a_free_are_each_freed_once() {
        loom::model(|| {
            let list = Arc::new(Retired::new());
            let pushers: Vec<_> = (0..2)
                .map(|_| {
                    let list = Arc::clone(&list);
                    thread::spawn(move || {
                        let table = Box::into_raw(Box::new(Ordinals {
                            counts: Vec::new(),
                            next: AtomicPtr::new(unlinked()),
                        }));
                        // SAFETY: made here and not used after.
                        unsafe { list.push(table) };
                    })
                })
                .collect();
            let early = list.free_all();
            for pusher in pushers {
                pusher.join().unwrap();
            }
            assert_eq!(early + list.free_all(), 2);
        });
    }
}
