//! A function's measurement handles, registered once with the global recorder and kept in its
//! `Meter`: counting an attempt is then one atomic add, with no key built and no lookup in the
//! recorder's registry.

use super::global::is_global;
use crate::stop::StopReason;
use ::metrics::{Counter, Histogram, Key, Label, Level, Metadata, Recorder};
use std::sync::OnceLock;

static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// The `class` labels of a failed attempt, in the order of the handles kept for them.
const CLASSES: [&str; 5] = [
    "transient",
    "permanent",
    "idempotent_only",
    "already_done",
    "value",
];

/// Each handle is registered the first time it is needed while the global recorder is the
/// current one (so a function shows only the series it has used), and kept from then on.
pub(crate) struct Handles {
    /// The success counter's key, its hash taken once (a recorder that keeps nothing, such as
    /// the facade's no-op one before an application installs its own, is given it every time).
    success_key: OnceLock<Key>,
    success: OnceLock<Counter>,
    retry: [OnceLock<Counter>; CLASSES.len()],
    stop: [OnceLock<Counter>; CLASSES.len()],
    /// One per stop reason, at its [`StopReason::index`].
    stops: [OnceLock<Counter>; StopReason::COUNT],
    delay: OnceLock<Histogram>,
    hedges: OnceLock<Counter>,
}

impl std::fmt::Debug for Handles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handles")
            .field("success", &self.success.get().is_some())
            .finish_non_exhaustive()
    }
}

/// Count `n` on the counter of `recorder` for `key`: the kept one when `recorder` is the global
/// recorder (registered now if it is not yet), else one registered for this use alone.
#[inline]
fn count(recorder: &dyn Recorder, kept: &OnceLock<Counter>, key: impl FnOnce() -> Key, n: u64) {
    if std::mem::size_of_val(recorder) == 0 {
        return;
    }
    super::global::described(recorder);
    if is_global(recorder) {
        kept.get_or_init(|| recorder.register_counter(&key(), &METADATA))
            .increment(n);
    } else {
        recorder.register_counter(&key(), &METADATA).increment(n);
    }
}

impl Handles {
    pub(crate) const fn new() -> Self {
        Handles {
            success_key: OnceLock::new(),
            success: OnceLock::new(),
            retry: [const { OnceLock::new() }; CLASSES.len()],
            stop: [const { OnceLock::new() }; CLASSES.len()],
            stops: [const { OnceLock::new() }; StopReason::COUNT],
            delay: OnceLock::new(),
            hedges: OnceLock::new(),
        }
    }

    /// A successful attempt; `labels` are the function's success labels, made once.
    #[inline]
    pub(crate) fn succeeded(&self, labels: &'static [Label]) {
        ::metrics::with_recorder(|recorder| {
            if is_global(recorder) {
                if let Some(counter) = self.success.get() {
                    return counter.increment(1);
                }
            }
            let key = self
                .success_key
                .get_or_init(|| Key::from_static_labels(super::ATTEMPTS, labels));
            count(recorder, &self.success, || key.clone(), 1)
        });
    }

    /// A failed attempt of class `class` (a label of [`CLASSES`]), that the call retries
    /// (`retried`) or gives up after.
    pub(crate) fn failed(&self, function: &'static str, class: &'static str, retried: bool) {
        let Some(i) = CLASSES.iter().position(|c| *c == class) else {
            let function = ::metrics::SharedString::const_str(function);
            return super::attempt(
                &function,
                if retried { "retry" } else { "stop" },
                class,
                None,
            );
        };
        let (kept, outcome) = if retried {
            (&self.retry[i], "retry")
        } else {
            (&self.stop[i], "stop")
        };
        ::metrics::with_recorder(|recorder| {
            count(
                recorder,
                kept,
                || {
                    let function = ::metrics::SharedString::const_str(function);
                    super::attempt_key(&function, outcome, class, None)
                },
                1,
            )
        });
    }

    /// A call that gave up for `reason`.
    pub(crate) fn stopped(&self, function: &'static str, reason: StopReason) {
        // A place for every reason (`StopReason::index` is an exhaustive match); should
        // `COUNT` be left behind by a new reason, its stops are still counted, uncached.
        let Some(kept) = self.stops.get(reason.index()) else {
            return super::stopped(&::metrics::SharedString::const_str(function), reason, None);
        };
        ::metrics::with_recorder(|recorder| {
            count(
                recorder,
                kept,
                || super::stop_key(&::metrics::SharedString::const_str(function), reason, None),
                1,
            )
        });
    }

    /// The wait before a retry, in seconds.
    pub(crate) fn delayed(&self, function: &'static str, seconds: f64) {
        ::metrics::with_recorder(|recorder| {
            if std::mem::size_of_val(recorder) == 0 {
                return;
            }
            super::global::described(recorder);
            let function = ::metrics::SharedString::const_str(function);
            let key = || super::delay_key(&function);
            if is_global(recorder) {
                self.delay
                    .get_or_init(|| recorder.register_histogram(&key(), &METADATA))
                    .record(seconds);
            } else {
                recorder
                    .register_histogram(&key(), &METADATA)
                    .record(seconds);
            }
        });
    }

    /// An attempt started beside a slow one.
    pub(crate) fn hedged(&self, function: &'static str) {
        ::metrics::with_recorder(|recorder| {
            count(
                recorder,
                &self.hedges,
                || super::hedge_key(&::metrics::SharedString::const_str(function)),
                1,
            )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_has_a_kept_counter() {
        for class in [
            crate::ErrorClass::Transient,
            crate::ErrorClass::Permanent,
            crate::ErrorClass::IdempotentOnly,
            crate::ErrorClass::AlreadyDone,
        ] {
            assert!(CLASSES.contains(&class.as_str()), "{class:?}");
        }
    }
}
