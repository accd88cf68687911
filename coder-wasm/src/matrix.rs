//! Generator and decode matrices: ISA-L's `gf_gen_cauchy1_matrix` and Gauss-Jordan inversion.
//! Row-major `Vec<u8>`; rows 0..k of the generator are the identity (systematic code).

use crate::gf;

/// (k+m) x k generator: identity on top, parity row r (k <= r < k+m), column c has 1/(r XOR c).
pub fn cauchy_generator(k: usize, m: usize) -> Vec<u8> {
    let n = k + m;
    let mut a = vec![0u8; n * k];
    for i in 0..k {
        a[i * k + i] = 1;
    }
    for r in k..n {
        for c in 0..k {
            a[r * k + c] = gf::inv((r ^ c) as u8);
        }
    }
    a
}

/// Inverts an n x n matrix; None when singular (never for k rows of a Cauchy generator).
pub fn invert(src: &[u8], n: usize) -> Option<Vec<u8>> {
    let mut a = src.to_vec();
    let mut out = vec![0u8; n * n];
    for i in 0..n {
        out[i * n + i] = 1;
    }
    for col in 0..n {
        // Find a pivot row with a nonzero entry in this column and swap it up.
        let pivot = (col..n).find(|&r| a[r * n + col] != 0)?;
        if pivot != col {
            for j in 0..n {
                a.swap(pivot * n + j, col * n + j);
                out.swap(pivot * n + j, col * n + j);
            }
        }
        let scale = gf::inv(a[col * n + col]);
        for j in 0..n {
            a[col * n + j] = gf::mul(a[col * n + j], scale);
            out[col * n + j] = gf::mul(out[col * n + j], scale);
        }
        for r in 0..n {
            let f = a[r * n + col];
            if r != col && f != 0 {
                for j in 0..n {
                    a[r * n + j] ^= gf::mul(f, a[col * n + j]);
                    out[r * n + j] ^= gf::mul(f, out[col * n + j]);
                }
            }
        }
    }
    Some(out)
}

/// (rows x inner) * (inner x cols)
pub fn multiply(a: &[u8], b: &[u8], rows: usize, inner: usize, cols: usize) -> Vec<u8> {
    let mut out = vec![0u8; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            let mut acc = 0u8;
            for i in 0..inner {
                acc ^= gf::mul(a[r * inner + i], b[i * cols + c]);
            }
            out[r * cols + c] = acc;
        }
    }
    out
}

/// The recovery plan for one erasure pattern: which k surviving shards to read and the
/// coefficient rows that turn them into each wanted missing shard.
pub struct DecodePlan {
    pub sources: Vec<usize>,
    pub targets: Vec<usize>,
    /// targets.len() x k coefficients, row t for `targets[t]`.
    pub coefficients: Vec<u8>,
}

/// `present[i]` says shard i is usable. Sources are the first k present shards (data shards
/// first: healthy reads need no decoding, and lower rows make the cheapest plan).
/// `targets` are the missing shards to rebuild, in ascending order.
pub fn decode_plan(gen: &[u8], k: usize, n: usize, present: &[bool], targets: &[usize]) -> Option<DecodePlan> {
    let sources: Vec<usize> = (0..n).filter(|&i| present[i]).take(k).collect();
    if sources.len() < k {
        return None;
    }
    let mut sub = vec![0u8; k * k];
    for (row, &s) in sources.iter().enumerate() {
        sub[row * k..row * k + k].copy_from_slice(&gen[s * k..s * k + k]);
    }
    let inverse = invert(&sub, k)?;
    // Shard t = gen_row(t) * data = gen_row(t) * inverse * sources.
    let mut coefficients = Vec::with_capacity(targets.len() * k);
    for &t in targets {
        let row = multiply(&gen[t * k..t * k + k], &inverse, 1, k, k);
        coefficients.extend_from_slice(&row);
    }
    Some(DecodePlan { sources, targets: targets.to_vec(), coefficients })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cauchy_matches_isal_formula() {
        let g = cauchy_generator(4, 2);
        assert_eq!(&g[0..16], &[1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
        for r in 4..6 {
            for c in 0..4 {
                assert_eq!(gf::mul(g[r * 4 + c], (r ^ c) as u8), 1);
            }
        }
    }

    #[test]
    fn inverse_times_matrix_is_identity() {
        for (k, m) in [(1, 1), (4, 2), (10, 4), (17, 3)] {
            let g = cauchy_generator(k, m);
            // Take the last k rows: the hardest case (mostly parity).
            let sub = g[m * k..].to_vec();
            let inv = invert(&sub, k).expect("invertible");
            let id = multiply(&sub, &inv, k, k, k);
            for i in 0..k {
                for j in 0..k {
                    assert_eq!(id[i * k + j], (i == j) as u8);
                }
            }
        }
    }

    #[test]
    fn every_k_subset_is_invertible_for_small_codes() {
        for (k, m) in [(2, 2), (3, 3), (4, 2), (4, 4), (5, 3)] {
            let n = k + m;
            let g = cauchy_generator(k, m);
            for mask in 0u32..(1 << n) {
                if mask.count_ones() as usize != k {
                    continue;
                }
                let rows: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
                let mut sub = Vec::new();
                for r in rows {
                    sub.extend_from_slice(&g[r * k..r * k + k]);
                }
                assert!(invert(&sub, k).is_some(), "k={k} m={m} mask={mask:b}");
            }
        }
    }

    #[test]
    fn singular_matrix_is_refused() {
        assert!(invert(&[1, 2, 1, 2], 2).is_none());
    }
}
