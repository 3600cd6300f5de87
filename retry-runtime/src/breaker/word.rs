//! The breaker's state packed into atomic words: the phase word and the failure-ratio buckets.

use super::CircuitState;

/// The breaker's state word: phase (2 bits), generation (30 bits, wrapping), probes in flight
/// (16 bits) and probe successes (16 bits). The generation changes on every phase change, so an
/// outcome reported after its phase ended is recognised and ignored.
///
/// Phase bits 3 ([`Word::UNLISTED`]) mean closed, in a named breaker that its first call has
/// yet to enlist in the registry: the hot path's "closed?" check (phase bits 0) fails for it,
/// so the first call takes the slow path, which enlists the breaker and clears the mark. The
/// closed success path pays nothing for the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Word {
    pub(super) phase: CircuitState,
    pub(super) generation: u32,
    pub(super) in_flight: u16,
    pub(super) successes: u16,
}

impl Word {
    pub(super) const GENERATION_MASK: u32 = (1 << 30) - 1;
    /// The phase bits of a closed breaker still to be enlisted (see above).
    pub(super) const UNLISTED: u64 = 3 << 62;
    pub(super) const CLOSED: Word = Word {
        phase: CircuitState::Closed,
        generation: 0,
        in_flight: 0,
        successes: 0,
    };

    pub(super) const fn pack(self) -> u64 {
        let phase = match self.phase {
            CircuitState::Closed => 0u64,
            CircuitState::Open => 1,
            CircuitState::HalfOpen => 2,
        };
        (phase << 62)
            | ((self.generation & Self::GENERATION_MASK) as u64) << 32
            | (self.in_flight as u64) << 16
            | self.successes as u64
    }

    #[inline]
    pub(super) fn unpack(word: u64) -> Word {
        Word {
            phase: match word >> 62 {
                1 => CircuitState::Open,
                2 => CircuitState::HalfOpen,
                _ => CircuitState::Closed,
            },
            generation: (word >> 32) as u32 & Self::GENERATION_MASK,
            in_flight: (word >> 16) as u16,
            successes: word as u16,
        }
    }

    pub(super) fn next_generation(self) -> u32 {
        self.generation.wrapping_add(1) & Self::GENERATION_MASK
    }
}

/// One bucket of the failure-ratio window: which bucket of time it counts (24 bits of its
/// index, enough to tell it from the last ten), calls and failures (20 bits each).
pub(super) struct Bucket {
    pub(super) tag: u64,
    pub(super) calls: u64,
    pub(super) failures: u64,
}

impl Bucket {
    pub(super) const TAG_MASK: u64 = (1 << 24) - 1;
    pub(super) const COUNT_MAX: u64 = (1 << 20) - 1;

    pub(super) fn pack(&self) -> u64 {
        (self.tag << 40) | (self.calls << 20) | self.failures
    }

    pub(super) fn unpack(word: u64) -> Bucket {
        Bucket {
            tag: word >> 40,
            calls: (word >> 20) & Self::COUNT_MAX,
            failures: word & Self::COUNT_MAX,
        }
    }
}
