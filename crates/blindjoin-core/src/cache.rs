//! Cache hints for the random-access loops of the protocols (hash-table probes, bit lookups in
//! long columns, bin scatters): ask the CPU to load a line ahead of its use so that the misses
//! of several independent accesses overlap.

/// Asks the CPU to bring the cache line holding `*x` into L1. A hint only: it never faults,
/// changes no memory and has no effect on results; on targets without a prefetch instruction it
/// does nothing.
#[inline(always)]
pub fn prefetch<T: ?Sized>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` (SSE, part of the x86-64 baseline) only hints the cache hierarchy: it
    // has no architectural effect and never faults; the address is that of a live reference.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (x as *const T).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// [`prefetch`] of every 64-byte line of the first `span` bytes of `bytes`.
#[inline(always)]
pub fn prefetch_span(bytes: &[u8], span: usize) {
    for line in bytes.chunks(64).take(span.div_ceil(64)) {
        prefetch(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_accept_any_reference() {
        // A hint has no observable effect; these calls must compile for sized and unsized
        // values and for empty slices, and leave the data unchanged.
        let v = vec![1u8, 2, 3];
        prefetch(&v[1]);
        prefetch(v.as_slice());
        prefetch_span(&v, 1 << 10);
        prefetch_span(&[], 64);
        assert_eq!(v, [1, 2, 3]);
    }
}
