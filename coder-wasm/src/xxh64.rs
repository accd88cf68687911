//! XXH64 (Yann Collet's xxHash, 64-bit variant, spec: xxhash/doc/xxhash_spec.md): the per-block
//! integrity hash of the shard format. Chosen because it is several times faster than any CRC we
//! can build without carry-less multiply (see BENCHMARKS), has a public spec and many
//! independent implementations (a third-party decoder can verify shards), and a 64-bit value:
//! random corruption slips through with probability 2^-64, against 2^-32 for CRC32C.
//! It is not a MAC: it detects rot and truncation, not tampering by someone with backend access.

const P1: u64 = 0x9E37_79B1_85EB_CA87;
const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P3: u64 = 0x1656_67B1_9E37_79F9;
const P4: u64 = 0x85EB_CA77_C2B2_AE63;
const P5: u64 = 0x27D4_EB2F_1656_67C5;

#[inline(always)]
fn read64(b: &[u8], i: usize) -> u64 {
    let s = &b[i..i + 8];
    // In bounds (checked above); an unaligned little-endian load compiles to one i64.load.
    u64::from_le(unsafe { core::ptr::read_unaligned(s.as_ptr() as *const u64) })
}

#[inline(always)]
fn read32(b: &[u8], i: usize) -> u64 {
    let s = &b[i..i + 4];
    u32::from_le(unsafe { core::ptr::read_unaligned(s.as_ptr() as *const u32) }) as u64
}

#[inline(always)]
fn round(acc: u64, lane: u64) -> u64 {
    acc.wrapping_add(lane.wrapping_mul(P2)).rotate_left(31).wrapping_mul(P1)
}

#[inline(always)]
fn merge(acc: u64, v: u64) -> u64 {
    (acc ^ round(0, v)).wrapping_mul(P1).wrapping_add(P4)
}

pub fn hash(data: &[u8], seed: u64) -> u64 {
    let len = data.len();
    let mut i = 0;
    let mut h;
    if len >= 32 {
        let mut v1 = seed.wrapping_add(P1).wrapping_add(P2);
        let mut v2 = seed.wrapping_add(P2);
        let mut v3 = seed;
        let mut v4 = seed.wrapping_sub(P1);
        for stripe in data.chunks_exact(32) {
            v1 = round(v1, read64(stripe, 0));
            v2 = round(v2, read64(stripe, 8));
            v3 = round(v3, read64(stripe, 16));
            v4 = round(v4, read64(stripe, 24));
        }
        i = len - len % 32;
        h = v1.rotate_left(1).wrapping_add(v2.rotate_left(7)).wrapping_add(v3.rotate_left(12)).wrapping_add(v4.rotate_left(18));
        h = merge(h, v1);
        h = merge(h, v2);
        h = merge(h, v3);
        h = merge(h, v4);
    } else {
        h = seed.wrapping_add(P5);
    }
    h = h.wrapping_add(len as u64);
    while i + 8 <= len {
        h ^= round(0, read64(data, i));
        h = h.rotate_left(27).wrapping_mul(P1).wrapping_add(P4);
        i += 8;
    }
    if i + 4 <= len {
        h ^= read32(data, i).wrapping_mul(P1);
        h = h.rotate_left(23).wrapping_mul(P2).wrapping_add(P3);
        i += 4;
    }
    while i < len {
        h ^= (data[i] as u64).wrapping_mul(P5);
        h = h.rotate_left(11).wrapping_mul(P1);
        i += 1;
    }
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^= h >> 32;
    h
}

#[cfg(test)]
mod tests {
    #[test]
    fn empty_input_known_answer() {
        // From the xxHash reference implementation's self-test.
        assert_eq!(super::hash(b"", 0), 0xEF46_DB37_51D8_E999);
    }
}
