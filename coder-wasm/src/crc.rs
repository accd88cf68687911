//! The S3 flexible-checksum CRCs, reflected, init and xor-out all ones: CRC32 (poly 0xEDB88320,
//! reflected form of 0x04C11DB7), CRC32C (0x82F63B78, Castagnoli) and CRC64NVME
//! (0x9A6C9329AC4BC9B5, reflected form of 0xAD93D23594C93659).
//!
//! Wasm has no carry-less multiply, so this is slicing-by-16: 16 table lookups per 16 bytes.
//! `update(prev, data)` takes and returns finished values (zlib style: start from 0), so a
//! stream can be hashed piecewise, and `combine` joins two CRCs given the second one's length
//! (what S3 needs for multipart FULL_OBJECT checksums).

macro_rules! crc_impl {
    ($name:ident, $t:ty, $poly:expr) => {
        pub mod $name {
            pub const POLY: $t = $poly;
            const BITS: u32 = <$t>::BITS;

            const fn tables() -> [[$t; 256]; 16] {
                let mut t = [[0 as $t; 256]; 16];
                let mut i = 0;
                while i < 256 {
                    let mut c = i as $t;
                    let mut b = 0;
                    while b < 8 {
                        c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
                        b += 1;
                    }
                    t[0][i] = c;
                    i += 1;
                }
                let mut j = 1;
                while j < 16 {
                    let mut i = 0;
                    while i < 256 {
                        let p = t[j - 1][i];
                        t[j][i] = (p >> 8) ^ t[0][(p & 0xff) as usize];
                        i += 1;
                    }
                    j += 1;
                }
                t
            }

            static T: [[$t; 256]; 16] = tables();

            #[inline(always)]
            fn step16(crc: $t, b: &[u8]) -> $t {
                // Two little-endian words; the first absorbs the running CRC (its low BITS/8 bytes).
                let lo = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) ^ (crc as u64);
                let hi = u64::from_le_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]);
                let t = &T;
                (t[15][(lo & 0xff) as usize] ^ t[14][((lo >> 8) & 0xff) as usize])
                    ^ (t[13][((lo >> 16) & 0xff) as usize] ^ t[12][((lo >> 24) & 0xff) as usize])
                    ^ (t[11][((lo >> 32) & 0xff) as usize] ^ t[10][((lo >> 40) & 0xff) as usize])
                    ^ (t[9][((lo >> 48) & 0xff) as usize] ^ t[8][(lo >> 56) as usize])
                    ^ (t[7][(hi & 0xff) as usize] ^ t[6][((hi >> 8) & 0xff) as usize])
                    ^ (t[5][((hi >> 16) & 0xff) as usize] ^ t[4][((hi >> 24) & 0xff) as usize])
                    ^ (t[3][((hi >> 32) & 0xff) as usize] ^ t[2][((hi >> 40) & 0xff) as usize])
                    ^ (t[1][((hi >> 48) & 0xff) as usize] ^ t[0][(hi >> 56) as usize])
            }

            pub fn update(prev: $t, data: &[u8]) -> $t {
                let mut crc = !prev;
                let mut chunks = data.chunks_exact(16);
                for ch in &mut chunks {
                    crc = step16(crc, ch);
                }
                for &b in chunks.remainder() {
                    crc = (crc >> 8) ^ T[0][((crc ^ b as $t) & 0xff) as usize];
                }
                !crc
            }

            /// Bitwise reference, no tables: the oracle for tests.
            pub fn bitwise(prev: $t, data: &[u8]) -> $t {
                let mut crc = !prev;
                for &b in data {
                    crc ^= b as $t;
                    for _ in 0..8 {
                        crc = if crc & 1 != 0 { (crc >> 1) ^ POLY } else { crc >> 1 };
                    }
                }
                !crc
            }

            /// a * b mod P in the reflected representation (x^0 is the top bit).
            fn mult_mod_p(a: $t, mut b: $t) -> $t {
                let mut m: $t = 1 << (BITS - 1);
                let mut p: $t = 0;
                loop {
                    if a & m != 0 {
                        p ^= b;
                        if a & (m - 1) == 0 {
                            break;
                        }
                    }
                    m >>= 1;
                    b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
                }
                p
            }

            /// x^(8 * bytes) mod P, by repeated squaring.
            fn x_pow_8n(mut bytes: u64) -> $t {
                let mut result: $t = 1 << (BITS - 1); // x^0
                let mut sq: $t = 1 << (BITS - 1 - 8); // x^8
                while bytes != 0 {
                    if bytes & 1 != 0 {
                        result = mult_mod_p(sq, result);
                    }
                    sq = mult_mod_p(sq, sq);
                    bytes >>= 1;
                }
                result
            }

            /// CRC of A||B from crc(A), crc(B) and len(B) in bytes.
            pub fn combine(crc_a: $t, crc_b: $t, len_b: u64) -> $t {
                mult_mod_p(x_pow_8n(len_b), crc_a) ^ crc_b
            }
        }
    };
}

crc_impl!(crc32, u32, 0xEDB8_8320);
crc_impl!(crc32c, u32, 0x82F6_3B78);
crc_impl!(crc64nvme, u64, 0x9A6C_9329_AC4B_C9B5);

#[cfg(test)]
mod tests {
    use super::*;

    const CHECK: &[u8] = b"123456789";

    #[test]
    fn check_values() {
        assert_eq!(crc32::update(0, CHECK), 0xCBF4_3926);
        assert_eq!(crc32c::update(0, CHECK), 0xE306_9283);
        assert_eq!(crc64nvme::update(0, CHECK), 0xAE8B_1486_0A79_9888);
    }

    fn sample(len: usize) -> Vec<u8> {
        let mut x: u32 = 0x9E37_79B9;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn sliced_equals_bitwise_for_every_length_to_100() {
        let data = sample(100);
        for len in 0..=100 {
            let d = &data[..len];
            assert_eq!(crc32::update(0, d), crc32::bitwise(0, d));
            assert_eq!(crc32c::update(0, d), crc32c::bitwise(0, d));
            assert_eq!(crc64nvme::update(0, d), crc64nvme::bitwise(0, d));
        }
    }

    #[test]
    fn piecewise_update_and_combine_agree_with_one_pass() {
        let data = sample(3000);
        for split in [0usize, 1, 15, 16, 17, 1000, 2999, 3000] {
            let (a, b) = data.split_at(split);
            let whole32 = crc32::update(0, &data);
            assert_eq!(crc32::update(crc32::update(0, a), b), whole32);
            assert_eq!(crc32::combine(crc32::update(0, a), crc32::update(0, b), b.len() as u64), whole32);
            let whole32c = crc32c::update(0, &data);
            assert_eq!(crc32c::combine(crc32c::update(0, a), crc32c::update(0, b), b.len() as u64), whole32c);
            let whole64 = crc64nvme::update(0, &data);
            assert_eq!(crc64nvme::combine(crc64nvme::update(0, a), crc64nvme::update(0, b), b.len() as u64), whole64);
        }
    }
}
