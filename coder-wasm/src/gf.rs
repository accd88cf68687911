//! GF(2^8) arithmetic with the field polynomial 0x11d (x^8 + x^4 + x^3 + x^2 + 1), generator 2:
//! the field of ISA-L, klauspost/reedsolomon and most storage Reed-Solomon codes.
//! Tables are computed at compile time so the wasm module needs no start-up work.

const POLY: u16 = 0x11d;

const fn build_exp_log() -> ([u8; 512], [u8; 256]) {
    let mut exp = [0u8; 512];
    let mut log = [0u8; 256];
    let mut x: u16 = 1;
    let mut i = 0;
    while i < 255 {
        exp[i] = x as u8;
        log[x as usize] = i as u8;
        x <<= 1;
        if x & 0x100 != 0 {
            x ^= POLY;
        }
        i += 1;
    }
    // Doubled so exp[log a + log b] needs no modulo.
    while i < 512 {
        exp[i] = exp[i - 255];
        i += 1;
    }
    (exp, log)
}

const EXP_LOG: ([u8; 512], [u8; 256]) = build_exp_log();
pub const EXP: [u8; 512] = EXP_LOG.0;
pub const LOG: [u8; 256] = EXP_LOG.1;

#[inline]
pub fn mul(a: u8, b: u8) -> u8 {
    if a == 0 || b == 0 {
        0
    } else {
        EXP[LOG[a as usize] as usize + LOG[b as usize] as usize]
    }
}

/// Multiplicative inverse. `inv(0)` is defined as 0 (ISA-L's convention); callers never ask.
#[inline]
pub fn inv(a: u8) -> u8 {
    if a == 0 {
        0
    } else {
        EXP[255 - LOG[a as usize] as usize]
    }
}

/// Bitwise (Russian peasant) multiply: an oracle that shares no table with `mul`.
pub fn mul_slow(mut a: u8, mut b: u8) -> u8 {
    let mut p = 0u8;
    while b != 0 {
        if b & 1 != 0 {
            p ^= a;
        }
        let carry = a & 0x80 != 0;
        a <<= 1;
        if carry {
            a ^= (POLY & 0xff) as u8;
        }
        b >>= 1;
    }
    p
}

/// The 32-byte nibble table of constant `c`: bytes 0..16 are c*x for x < 16 (low nibble),
/// bytes 16..32 are c*(x<<4) (high nibble). c*b = lo[b & 15] ^ hi[b >> 4].
pub fn nibble_table(c: u8) -> [u8; 32] {
    let mut t = [0u8; 32];
    for x in 0..16u8 {
        t[x as usize] = mul(c, x);
        t[16 + x as usize] = mul(c, x << 4);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mul_matches_bitwise_oracle_for_all_pairs() {
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                assert_eq!(mul(a, b), mul_slow(a, b), "{a} * {b}");
            }
        }
    }

    #[test]
    fn every_nonzero_element_has_an_inverse() {
        for a in 1..=255u8 {
            assert_eq!(mul(a, inv(a)), 1, "inv({a})");
        }
    }

    #[test]
    fn generator_2_has_order_255() {
        let mut seen = [false; 256];
        for i in 0..255 {
            assert!(!seen[EXP[i] as usize]);
            seen[EXP[i] as usize] = true;
        }
        assert!(!seen[0]);
    }

    #[test]
    fn nibble_tables_multiply() {
        for c in [0u8, 1, 2, 0x8e, 0xff] {
            let t = nibble_table(c);
            for b in 0..=255u8 {
                assert_eq!(t[(b & 15) as usize] ^ t[16 + (b >> 4) as usize], mul(c, b));
            }
        }
    }
}
