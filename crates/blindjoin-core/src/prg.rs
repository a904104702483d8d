//! AES-128 in counter mode keyed by a 128-bit seed: IKNP's pseudorandom generator G.
//!
//! The stream of [`AesPrg::new`]`(seed)` is the sequence of blocks
//! `AES_seed(0), AES_seed(1), AES_seed(2), …`, the counter `j` entering AES as
//! `Block(j).to_bytes()` (a `u128`, little-endian, starting at 0) and the key as
//! `seed.to_bytes()`. Its **byte stream** is the concatenation of the blocks'
//! [`Block::to_bytes`].
//!
//! Two kinds of consumers share the one counter:
//!
//! - block calls ([`AesPrg::fill_blocks`], [`AesPrg::next_block`]) always return whole AES
//!   outputs: they first **discard** what is left of a block that a byte call consumed only in
//!   part, then take the next blocks of the stream;
//! - byte calls ([`AesPrg::fill_bytes`] and the [`RngCore`] methods `next_u32`/`next_u64`,
//!   little-endian) consume the byte stream exactly, keeping the unread tail of the last block
//!   for the next byte call: `fill_bytes(a)` then `fill_bytes(b)` equals `fill_bytes(a ++ b)`.
//!
//! So `fill_blocks` in pieces equals `fill_blocks` at once, and `fill_bytes` of `16·k` bytes
//! equals the encoding of `fill_blocks` of `k` blocks. Block `2^128` would repeat block 0; no
//! run gets near it.
//!
//! The AES round keys are wiped when the generator is dropped (the `aes` crate's `zeroize`
//! feature), and so is the buffered tail of the last block.

use crate::aes::FixedKeyAes;
use crate::block::Block;
use rand::{CryptoRng, RngCore, SeedableRng};
use zeroize::Zeroize;

/// AES-128 in counter mode keyed by a 128-bit seed: expands a seed into blocks (IKNP's G).
/// Block `j` of the stream = `AES_seed(j)` (counter as `u128` little-endian, starting at 0), so
/// [`fill_blocks`](AesPrg::fill_blocks) calls continue the stream. See the
/// [module documentation](self) for how byte and block calls share the stream.
pub struct AesPrg {
    aes: FixedKeyAes,
    /// Index of the next block of the stream to generate.
    counter: u128,
    /// The last generated block, of which `pending[used..]` has not been handed out.
    pending: [u8; 16],
    used: usize,
}

impl core::fmt::Debug for AesPrg {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("AesPrg { .. }")
    }
}

impl Drop for AesPrg {
    fn drop(&mut self) {
        self.pending.zeroize();
    }
}

/// The buffered block is wiped by `Drop`, the AES round keys (the seed's expansion) by the
/// cipher's own `Drop`.
impl zeroize::ZeroizeOnDrop for AesPrg {}

impl AesPrg {
    /// The generator whose stream is `AES_seed(0), AES_seed(1), …`.
    pub fn new(seed: Block) -> Self {
        AesPrg {
            aes: FixedKeyAes::new(seed),
            counter: 0,
            pending: [0; 16],
            used: 16,
        }
    }

    /// The next `out.len()` blocks of the stream (after discarding the tail of a block that a
    /// byte call consumed only in part).
    pub fn fill_blocks(&mut self, out: &mut [Block]) {
        self.discard_pending();
        for b in out.iter_mut() {
            *b = Block(self.counter);
            self.counter = self.counter.wrapping_add(1);
        }
        self.aes.permute(out);
    }

    /// The next block of the stream (after discarding a partly consumed block, as
    /// [`AesPrg::fill_blocks`]).
    pub fn next_block(&mut self) -> Block {
        self.discard_pending();
        let b = self.aes.permute_block(Block(self.counter));
        self.counter = self.counter.wrapping_add(1);
        b
    }

    /// The next `out.len()` bytes of the byte stream; continues the same stream as the other
    /// calls. Nothing is discarded: the unread tail of the last block is kept for the next byte
    /// call (but a block call discards it).
    pub fn fill_bytes(&mut self, out: &mut [u8]) {
        // 1. The tail of the block a previous byte call began.
        let take = out.len().min(16 - self.used);
        let (head, mut rest) = out.split_at_mut(take);
        head.copy_from_slice(&self.pending[self.used..self.used + take]);
        self.used += take;
        // 2. Whole blocks, generated straight into `out` through a stack buffer (set up only
        //    when there is a whole block to produce: `next_u32` and other short reads skip it).
        if rest.len() >= 16 {
            // Counter blocks encrypted in place in `out` (the same stream as `fill_blocks`).
            self.discard_pending();
            let (whole, tail) = rest.as_chunks_mut::<16>();
            self.aes.ctr_bytes(self.counter, whole);
            self.counter = self.counter.wrapping_add(whole.len() as u128);
            rest = tail;
        }
        // 3. The head of one more block; its tail stays pending.
        if !rest.is_empty() {
            self.pending = self.next_block().to_bytes();
            rest.copy_from_slice(&self.pending[..rest.len()]);
            self.used = rest.len();
        }
    }

    /// Blocks generated so far (the counter of the next block).
    pub fn blocks_generated(&self) -> u128 {
        self.counter
    }

    fn discard_pending(&mut self) {
        if self.used < 16 {
            self.pending.zeroize();
            self.used = 16;
        }
    }
}

