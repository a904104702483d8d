//! Subset sums of 512-bit rows over GF(2): the linear combinations of a KOS- or OOS16-style
//! consistency check.
//!
//! [`xor_rows_by_bits`] adds row i (four blocks) into accumulator l for every set bit l of the
//! i-th bit mask: with λ masks bits per row, acc_l = ⊕_{i : χ_{i,l} = 1} row_i. The OOS16
//! check ([Orrù, Orsini, Scholl, CT-RSA 2017], §4) takes λ = 40 such sums over every row of a
//! batch, half of the rows per sum on average, which makes it the largest cost of the check.
//!
//! The bits are public (a challenge), so walking them with data-dependent branches leaks
//! nothing. With AVX-512F (detected once at run time by `cpufeatures`) each row is one 512-bit
//! register and each set bit one XOR into an accumulator held in L1; elsewhere the row is eight
//! words XORed one at a time. Both paths give the same result (tested).

use crate::block::Block;

/// Blocks per row.
pub const ROW_BLOCKS: usize = 4;

/// For every row i < `masks.len()` (row i = `rows[4i..4i + 4]`) and every set bit l of
/// `masks[i]` with l < `acc.len()`: `acc[l] ^= row i`. Bits at or above `acc.len()` are
/// ignored. `rows` must hold at least `4 · masks.len()` blocks (extra blocks are not read).
pub fn xor_rows_by_bits(rows: &[Block], masks: &[u64], acc: &mut [[Block; ROW_BLOCKS]]) {
    let rows = &rows[..ROW_BLOCKS * masks.len()];
    #[cfg(target_arch = "x86_64")]
    if x86::available() {
        // SAFETY: the CPU has AVX-512F (just detected).
        unsafe { x86::xor_rows(rows, masks, acc) };
        return;
    }
    xor_rows_portable(rows, masks, acc);
}

fn xor_rows_portable(rows: &[Block], masks: &[u64], acc: &mut [[Block; ROW_BLOCKS]]) {
    for (row, &c) in rows.chunks_exact(ROW_BLOCKS).zip(masks) {
        let mut c = c;
        while c != 0 {
            let l = c.trailing_zeros() as usize;
            c &= c - 1;
            if let Some(a) = acc.get_mut(l) {
                for (x, y) in a.iter_mut().zip(row) {
                    *x ^= *y;
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Block, ROW_BLOCKS};
    use core::arch::x86_64::*;

    cpufeatures::new!(cpuid_avx512f, "avx512f");

    pub(super) fn available() -> bool {
        cpuid_avx512f::get()
    }

    /// [`super::xor_rows_portable`] with each row and accumulator in a 512-bit register.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn xor_rows(rows: &[Block], masks: &[u64], acc: &mut [[Block; ROW_BLOCKS]]) {
        let mut regs: Vec<__m512i> = acc
            .iter()
            // SAFETY: each accumulator is four blocks, 64 readable bytes; unaligned load.
            .map(|a| unsafe { _mm512_loadu_si512(a.as_ptr().cast()) })
            .collect();
        for (row, &c) in rows.chunks_exact(ROW_BLOCKS).zip(masks) {
            // SAFETY: `row` is four blocks, 64 readable bytes; unaligned load.
            let r = unsafe { _mm512_loadu_si512(row.as_ptr().cast()) };
            let mut c = c;
            while c != 0 {
                let l = c.trailing_zeros() as usize;
                c &= c - 1;
                if let Some(a) = regs.get_mut(l) {
                    *a = _mm512_xor_si512(*a, r);
                }
            }
        }
        for (a, r) in acc.iter_mut().zip(&regs) {
            // SAFETY: each accumulator is four blocks, 64 writable bytes; unaligned store.
            unsafe { _mm512_storeu_si512(a.as_mut_ptr().cast(), *r) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prg::AesPrg;

    #[test]
    fn both_paths_give_the_subset_sums() {
        let mut prg = AesPrg::new(Block(5));
        let n = 301;
        let mut rows = vec![Block::ZERO; ROW_BLOCKS * n + 3];
        prg.fill_blocks(&mut rows);
        let masks: Vec<u64> = (0..n).map(|_| prg.next_block().0 as u64).collect();
        let mut start = vec![[Block::ZERO; ROW_BLOCKS]; 40];
        for a in &mut start {
            prg.fill_blocks(a);
        }
        let mut want = start.clone();
        for (l, w) in want.iter_mut().enumerate() {
            for i in 0..n {
                if (masks[i] >> l) & 1 == 1 {
                    for k in 0..ROW_BLOCKS {
                        w[k] ^= rows[ROW_BLOCKS * i + k];
                    }
                }
            }
        }
        let mut fast = start.clone();
        xor_rows_by_bits(&rows, &masks, &mut fast);
        assert_eq!(fast, want);
        let mut slow = start;
        xor_rows_portable(&rows[..ROW_BLOCKS * n], &masks, &mut slow);
        assert_eq!(slow, want);
    }
}
