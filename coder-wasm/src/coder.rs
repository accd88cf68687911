//! `Coder`: one k+m code with its encode tables and a cache of decode plans per erasure pattern.
//! Shards are raw pointers because callers keep all k+m shards of a stripe in one wasm
//! allocation (inputs and outputs alias one buffer, which slices cannot express).

use crate::{gf, kernel_scalar, matrix};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};

pub const KERNEL_SCALAR: u8 = 0;
pub const KERNEL_SIMD: u8 = 1;

static KERNEL: AtomicU8 = AtomicU8::new(if cfg!(all(target_arch = "wasm32", target_feature = "simd128")) { KERNEL_SIMD } else { KERNEL_SCALAR });

/// Selects the kernel for this instance (tests compare kernels); returns the one now active.
/// Asking for SIMD in a build without it keeps scalar.
pub fn set_kernel(kernel: u8) -> u8 {
    let k = if cfg!(all(target_arch = "wasm32", target_feature = "simd128")) { kernel.min(KERNEL_SIMD) } else { KERNEL_SCALAR };
    KERNEL.store(k, Ordering::Relaxed);
    k
}

pub fn kernel() -> u8 {
    KERNEL.load(Ordering::Relaxed)
}

/// Decode plans kept per coder; a stripe sees few distinct patterns, so a small cap suffices
/// and bounds memory for codes with huge pattern spaces.
const PLAN_CACHE_MAX: usize = 64;

struct CachedPlan {
    plan: matrix::DecodePlan,
    tables: Vec<[u8; 32]>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum CoderError {
    /// More shards are missing than the code can rebuild.
    TooFewShards,
}

pub struct Coder {
    pub k: usize,
    pub m: usize,
    generator: Vec<u8>,
    parity_coeffs: Vec<u8>,
    parity_tables: Vec<[u8; 32]>,
    plans: HashMap<Vec<u8>, CachedPlan>,
}

unsafe fn run(coeffs: &[u8], tables: &[[u8; 32]], inputs: &[*const u8], outputs: &[*mut u8], len: usize, accumulate: bool) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    if kernel() == KERNEL_SIMD {
        crate::kernel_simd::mul_rows(coeffs, tables, inputs, outputs, len, accumulate);
        return;
    }
    let _ = tables;
    kernel_scalar::mul_rows(coeffs, inputs, outputs, len, accumulate);
}

impl Coder {
    /// None unless 1 <= k, k + m <= 256.
    pub fn new(k: usize, m: usize) -> Option<Coder> {
        if k == 0 || k + m > 256 {
            return None;
        }
        let generator = matrix::cauchy_generator(k, m);
        let parity_coeffs = generator[k * k..].to_vec();
        let parity_tables = parity_coeffs.iter().map(|&c| gf::nibble_table(c)).collect();
        Some(Coder { k, m, generator, parity_coeffs, parity_tables, plans: HashMap::new() })
    }

    /// Shard i of the stripe starts at base + i * stride and is `len` bytes long.
    unsafe fn shard(base: *mut u8, stride: usize, i: usize) -> *mut u8 {
        base.add(i * stride)
    }

    /// Writes the m parity shards from the k data shards.
    ///
    /// # Safety
    /// base must address (k+m) shards of `stride >= len` bytes each.
    pub unsafe fn encode(&self, base: *mut u8, stride: usize, len: usize) {
        let inputs: Vec<*const u8> = (0..self.k).map(|i| Self::shard(base, stride, i) as *const u8).collect();
        let outputs: Vec<*mut u8> = (self.k..self.k + self.m).map(|i| Self::shard(base, stride, i)).collect();
        run(&self.parity_coeffs, &self.parity_tables, &inputs, &outputs, len, false);
    }

    /// Adds data shard `i`'s contribution to the m parity shards: parity[r] ^= c(r, i) * src.
    /// Starting from zeroed parity, updates with every data shard (in any order, each once)
    /// give exactly `encode`'s parity (ISA-L's ec_encode_data_update). This lets a writer that
    /// receives data shard by shard keep only the parity, never the whole stripe.
    ///
    /// # Safety
    /// src readable for `len` bytes; parity_base addresses m shards of `stride >= len` bytes,
    /// not overlapping src; i < k.
    pub unsafe fn encode_update(&self, i: usize, src: *const u8, parity_base: *mut u8, stride: usize, len: usize) {
        let coeffs: Vec<u8> = (0..self.m).map(|r| self.parity_coeffs[r * self.k + i]).collect();
        let tables: Vec<[u8; 32]> = (0..self.m).map(|r| self.parity_tables[r * self.k + i]).collect();
        let outputs: Vec<*mut u8> = (0..self.m).map(|r| Self::shard(parity_base, stride, r)).collect();
        run(&coeffs, &tables, &[src], &outputs, len, true);
    }

