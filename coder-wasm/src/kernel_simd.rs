//! The simd128 kernel: nibble-table multiply with `i8x16.swizzle`.
//!
//! Per cache block (BLOCK bytes of every shard), parity rows are produced in groups of up to 4:
//! for each input shard the group's 8 nibble tables are held in registers while the block is
//! streamed through, and the group's outputs (4 x BLOCK bytes) stay in L1 between inputs.
//!
//! Every swizzle index here is masked to 0..16 (`x & 0x0f`, `(x >> 4) & 0x0f`). That is what
//! makes the relaxed build sound: `i8x16.relaxed_swizzle` is only implementation-defined for
//! indices >= 16, so on these inputs it returns exactly what `i8x16.swizzle` does. The relaxed
//! module is this code with the swizzle opcodes rewritten (see tools/relax-swizzle.mjs).

use core::arch::wasm32::*;

// Tuned per build on the benchmark machine (docs/CODER.md has the sweep): BLOCK bytes of each
// shard per pass; U vectors of 16 bytes per loop iteration. The plain build needs the wider
// unroll to hide the extra instructions V8 emits around each i8x16.swizzle (a saturating add
// that forces indices >= 16 to zero); with relaxed swizzle (one pshufb) U = 2 is best.
#[cfg(shardgate_relaxed)]
const BLOCK: usize = 4096;
#[cfg(not(shardgate_relaxed))]
const BLOCK: usize = 2048;
#[cfg(shardgate_relaxed)]
const U: usize = 2;
#[cfg(not(shardgate_relaxed))]
const U: usize = 4;
const STEP: usize = 16 * U;

#[inline(always)]
unsafe fn mul_block<const R: usize, const FIRST: bool>(
    lo: &[v128; 4],
    hi: &[v128; 4],
    input: *const u8,
    outs: &[*mut u8; 4],
    start: usize,
    end: usize,
) {
    let mask = u8x16_splat(0x0f);
    let mut off = start;
    while off < end {
        let mut l = [mask; U];
        let mut h = [mask; U];
        for u in 0..U {
            let x = v128_load(input.add(off + 16 * u) as *const v128);
            l[u] = v128_and(x, mask);
            h[u] = v128_and(u16x8_shr(x, 4), mask);
        }
        for r in 0..R {
            let o = outs[r].add(off);
            for u in 0..U {
                let mut p = v128_xor(i8x16_swizzle(lo[r], l[u]), i8x16_swizzle(hi[r], h[u]));
                if !FIRST {
                    p = v128_xor(p, v128_load(o.add(16 * u) as *const v128));
                }
                v128_store(o.add(16 * u) as *mut v128, p);
            }
        }
        off += STEP;
    }
}

#[inline(always)]
unsafe fn mul_group<const R: usize>(
    tables: &[[u8; 32]],
    n_in: usize,
    inputs: &[*const u8],
    outs: &[*mut u8; 4],
    start: usize,
    end: usize,
    accumulate: bool,
) {
    let mut lo = [u8x16_splat(0); 4];
    let mut hi = [u8x16_splat(0); 4];
    for i in 0..n_in {
        for r in 0..R {
            let t = tables[r * n_in + i].as_ptr();
            lo[r] = v128_load(t as *const v128);
            hi[r] = v128_load(t.add(16) as *const v128);
        }
        if i == 0 && !accumulate {
            mul_block::<R, true>(&lo, &hi, inputs[i], outs, start, end);
        } else {
            mul_block::<R, false>(&lo, &hi, inputs[i], outs, start, end);
        }
    }
}

/// Same contract as `kernel_scalar::mul_rows`, with `tables[r * n_in + i]` the nibble table of
/// coefficient (r, i) (see `gf::nibble_table`).
///
/// # Safety
/// As `kernel_scalar::mul_rows`.
pub unsafe fn mul_rows(coeffs: &[u8], tables: &[[u8; 32]], inputs: &[*const u8], outputs: &[*mut u8], len: usize, accumulate: bool) {
    let n_in = inputs.len();
    if n_in == 0 {
        crate::kernel_scalar::mul_rows(coeffs, inputs, outputs, len, accumulate);
        return;
    }
    let vec_len = len - len % STEP;
    let mut start = 0;
    while start < vec_len {
        let end = core::cmp::min(start + BLOCK, vec_len);
        let mut g = 0;
        while g < outputs.len() {
            let rows = core::cmp::min(4, outputs.len() - g);
            let mut outs = [core::ptr::null_mut(); 4];
            outs[..rows].copy_from_slice(&outputs[g..g + rows]);
            let t = &tables[g * n_in..];
            match rows {
                1 => mul_group::<1>(t, n_in, inputs, &outs, start, end, accumulate),
                2 => mul_group::<2>(t, n_in, inputs, &outs, start, end, accumulate),
                3 => mul_group::<3>(t, n_in, inputs, &outs, start, end, accumulate),
                _ => mul_group::<4>(t, n_in, inputs, &outs, start, end, accumulate),
            }
            g += rows;
        }
        start = end;
    }
    if vec_len < len {
        let tail_in: Vec<*const u8> = inputs.iter().map(|p| p.add(vec_len)).collect();
        let tail_out: Vec<*mut u8> = outputs.iter().map(|p| p.add(vec_len)).collect();
        crate::kernel_scalar::mul_rows(coeffs, &tail_in, &tail_out, len - vec_len, accumulate);
    }
}