impl RngCore for AesPrg {
    /// The next 4 bytes of the byte stream, little-endian.
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        AesPrg::fill_bytes(self, &mut b);
        u32::from_le_bytes(b)
    }

    /// The next 8 bytes of the byte stream, little-endian.
    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        AesPrg::fill_bytes(self, &mut b);
        u64::from_le_bytes(b)
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        AesPrg::fill_bytes(self, dst);
    }
}

/// AES-128-CTR under a uniformly random key is a PRG (AES as a PRF).
impl CryptoRng for AesPrg {}

impl SeedableRng for AesPrg {
    /// The AES key's 16 bytes, `Block::from_bytes(seed)` being the seed of [`AesPrg::new`].
    type Seed = [u8; 16];

    fn from_seed(seed: [u8; 16]) -> Self {
        AesPrg::new(Block::from_bytes(seed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::blocks_to_bytes;
    use rand::Rng;
    use rand::seq::SliceRandom;

    fn stream(seed: Block, n: usize) -> Vec<Block> {
        let mut v = vec![Block::ZERO; n];
        AesPrg::new(seed).fill_blocks(&mut v);
        v
    }

    #[test]
    fn block_j_is_aes_of_counter_j() {
        let seed = Block(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff);
        let aes = FixedKeyAes::new(seed);
        let v = stream(seed, 300);
        for (j, b) in v.iter().enumerate() {
            assert_eq!(*b, aes.permute_block(Block(j as u128)), "block {j}");
        }
        assert_eq!(
            AesPrg::new(seed).next_block(),
            aes.permute_block(Block::ZERO)
        );
    }

    #[test]
    fn block_zero_is_the_fips197_ciphertext_of_zero() {
        // AES-128 with key 000102…0f on the all-zero block (counter 0), computed independently
        // from FIPS-197's key schedule: c6a13b37878f5b826f4f8162a1c8d879.
        let seed = Block::from_bytes(core::array::from_fn(|i| i as u8));
        let want = [
            0xc6, 0xa1, 0x3b, 0x37, 0x87, 0x8f, 0x5b, 0x82, 0x6f, 0x4f, 0x81, 0x62, 0xa1, 0xc8,
            0xd8, 0x79,
        ];
        assert_eq!(AesPrg::new(seed).next_block().to_bytes(), want);
    }

    #[test]
    fn pieces_equal_all_at_once() {
        let seed = Block(99);
        let all = stream(seed, 1000);
        let mut prg = AesPrg::new(seed);
        let mut got = Vec::new();
        for n in [0usize, 1, 7, 64, 3, 300, 1, 256, 368] {
            let mut v = vec![Block::ZERO; n];
            prg.fill_blocks(&mut v);
            got.extend(v);
        }
        assert_eq!(got.len(), 1000);
        assert_eq!(got, all);
        assert_eq!(prg.blocks_generated(), 1000);
        assert_eq!(prg.next_block(), stream(seed, 1001)[1000]);
    }

    #[test]
    fn byte_stream_is_the_block_stream_and_continues() {
        let seed = Block(1234);
        let want = blocks_to_bytes(&stream(seed, 600));
        // At once.
        let mut all = vec![0u8; 600 * 16];
        AesPrg::new(seed).fill_bytes(&mut all);
        assert_eq!(all, want);
        // In odd pieces, through both the inherent and the RngCore entry points.
        let mut prg = AesPrg::new(seed);
        let mut got = Vec::new();
        for n in [0usize, 1, 15, 16, 17, 5000, 3, 29] {
            let mut v = vec![0u8; n];
            RngCore::fill_bytes(&mut prg, &mut v);
            got.extend(v);
        }
        let a = prg.next_u32();
        let b = prg.next_u64();
        got.extend(a.to_le_bytes());
        got.extend(b.to_le_bytes());
        assert_eq!(got, want[..got.len()]);
    }

    #[test]
    fn block_calls_discard_a_partly_read_block() {
        let seed = Block(5);
        let s = stream(seed, 3);
        let mut prg = AesPrg::new(seed);
        let mut three = [0u8; 3];
        prg.fill_bytes(&mut three);
        assert_eq!(three, s[0].to_bytes()[..3]);
        assert_eq!(prg.next_block(), s[1]);
        let mut v = [Block::ZERO; 1];
        prg.fill_blocks(&mut v);
        assert_eq!(v[0], s[2]);
    }

    #[test]
    fn distinct_seeds_differ() {
        let a = stream(Block(1), 64);
        let b = stream(Block(2), 64);
        let c = stream(Block(1 << 127), 64);
        assert!(a.iter().zip(&b).all(|(x, y)| x != y));
        assert!(a.iter().zip(&c).all(|(x, y)| x != y));
        // And the seed survives SeedableRng.
        let mut d = AesPrg::from_seed(Block(1).to_bytes());
        assert_eq!(d.next_block(), a[0]);
    }

    #[test]
    fn drives_rand_shuffles_reproducibly() {
        let mut v: Vec<u32> = (0..100).collect();
        let mut w = v.clone();
        v.shuffle(&mut AesPrg::new(Block(3)));
        w.shuffle(&mut AesPrg::new(Block(3)));
        assert_eq!(v, w);
        assert_ne!(v, (0..100).collect::<Vec<_>>());
        let x: u64 = AesPrg::new(Block(3)).random_range(0..10);
        assert!(x < 10);
    }
}
