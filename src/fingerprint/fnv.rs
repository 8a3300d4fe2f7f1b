//! FNV-1a, 64 bit (SPEC v1 "Notation").

/// FNV-1a offset basis.
pub const BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a prime.
pub const PRIME: u64 = 0x0000_0100_0000_01b3;

/// One FNV-1a step: fold `byte` into `h`.
#[inline(always)]
pub(crate) fn step(h: u64, byte: u8) -> u64 {
    (h ^ u64::from(byte)).wrapping_mul(PRIME)
}

/// FNV-1a 64 of `bytes`.
#[inline]
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(BASIS, |h, &b| step(h, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }
}
