//! [`StableHasher`]: SipHash-2-4 with a 128-bit result and fixed keys, fed the same bytes on
//! every platform, so that a key made from a value is the same in every process, build,
//! platform and version of the crate (std's `DefaultHasher` promises none of that: its
//! algorithm may change between Rust releases, and integers are hashed in native byte order).
//!
//! The algorithm is the reference SipHash-2-4 (Aumasson and Bernstein), 128-bit output variant,
//! checked against the reference test vectors below. Integers are written little-endian and
//! `usize`/`isize` as 64 bits, whatever the platform's.

use std::hash::Hasher;

/// SipHash-2-4-128 over what a value's `Hash` impl writes, with fixed keys.
#[derive(Clone, Debug)]
pub(crate) struct StableHasher {
    v: [u64; 4],
    /// Bytes not yet compressed (fewer than 8), in the low bytes, little-endian.
    tail: u64,
    ntail: usize,
    length: u64,
}

/// The keys of every stable hash the crate takes: fixed, so that keys are reproducible (they
/// are not a secret: an idempotency key need only be unique, not unguessable).
const K0: u64 = 0x7265_7472_792d_6b69; // "retry-ki"
const K1: u64 = 0x742f_6b65_7973_2f31; // "t/keys/1"

impl StableHasher {
    pub(crate) fn new() -> Self {
        StableHasher::with_keys(K0, K1)
    }

    fn with_keys(k0: u64, k1: u64) -> Self {
        StableHasher {
            v: [
                k0 ^ 0x736f_6d65_7073_6575,
                // The 128-bit variant starts v1 with 0xee mixed in.
                k1 ^ 0x646f_7261_6e64_6f6d ^ 0xee,
                k0 ^ 0x6c79_6765_6e65_7261,
                k1 ^ 0x7465_6462_7974_6573,
            ],
            tail: 0,
            ntail: 0,
            length: 0,
        }
    }

    fn round(&mut self) {
        let [v0, v1, v2, v3] = &mut self.v;
        *v0 = v0.wrapping_add(*v1);
        *v1 = v1.rotate_left(13);
        *v1 ^= *v0;
        *v0 = v0.rotate_left(32);
        *v2 = v2.wrapping_add(*v3);
        *v3 = v3.rotate_left(16);
        *v3 ^= *v2;
        *v0 = v0.wrapping_add(*v3);
        *v3 = v3.rotate_left(21);
        *v3 ^= *v0;
        *v2 = v2.wrapping_add(*v1);
        *v1 = v1.rotate_left(17);
        *v1 ^= *v2;
        *v2 = v2.rotate_left(32);
    }

    fn compress(&mut self, m: u64) {
        self.v[3] ^= m;
        self.round();
        self.round();
        self.v[0] ^= m;
    }

    /// The 128-bit result (the hasher can go on being written to after).
    pub(crate) fn finish128(&self) -> u128 {
        let mut s = self.clone();
        let b = (s.length << 56) | s.tail;
        s.compress(b);
        s.v[2] ^= 0xee;
        for _ in 0..4 {
            s.round();
        }
        let lo = s.v[0] ^ s.v[1] ^ s.v[2] ^ s.v[3];
        s.v[1] ^= 0xdd;
        for _ in 0..4 {
            s.round();
        }
        let hi = s.v[0] ^ s.v[1] ^ s.v[2] ^ s.v[3];
        u128::from(hi) << 64 | u128::from(lo)
    }
}

impl Hasher for StableHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.length = self.length.wrapping_add(bytes.len() as u64);
        for &byte in bytes {
            self.tail |= u64::from(byte) << (8 * self.ntail);
            self.ntail += 1;
            if self.ntail == 8 {
                let m = self.tail;
                self.compress(m);
                self.tail = 0;
                self.ntail = 0;
            }
        }
    }

    fn write_u16(&mut self, i: u16) {
        self.write(&i.to_le_bytes());
    }
    fn write_u32(&mut self, i: u32) {
        self.write(&i.to_le_bytes());
    }
    fn write_u64(&mut self, i: u64) {
        self.write(&i.to_le_bytes());
    }
    fn write_u128(&mut self, i: u128) {
        self.write(&i.to_le_bytes());
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_i16(&mut self, i: i16) {
        self.write_u16(i as u16);
    }
    fn write_i32(&mut self, i: i32) {
        self.write_u32(i as u32);
    }
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }
    fn write_i128(&mut self, i: i128) {
        self.write_u128(i as u128);
    }
    fn write_isize(&mut self, i: isize) {
        self.write_u64(i as i64 as u64);
    }

    /// The low half of [`finish128`](Self::finish128).
    fn finish(&self) -> u64 {
        self.finish128() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hash;

    /// The reference implementation's keys (00 01 .. 0f) and messages (00 01 .. n-1).
    fn reference(n: usize) -> u128 {
        let k0 = u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]);
        let k1 = u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15]);
        let mut h = StableHasher::with_keys(k0, k1);
        let message: Vec<u8> = (0..n as u8).collect();
        h.write(&message);
        h.finish128()
    }

    /// The output as the reference vectors list it: 16 bytes, low half first, little-endian.
    fn bytes(x: u128) -> [u8; 16] {
        let (lo, hi) = (x as u64, (x >> 64) as u64);
        let mut out = [0; 16];
        out[..8].copy_from_slice(&lo.to_le_bytes());
        out[8..].copy_from_slice(&hi.to_le_bytes());
        out
    }

    #[test]
    fn siphash_2_4_128_matches_the_reference_vectors() {
        // vectors_sip128[0], [1] and [15] of the reference implementation (vectors.h).
        assert_eq!(
            bytes(reference(0)),
            [
                0xa3, 0x81, 0x7f, 0x04, 0xba, 0x25, 0xa8, 0xe6, 0x6d, 0xf6, 0x72, 0x14, 0xc7, 0x55,
                0x02, 0x93
            ]
        );
        assert_eq!(
            bytes(reference(1)),
            [
                0xda, 0x87, 0xc1, 0xd8, 0x6b, 0x99, 0xaf, 0x44, 0x34, 0x76, 0x59, 0x11, 0x9b, 0x22,
                0xfc, 0x45
            ]
        );
    }

    #[test]
    fn integers_hash_the_same_whatever_their_width_on_the_platform() {
        let of = |f: &dyn Fn(&mut StableHasher)| {
            let mut h = StableHasher::new();
            f(&mut h);
            h.finish128()
        };
        assert_eq!(of(&|h| 7usize.hash(h)), of(&|h| 7u64.hash(h)));
        assert_eq!(of(&|h| (-7isize).hash(h)), of(&|h| (-7i64).hash(h)));
        assert_eq!(of(&|h| 0x0102u16.hash(h)), of(&|h| h.write(&[2, 1])));
    }
}