    /// Folds one source block into several outputs with the given coefficients:
    /// outputs[t] ^= coeffs[t] * src for every t. A column rebuilt from sources that arrive one
    /// at a time, in any order, is the sum of these folds with a decode plan's coefficients.
    ///
    /// # Safety
    /// src readable for `len` bytes; out_base addresses coeffs.len() outputs of `stride >= len`
    /// bytes each, not overlapping src.
    pub unsafe fn mul_add(coeffs: &[u8], src: *const u8, out_base: *mut u8, stride: usize, len: usize) {
        let tables: Vec<[u8; 32]> = coeffs.iter().map(|&c| gf::nibble_table(c)).collect();
        let outputs: Vec<*mut u8> = (0..coeffs.len()).map(|t| Self::shard(out_base, stride, t)).collect();
        run(coeffs, &tables, &[src], &outputs, len, true);
    }

    /// Rebuilds the shards with `present[i] == false` in place (only data shards when
    /// `data_only`). Present shards are trusted, not checked: corruption must be caught by the
    /// shard checksums before this is called.
    ///
    /// # Safety
    /// As `encode`; `present` has k+m entries.
    pub unsafe fn reconstruct(&mut self, base: *mut u8, stride: usize, len: usize, present: &[bool], data_only: bool) -> Result<(), CoderError> {
        let n = self.k + self.m;
        let limit = if data_only { self.k } else { n };
        let targets: Vec<usize> = (0..limit).filter(|&i| !present[i]).collect();
        if present.iter().filter(|&&p| p).count() < self.k {
            return Err(CoderError::TooFewShards);
        }
        if targets.is_empty() {
            return Ok(());
        }
        let mut key: Vec<u8> = present.iter().map(|&p| p as u8).collect();
        key.push(data_only as u8);
        if !self.plans.contains_key(&key) {
            if self.plans.len() >= PLAN_CACHE_MAX {
                self.plans.clear();
            }
            let plan = matrix::decode_plan(&self.generator, self.k, n, present, &targets).ok_or(CoderError::TooFewShards)?;
            let tables = plan.coefficients.iter().map(|&c| gf::nibble_table(c)).collect();
            self.plans.insert(key.clone(), CachedPlan { plan, tables });
        }
        let cached = &self.plans[&key];
        let inputs: Vec<*const u8> = cached.plan.sources.iter().map(|&s| Self::shard(base, stride, s) as *const u8).collect();
        let outputs: Vec<*mut u8> = cached.plan.targets.iter().map(|&t| Self::shard(base, stride, t)).collect();
        run(&cached.plan.coefficients, &cached.tables, &inputs, &outputs, len, false);
        Ok(())
    }

