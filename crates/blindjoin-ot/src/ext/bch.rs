//! The binary BCH code [511, 76, ≥ 171] of OOS16's 1-out-of-N OT extension ([`super::oos`]).
//!
//! **Construction.** The narrow-sense primitive BCH code of length n = 2^9 − 1 = 511 and designed
//! distance δ = 171: its generator polynomial g(x) is the least common multiple of the minimal
//! polynomials over GF(2) of α^1, …, α^170, with α a root of the primitive polynomial
//! x^9 + x^4 + 1 of GF(2^9). g has degree 435, so the code has dimension 511 − 435 = 76, and the
//! BCH bound gives minimum distance ≥ 171 (Lin-Costello, *Error Control Coding*, §6.1). This is
//! the code OOS16's implementation (libOTe's `bch511`) uses for inputs of up to 76 bits; it is
//! computed here from its definition rather than loaded as a table.
//!
//! **Encoding** is systematic: the message m (76 bits) becomes the codeword
//! c(x) = m(x)·x^435 + (m(x)·x^435 mod g(x)), i.e. the check bits in positions 0..435 and the
//! message in positions 435..511; position 511 of the 512-bit (four-block) row is always zero.
//! The code is linear, so C(m ⊕ m') = C(m) ⊕ C(m'), which OOS16's consistency check relies on.
//! Encoding XORs one precomputed codeword per message byte (ten tables of 256 rows, 160 KiB).

use blindjoin_core::Block;

/// Message bits of the code.
pub const MESSAGE_BITS: u32 = 76;
/// Code length in bits (the last bit of the four-block row is always zero).
pub const CODE_BITS: usize = 511;
/// Designed distance, a lower bound on the minimum distance (BCH bound).
pub const DESIGNED_DISTANCE: usize = 171;
/// Blocks per codeword row.
pub const WIDTH: usize = 4;

const CHECK_BITS: usize = CODE_BITS - MESSAGE_BITS as usize;
const TABLES: usize = (MESSAGE_BITS as usize).div_ceil(8);

/// GF(2^9) with the primitive polynomial x^9 + x^4 + 1.
struct Gf512 {
    exp: [u16; 1022],
    log: [u16; 512],
}

impl Gf512 {
    fn new() -> Self {
        let mut exp = [0u16; 1022];
        let mut log = [0u16; 512];
        let mut x: u16 = 1;
        for (i, e) in exp.iter_mut().enumerate().take(511) {
            *e = x;
            log[usize::from(x)] = i as u16;
            x <<= 1;
            if x & 0x200 != 0 {
                x ^= 0x211;
            }
        }
        for i in 511..1022 {
            exp[i] = exp[i - 511];
        }
        Gf512 { exp, log }
    }

    fn mul(&self, a: u16, b: u16) -> u16 {
        if a == 0 || b == 0 {
            return 0;
        }
        self.exp[usize::from(self.log[usize::from(a)]) + usize::from(self.log[usize::from(b)])]
    }
}

/// The generator polynomial g(x), coefficient i at index i (degree 435).
fn generator() -> Vec<bool> {
    let f = Gf512::new();
    let mut done = [false; 511];
    // g(x) over GF(2^9), coefficients stay in GF(2) (0 or 1) as each minimal polynomial is
    // multiplied in.
    let mut g: Vec<u16> = vec![1];
    for i in 1..DESIGNED_DISTANCE {
        if done[i] {
            continue;
        }
        // The cyclotomic coset of i mod 511 and the minimal polynomial Π (x + α^e) over it.
        let mut m: Vec<u16> = vec![1];
        let mut e = i;
        while !done[e] {
            done[e] = true;
            let root = f.exp[e];
            let mut next = vec![0u16; m.len() + 1];
            for (k, &c) in m.iter().enumerate() {
                next[k + 1] ^= c;
                next[k] ^= f.mul(c, root);
            }
            m = next;
            e = (2 * e) % 511;
        }
        let mut prod = vec![0u16; g.len() + m.len() - 1];
        for (a, &ga) in g.iter().enumerate() {
            for (b, &mb) in m.iter().enumerate() {
                prod[a + b] ^= f.mul(ga, mb);
            }
        }
        g = prod;
    }
    g.iter().map(|&c| c == 1).collect()
}

/// A 512-bit row as four blocks, bit j of the row at bit j % 128 of block j / 128.
fn set_bit(row: &mut [Block; WIDTH], j: usize) {
    row[j / 128].0 ^= 1u128 << (j % 128);
}

/// The encoder: one codeword per value of each message byte.
pub struct Bch511 {
    tables: Vec<[Block; WIDTH]>,
}

impl std::fmt::Debug for Bch511 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bch511").finish_non_exhaustive()
    }
}

impl Default for Bch511 {
    fn default() -> Self {
        Self::new()
    }
}

