//! The scalar kernel: the oracle every SIMD kernel is compared against, byte for byte, and the
//! fallback where a runtime has no wasm SIMD. One 256-byte product table per coefficient.

use crate::gf;

/// outputs[r] = XOR over i of coeffs[r * n_in + i] * inputs[i], for `len` bytes; with
/// `accumulate`, the products are XORed into what outputs[r] already holds (an encode update).
///
/// # Safety
/// Every input pointer must be readable and every output pointer writable for `len` bytes;
/// outputs must not overlap inputs or each other.
pub unsafe fn mul_rows(coeffs: &[u8], inputs: &[*const u8], outputs: &[*mut u8], len: usize, accumulate: bool) {
    let n_in = inputs.len();
    let mut table = [0u8; 256];
    for (r, &out) in outputs.iter().enumerate() {
        let out = core::slice::from_raw_parts_mut(out, len);
        for (i, &inp) in inputs.iter().enumerate() {
            let c = coeffs[r * n_in + i];
            for (b, t) in table.iter_mut().enumerate() {
                *t = gf::mul(c, b as u8);
            }
            let inp = core::slice::from_raw_parts(inp, len);
            if i == 0 && !accumulate {
                for (o, &x) in out.iter_mut().zip(inp) {
                    *o = table[x as usize];
                }
            } else {
                for (o, &x) in out.iter_mut().zip(inp) {
                    *o ^= table[x as usize];
                }
            }
        }
        if n_in == 0 && !accumulate {
            out.fill(0);
        }
    }
}
