//! [`Script`]: which [`Fault`] each request gets, shared by every clone.

use super::Fault;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

/// Which [`Fault`] each request gets: the n-th request through the script (through any of its
/// clones) gets the n-th listed fault; after the list, a fault drawn from the rates given with
/// [`with`](Script::with), or [`Fault::Pass`] when none were.
///
/// - [`Script::new`]: a list, then `Pass` for ever. For a test that knows what happens at each
///   attempt.
/// - [`Script::seeded`]: draws at rates, from a generator seeded with `seed`: the same seed gives
///   the same faults in the same order, so a chaos run in staging can be replayed exactly
///   (for one build: the generator is `rand`'s `SmallRng`, whose sequence may differ between
///   platforms and `rand` versions).
///
/// A script is an `Arc` inside: clones share the list, the generator and the count, so a
/// layer cloned into many services still numbers requests once. The decision is taken when the
/// request is made (the service's `call`, the middleware's `handle`), in that order.
///
/// ```
/// # extern crate retry_runtime as retry_kit;
/// use retry_kit::faults::{Fault, Script};
///
/// let chaos = || Script::seeded(7).with(0.2, Fault::Status(503)).with(0.1, Fault::Lost);
/// let (a, b) = (chaos(), chaos());
/// let first: Vec<Fault> = (0..50).map(|_| a.next()).collect();
/// let again: Vec<Fault> = (0..50).map(|_| b.next()).collect();
/// assert_eq!(first, again);
/// assert_eq!(a.seen(), 50);
/// ```
#[derive(Clone)]
pub struct Script {
    shared: Arc<Mutex<State>>,
}

struct State {
    listed: Vec<Fault>,
    rates: Vec<(f64, Fault)>,
    rng: SmallRng,
    seen: u64,
}

impl Script {
    /// The n-th request gets the n-th fault of `faults`, then every request gets
    /// [`Fault::Pass`].
    pub fn new(faults: impl IntoIterator<Item = Fault>) -> Self {
        Script::from_state(faults.into_iter().collect(), 0)
    }

    /// No listed faults: every request draws one from the rates added with
    /// [`with`](Script::with), from a generator seeded with `seed`.
    pub fn seeded(seed: u64) -> Self {
        Script::from_state(Vec::new(), seed)
    }

    fn from_state(listed: Vec<Fault>, seed: u64) -> Self {
        Script {
            shared: Arc::new(Mutex::new(State {
                listed,
                rates: Vec::new(),
                rng: SmallRng::seed_from_u64(seed),
                seen: 0,
            })),
        }
    }

    /// After the listed faults, give a request `fault` with probability `probability`.
    ///
    /// The rates are drawn as one roll per request: with `.with(0.2, a).with(0.1, b)` a request
    /// gets `a` with probability 0.2, `b` with 0.1 and `Pass` with 0.7. Rates that add up to
    /// more than 1 leave the later faults the rest (a rate of 1 takes every request).
    /// A script built with [`Script::new`] draws from a generator seeded with 0.
    ///
    /// The rate is added to this script and every clone of it.
    ///
    /// # Panics
    ///
    /// If `probability` is not within `0.0..=1.0` (a NaN included): a test set up wrongly.
    pub fn with(self, probability: f64, fault: Fault) -> Self {
        assert!(
            (0.0..=1.0).contains(&probability),
            "a fault's probability must be within 0.0..=1.0, not {probability}"
        );
        self.state().rates.push((probability, fault));
        self
    }

    /// The fault of the next request: listed, drawn, or `Pass`. Counts the request as seen.
    ///
    /// The layers and [`inject`](Script::inject) call this; call it yourself to drive a fault
    /// through code of your own.
    #[allow(clippy::should_implement_trait)] // not an iterator: a script never ends.
    pub fn next(&self) -> Fault {
        let mut state = self.state();
        let n = state.seen;
        state.seen += 1;
        if let Some(fault) = usize::try_from(n).ok().and_then(|n| state.listed.get(n)) {
            return *fault;
        }
        if state.rates.is_empty() {
            return Fault::Pass;
        }
        let roll = unit(state.rng.next_u64());
        let mut below = 0.0;
        for (probability, fault) in &state.rates {
            below += probability;
            if roll < below {
                return *fault;
            }
        }
        Fault::Pass
    }

    /// How many requests the script has decided (by any clone), the first included.
    pub fn seen(&self) -> u64 {
        self.state().seen
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is consistent between statements: a panic elsewhere cannot break it.
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A uniform draw in `[0, 1)` from 53 random bits.
fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

impl fmt::Debug for Script {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state();
        f.debug_struct("Script")
            .field("listed", &state.listed)
            .field("rates", &state.rates)
            .field("seen", &state.seen)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_script_passes_after_its_list() {
        let script = Script::new([Fault::Reset, Fault::Timeout]);
        assert_eq!(script.next(), Fault::Reset);
        assert_eq!(script.clone().next(), Fault::Timeout);
        assert_eq!(script.next(), Fault::Pass);
        assert_eq!(script.seen(), 3);
    }

    #[test]
    fn seeded_draws_follow_their_rates() {
        let script = Script::seeded(3).with(0.25, Fault::Lost);
        let lost = (0..10_000).filter(|_| script.next() == Fault::Lost).count();
        assert!((2_200..2_800).contains(&lost), "{lost}");
    }

    #[test]
    fn a_rate_of_one_takes_every_request() {
        let script = Script::seeded(1).with(1.0, Fault::Status(503));
        assert!((0..100).all(|_| script.next() == Fault::Status(503)));
    }

    #[test]
    #[should_panic(expected = "within 0.0..=1.0")]
    fn a_probability_over_one_is_refused() {
        let _ = Script::seeded(1).with(1.5, Fault::Reset);
    }
}