    /// True when the parity shards match the data shards. Recomputes parity a block at a time
    /// into a scratch buffer, so it needs m * VERIFY_BLOCK bytes, not m * len.
    ///
    /// # Safety
    /// As `encode`.
    pub unsafe fn verify(&self, base: *mut u8, stride: usize, len: usize) -> bool {
        const VERIFY_BLOCK: usize = 16 * 1024;
        if self.m == 0 {
            return true;
        }
        let mut scratch = vec![0u8; self.m * VERIFY_BLOCK];
        let mut off = 0;
        while off < len {
            let n = core::cmp::min(VERIFY_BLOCK, len - off);
            let inputs: Vec<*const u8> = (0..self.k).map(|i| Self::shard(base, stride, i).add(off) as *const u8).collect();
            let outputs: Vec<*mut u8> = (0..self.m).map(|r| scratch.as_mut_ptr().add(r * VERIFY_BLOCK)).collect();
            run(&self.parity_coeffs, &self.parity_tables, &inputs, &outputs, n, false);
            for r in 0..self.m {
                let want = core::slice::from_raw_parts(Self::shard(base, stride, self.k + r).add(off), n);
                if &scratch[r * VERIFY_BLOCK..r * VERIFY_BLOCK + n] != want {
                    return false;
                }
            }
            off += n;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stripe(k: usize, m: usize, len: usize, seed: u32) -> Vec<u8> {
        let mut x = seed;
        let mut v = vec![0u8; (k + m) * len];
        for b in v[..k * len].iter_mut() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *b = (x >> 24) as u8;
        }
        v
    }

    #[test]
    fn mul_add_folds_match_reconstruct() {
        // A lost data shard rebuilt by folding each source with its decode coefficient equals
        // what reconstruct gives.
        let (k, m, len) = (5, 3, 41);
        let n = k + m;
        let mut c = Coder::new(k, m).unwrap();
        let mut good = stripe(k, m, len, 11);
        unsafe { c.encode(good.as_mut_ptr(), len, len) };
        let present: Vec<bool> = (0..n).map(|i| i != 1 && i != 3 && i != 6).collect();
        let sources: Vec<usize> = (0..n).filter(|&i| present[i]).collect();
        let plan = matrix::decode_plan(&c.generator, k, n, &present, &[1, 3]).unwrap();
        let mut acc = vec![0u8; 2 * len];
        for (si, &s) in plan.sources.iter().enumerate() {
            assert!(sources.contains(&s));
            let coeffs = [plan.coefficients[si], plan.coefficients[plan.sources.len() + si]];
            unsafe { Coder::mul_add(&coeffs, good.as_ptr().add(s * len), acc.as_mut_ptr(), len, len) };
        }
        assert_eq!(&acc[..len], &good[len..2 * len]);
        assert_eq!(&acc[len..], &good[3 * len..4 * len]);
    }

    #[test]
    fn reconstructs_every_pattern_of_up_to_m_losses() {
        for (k, m) in [(1, 1), (2, 2), (4, 2), (3, 3), (5, 3)] {
            let n = k + m;
            let len = 37;
            let mut c = Coder::new(k, m).unwrap();
            let mut good = stripe(k, m, len, 7);
            unsafe { c.encode(good.as_mut_ptr(), len, len) };
            assert!(unsafe { c.verify(good.as_mut_ptr(), len, len) });
            for mask in 1u32..(1 << n) {
                if mask.count_ones() as usize > m {
                    continue;
                }
                let present: Vec<bool> = (0..n).map(|i| mask & (1 << i) == 0).collect();
                let mut s = good.clone();
                for i in 0..n {
                    if !present[i] {
                        s[i * len..(i + 1) * len].fill(0xAA);
                    }
                }
                unsafe { c.reconstruct(s.as_mut_ptr(), len, len, &present, false).unwrap() };
                assert_eq!(s, good, "k={k} m={m} mask={mask:b}");
            }
        }
    }

    #[test]
    fn refuses_more_than_m_losses_and_bad_shapes() {
        let mut c = Coder::new(4, 2).unwrap();
        let mut s = vec![0u8; 6 * 8];
        let present = [false, false, false, true, true, true];
        assert_eq!(unsafe { c.reconstruct(s.as_mut_ptr(), 8, 8, &present, false) }, Err(CoderError::TooFewShards));
        assert!(Coder::new(0, 2).is_none());
        assert!(Coder::new(200, 57).is_none());
        assert!(Coder::new(255, 1).is_some());
    }

    #[test]
    fn encode_update_shard_by_shard_equals_encode() {
        for (k, m) in [(1, 1), (4, 2), (8, 3), (10, 4), (16, 4), (5, 0)] {
            let len = 4099;
            let c = Coder::new(k, m).unwrap();
            let mut want = stripe(k, m, len, 11);
            unsafe { c.encode(want.as_mut_ptr(), len, len) };
            let data = want[..k * len].to_vec();
            let mut parity = vec![0u8; m * len];
            // Any order: last shard first.
            for i in (0..k).rev() {
                unsafe { c.encode_update(i, data[i * len..].as_ptr(), parity.as_mut_ptr(), len, len) };
            }
            assert_eq!(&parity[..], &want[k * len..], "k={k} m={m}");
        }
    }

    #[test]
    fn verify_detects_a_flipped_parity_bit() {
        let c = Coder::new(4, 2).unwrap();
        let mut s = stripe(4, 2, 100, 3);
        unsafe { c.encode(s.as_mut_ptr(), 100, 100) };
        s[5 * 100 + 42] ^= 1;
        assert!(!unsafe { c.verify(s.as_mut_ptr(), 100, 100) });
    }
}
