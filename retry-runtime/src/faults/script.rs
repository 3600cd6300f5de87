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
    /// gets `a` with probability 0.2, `b` with 0.1 and `Pass` with 0.7 (a rate of 1 takes every
    /// request). A script built with [`Script::new`] draws from a generator seeded with 0.
    ///
    /// The rate is added to this script and every clone of it.
    ///
    /// # Panics
    ///
    /// A test script that cannot mean what it says is refused where it is written, with a
    /// message that names the rates:
    ///
    /// - `probability` is not within `0.0..=1.0` (a NaN included);
    /// - the script's rates add up to more than 1, as `.with(0.8, a).with(0.8, b)` would (`b`
    ///   could not get its 0.8). Float rounding is allowed for: a sum within 1e-9 of 1, such as
    ///   `0.1 + 0.2 + 0.7`, is accepted.
    ///
    /// ```should_panic
    /// # extern crate retry_runtime as retry_kit;
    /// use retry_kit::faults::{Fault, Script};
    ///
    /// // Panics: "... add up to 1.6, more than 1: 0.8 for status 503, 0.8 for status 504 ..."
    /// let _ = Script::seeded(7).with(0.8, Fault::Status(503)).with(0.8, Fault::Status(504));
    /// ```
    pub fn with(self, probability: f64, fault: Fault) -> Self {
        assert!(
            (0.0..=1.0).contains(&probability),
            "the rate of fault `{fault}` must be a probability within 0.0..=1.0, not {probability}"
        );
        {
            let mut state = self.state();
            state.rates.push((probability, fault));
            let total: f64 = state.rates.iter().map(|(rate, _)| rate).sum();
            if total > 1.0 + ROUNDING {
                let rates: Vec<String> = (state.rates.iter())
                    .map(|(rate, fault)| format!("{rate} for {fault}"))
                    .collect();
                // Leave the script as it was, for whoever catches the panic.
                state.rates.pop();
                drop(state);
                panic!(
                    "a script's fault rates add up to {total}, more than 1: {}; each request \
                     draws one fault, so lower the rates until they add up to 1 at most",
                    rates.join(", ")
                );
            }
        }
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

/// How far above 1 a script's rates may add up, for the rounding of their sum (`0.1 + 0.2 +
/// 0.7` is `1.0000000000000002`).
const ROUNDING: f64 = 1e-9;

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
    #[should_panic(
        expected = "the rate of fault `connection reset before the request was sent` \
                               must be a probability within 0.0..=1.0, not 1.5"
    )]
    fn a_probability_over_one_is_refused() {
        let _ = Script::seeded(1).with(1.5, Fault::Reset);
    }

    #[test]
    #[should_panic(expected = "a script's fault rates add up to 1.6, more than 1: \
                               0.8 for status 503, 0.8 for status 504")]
    fn rates_that_add_up_to_more_than_one_are_refused_naming_them() {
        // Accepted before: the second fault was drawn 19.9 % of the time, not 80 %.
        let _ = Script::seeded(1)
            .with(0.8, Fault::Status(503))
            .with(0.8, Fault::Status(504));
    }

    #[test]
    fn rates_that_add_up_to_one_after_rounding_are_accepted() {
        // 0.1 + 0.2 + 0.7 is 1.0000000000000002 in floating point.
        let script = Script::seeded(5)
            .with(0.1, Fault::Reset)
            .with(0.2, Fault::Timeout)
            .with(0.7, Fault::Status(503));
        assert!((0..1_000).all(|_| script.next() != Fault::Pass));
    }
}
