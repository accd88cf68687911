//! shardgate's erasure coder: systematic Reed-Solomon over GF(2^8) (poly 0x11d) with the ISA-L
//! Cauchy generator, byte-compatible with ISA-L and klauspost/reedsolomon (WithCauchyMatrix),
//! plus the checksums of the PUT path. No third-party crates.
//!
//! Three wasm builds come from this one source (see build.sh): scalar (no SIMD), simd128, and
//! relaxed (simd128 with `i8x16.swizzle` rewritten to `i8x16.relaxed_swizzle`).

pub mod coder;
pub mod crc;
pub mod gf;
pub mod kernel_scalar;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub mod kernel_simd;
pub mod matrix;
pub mod xxh64;

#[cfg(target_arch = "wasm32")]
mod ffi;
