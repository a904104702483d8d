//! Parameter derivations shared by several protocols.

/// ⌈log2(x)⌉ for x ≥ 1, and 0 for x = 0.
pub fn ceil_log2(x: u128) -> u32 {
    if x <= 1 {
        0
    } else {
        128 - (x - 1).leading_zeros()
    }
}

/// Bits of a comparison tag so that any false match among n1·n2 comparisons has probability
/// at most 2^-λ: ℓ = λ + ⌈log2(n1·n2)⌉ (PSZ §3 and §6.2: "ℓ2 = λ + log2 n1 + log2 n2").
pub fn tag_bits(lambda: u32, n1: u64, n2: u64) -> u32 {
    lambda + ceil_log2(u128::from(n1) * u128::from(n2))
}

/// Bytes that carry [`tag_bits`] on the wire (rounded up to whole bytes).
pub fn tag_bytes(lambda: u32, n1: u64, n2: u64) -> usize {
    tag_bits(lambda, n1, n2).div_ceil(8) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceil_log2_small_values() {
        assert_eq!(
            [0, 1, 2, 3, 4, 5, 1 << 20, (1 << 20) + 1].map(ceil_log2),
            [0, 0, 1, 2, 2, 3, 20, 21]
        );
    }

    #[test]
    fn tag_length_follows_lambda_plus_log_n1_n2() {
        // λ = 40 at n1 = n2 = 2^16: 40 + 32 = 72 bits = 9 bytes; at 2^20: 80 bits = 10 bytes.
        assert_eq!(tag_bits(40, 1 << 16, 1 << 16), 72);
        assert_eq!(tag_bytes(40, 1 << 16, 1 << 16), 9);
        assert_eq!(tag_bytes(40, 1 << 20, 1 << 20), 10);
        assert_eq!(tag_bits(40, 10, 1000), 40 + 14);
        assert_eq!(tag_bits(40, 0, 0), 40);
        // The largest sizes the handshake admits still fit a 16-byte tag.
        assert!(tag_bytes(40, 1 << 32, 1 << 32) <= 16);
    }
}