impl Bch511 {
    /// Builds g(x) and the encoding tables (about a millisecond).
    pub fn new() -> Self {
        let g = generator();
        // Codeword of message bit k: x^(435+k) + (x^(435+k) mod g).
        let mut basis = Vec::with_capacity(MESSAGE_BITS as usize);
        for k in 0..MESSAGE_BITS as usize {
            let mut r = vec![false; CHECK_BITS + k + 1];
            r[CHECK_BITS + k] = true;
            for d in (CHECK_BITS..r.len()).rev() {
                if r[d] {
                    for (t, &gt) in g.iter().enumerate() {
                        r[d - CHECK_BITS + t] ^= gt;
                    }
                }
            }
            let mut row = [Block::ZERO; WIDTH];
            for (j, &bit) in r.iter().enumerate().take(CHECK_BITS) {
                if bit {
                    set_bit(&mut row, j);
                }
            }
            set_bit(&mut row, CHECK_BITS + k);
            basis.push(row);
        }
        let mut tables = vec![[Block::ZERO; WIDTH]; TABLES * 256];
        for t in 0..TABLES {
            for v in 1..256usize {
                let low = v & (v - 1);
                let bit = (v ^ low).trailing_zeros() as usize;
                let k = 8 * t + bit;
                let mut row = tables[t * 256 + low];
                if k < MESSAGE_BITS as usize {
                    for (r, b) in row.iter_mut().zip(&basis[k]) {
                        *r ^= *b;
                    }
                }
                tables[t * 256 + v] = row;
            }
        }
        Bch511 { tables }
    }

    /// The codeword of the low 76 bits of `m` (higher bits are ignored).
    #[inline]
    pub fn encode(&self, m: Block) -> [Block; WIDTH] {
        let bytes = m.0.to_le_bytes();
        let mut out = [Block::ZERO; WIDTH];
        for (t, &b) in bytes.iter().enumerate().take(TABLES) {
            let row = &self.tables[t * 256 + usize::from(b)];
            for (o, r) in out.iter_mut().zip(row) {
                *o ^= *r;
            }
        }
        out
    }

    /// Encodes `inputs` into `out` (four blocks per input, row-major).
    pub fn encode_into(&self, inputs: &[Block], out: &mut Vec<Block>) {
        out.clear();
        out.reserve(inputs.len() * WIDTH);
        for &m in inputs {
            out.extend_from_slice(&self.encode(m));
        }
    }
}

/// The mask of the message bits.
pub const MESSAGE_MASK: u128 = (1u128 << MESSAGE_BITS) - 1;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use blindjoin_core::prg::AesPrg;

    fn weight(row: &[Block; WIDTH]) -> usize {
        row.iter().map(|b| b.0.count_ones() as usize).sum()
    }

    #[test]
    fn generator_has_degree_435_and_divides_x511_plus_1() {
        let g = generator();
        assert_eq!(g.len(), CHECK_BITS + 1);
        assert!(g[0] && g[CHECK_BITS]);
        // x^511 + 1 mod g = 0.
        let mut r = vec![false; 512];
        r[0] = true;
        r[511] = true;
        for d in (CHECK_BITS..512).rev() {
            if r[d] {
                for (t, &gt) in g.iter().enumerate() {
                    r[d - CHECK_BITS + t] ^= gt;
                }
            }
        }
        assert!(r.iter().all(|&b| !b));
    }

    #[test]
    fn the_code_is_linear_systematic_and_heavy() {
        let c = Bch511::new();
        let mut rng = AesPrg::new(Block(11));
        assert_eq!(c.encode(Block::ZERO), [Block::ZERO; WIDTH]);
        for _ in 0..2000 {
            let a = Block(rng.next_block().0 & MESSAGE_MASK);
            let b = Block(rng.next_block().0 & MESSAGE_MASK);
            let (ca, cb, cab) = (c.encode(a), c.encode(b), c.encode(a ^ b));
            for k in 0..WIDTH {
                assert_eq!(cab[k], ca[k] ^ cb[k]);
            }
            // The message sits in positions 435..511, position 511 is zero.
            let msg = (ca[3].0 >> (CHECK_BITS - 384)) & MESSAGE_MASK;
            assert_eq!(msg, a.0);
            assert_eq!(ca[3].0 >> 127, 0);
            if a != Block::ZERO {
                assert!(weight(&ca) >= DESIGNED_DISTANCE, "weight {}", weight(&ca));
            }
        }
        // Single-bit and two-bit messages (the lightest candidates) respect the bound too.
        for k in 0..MESSAGE_BITS {
            for l in k..MESSAGE_BITS {
                let m = Block((1u128 << k) | (1u128 << l));
                assert!(weight(&c.encode(m)) >= DESIGNED_DISTANCE);
            }
        }
        // Bits above the 76 message bits are ignored.
        assert_eq!(c.encode(Block(1 << 80)), [Block::ZERO; WIDTH]);
    }

    #[test]
    fn every_codeword_is_a_multiple_of_g() {
        let c = Bch511::new();
        let g = generator();
        let mut rng = AesPrg::new(Block(5));
        for _ in 0..50 {
            let cw = c.encode(Block(rng.next_block().0));
            let mut r: Vec<bool> = (0..CODE_BITS).map(|j| cw[j / 128].bit(j % 128)).collect();
            for d in (CHECK_BITS..CODE_BITS).rev() {
                if r[d] {
                    for (t, &gt) in g.iter().enumerate() {
                        r[d - CHECK_BITS + t] ^= gt;
                    }
                }
            }
            assert!(r.iter().all(|&b| !b));
        }
    }
}
