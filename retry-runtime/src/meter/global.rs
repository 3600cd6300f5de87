//! Which recorder a handle may be kept for: the application's global one.
//!
//! The `metrics` facade gives a call the recorder of the moment: a thread's local recorder
//! (`with_local_recorder`, used by tests) or else the global one, installed at most once per
//! process and never dropped. A handle registered with the global recorder stays right for
//! ever, so it may be cached; one registered with a local recorder may not: the next local
//! recorder can live at the same address (a test's recorder on the stack, one test after
//! another), and a handle cached for the first would count the second's calls in the first's
//! dropped storage. The facade has no call that names the global recorder, so it is found on a
//! thread that cannot have a local one: a short-lived thread of our own, asked rarely.

use std::cell::Cell;
use std::sync::OnceLock;

/// A recorder's identity: its address and its vtable (two recorders at one address, such as a
/// struct and its first field, have different vtables).
#[derive(Clone, Copy)]
struct Identity(*const (dyn ::metrics::Recorder + 'static));

// SAFETY: the pointer is only compared, never dereferenced.
unsafe impl Send for Identity {}
// SAFETY: as above.
unsafe impl Sync for Identity {}

impl Identity {
    fn of(recorder: &dyn ::metrics::Recorder) -> Self {
        let pointer: *const (dyn ::metrics::Recorder + '_) = recorder;
        // SAFETY: only the pointer's lifetime bound changes (same address and vtable); it is
        // compared, never dereferenced.
        Identity(unsafe {
            std::mem::transmute::<
                *const (dyn ::metrics::Recorder + '_),
                *const (dyn ::metrics::Recorder + 'static),
            >(pointer)
        })
    }

    fn is(self, recorder: &dyn ::metrics::Recorder) -> bool {
        // Address and vtable both: a vtable duplicated across codegen units only makes a
        // global recorder look foreign (not cached), never a foreign one look global.
        std::ptr::eq(self.0, Identity::of(recorder).0)
    }
}

/// The global recorder, once seen.
static GLOBAL: OnceLock<Identity> = OnceLock::new();

/// Look for the global recorder on a thread of our own after this many sightings, on one
/// thread, of a recorder that is not it (a test's local recorder, or a global one installed
/// since the last look): rarely, because a look starts a thread.
const LOOK_EVERY: u32 = 1024;

thread_local! {
    /// Sightings on this thread until the next look (0: look at the next one).
    static UNTIL_LOOK: Cell<u32> = const { Cell::new(0) };
}

/// Whether `recorder` (the one `metrics::with_recorder` gives now) is the global recorder, so
/// that handles registered with it may be kept.
///
/// A recorder of no size (the facade's no-op one, before anything is installed) is never
/// cached: registering with it costs nothing, and the real one may be installed later.
#[inline]
pub(crate) fn is_global(recorder: &dyn ::metrics::Recorder) -> bool {
    if std::mem::size_of_val(recorder) == 0 {
        return false;
    }
    match GLOBAL.get() {
        Some(global) => global.is(recorder),
        None => look(recorder),
    }
}

#[cold]
fn look(recorder: &dyn ::metrics::Recorder) -> bool {
    let due = UNTIL_LOOK.with(|until| {
        let left = until.get();
        until.set(left.checked_sub(1).unwrap_or(LOOK_EVERY - 1));
        left == 0
    });
    if !due {
        return false;
    }
    // A new thread has no local recorder: what it is given is the global one (or the no-op
    // one). Where no thread can be started, nothing is cached.
    let seen = std::thread::Builder::new()
        .name("retry-kit-metrics".into())
        .spawn(|| {
            ::metrics::with_recorder(|global| {
                (std::mem::size_of_val(global) != 0).then(|| Identity::of(global))
            })
        })
        .ok()
        .and_then(|thread| thread.join().ok())
        .flatten();
    match seen {
        Some(global) => GLOBAL.get_or_init(|| global).is(recorder),
        None => false,
    }
}

thread_local! {
    /// The recorder this thread last described the crate's metrics to.
    static DESCRIBED: Cell<Option<Identity>> = const { Cell::new(None) };
}

/// Describe the crate's metrics to `recorder` (an installed one) unless this thread already
/// did: so that every recorder, the global one or a test's local one, has the descriptions
/// (`# HELP`) of the metrics it is given, without describing them on every measurement.
#[inline]
pub(crate) fn described(recorder: &dyn ::metrics::Recorder) {
    let seen = DESCRIBED.with(|described| described.get().is_some_and(|d| d.is(recorder)));
    if !seen {
        describe_now(recorder);
    }
}

#[cold]
fn describe_now(recorder: &dyn ::metrics::Recorder) {
    super::describe_to(recorder);
    DESCRIBED.with(|described| described.set(Some(Identity::of(recorder))));
}
