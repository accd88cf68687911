//! The wasm exports. Plain integers and pointers into this module's memory; the TypeScript
//! face (../index.ts) owns the safety contract. Negative results are error codes.

use crate::coder::{self, Coder};
use crate::{crc, xxh64};
use std::alloc::{alloc, dealloc, Layout};

const ALIGN: usize = 16;

#[no_mangle]
pub extern "C" fn sg_alloc(size: usize) -> *mut u8 {
    match Layout::from_size_align(size.max(1), ALIGN) {
        Ok(l) => unsafe { alloc(l) },
        Err(_) => core::ptr::null_mut(),
    }
}

/// # Safety
/// ptr came from `sg_alloc(size)` and is freed once.
#[no_mangle]
pub unsafe extern "C" fn sg_free(ptr: *mut u8, size: usize) {
    if !ptr.is_null() {
        dealloc(ptr, Layout::from_size_align_unchecked(size.max(1), ALIGN));
    }
}

#[no_mangle]
pub extern "C" fn sg_set_kernel(kernel: u32) -> u32 {
    coder::set_kernel(kernel as u8) as u32
}

#[no_mangle]
pub extern "C" fn sg_coder_new(k: u32, m: u32) -> *mut Coder {
    match Coder::new(k as usize, m as usize) {
        Some(c) => Box::into_raw(Box::new(c)),
        None => core::ptr::null_mut(),
    }
}

/// # Safety
/// c came from `sg_coder_new` and is freed once.
#[no_mangle]
pub unsafe extern "C" fn sg_coder_free(c: *mut Coder) {
    if !c.is_null() {
        drop(Box::from_raw(c));
    }
}

/// # Safety
/// See `Coder::encode`.
#[no_mangle]
pub unsafe extern "C" fn sg_encode(c: *const Coder, base: *mut u8, stride: usize, len: usize) {
    (*c).encode(base, stride, len);
}

/// # Safety
/// See `Coder::encode_update`; `data_index < k`.
#[no_mangle]
pub unsafe extern "C" fn sg_encode_update(c: *const Coder, data_index: u32, src: *const u8, parity_base: *mut u8, stride: usize, len: usize) {
    (*c).encode_update(data_index as usize, src, parity_base, stride, len);
}

/// outputs[t] ^= coeffs[t] * src for t < count; output t at out_base + t * stride.
///
/// # Safety
/// See `Coder::mul_add`; coeffs readable for `count` bytes.
#[no_mangle]
pub unsafe extern "C" fn sg_mul_add(coeffs: *const u8, count: u32, src: *const u8, out_base: *mut u8, stride: usize, len: usize) {
    if count == 0 || len == 0 {
        return;
    }
    Coder::mul_add(core::slice::from_raw_parts(coeffs, count as usize), src, out_base, stride, len);
}

/// `present` points at k+m bytes, nonzero = shard usable. Returns 0, or -1 when too few shards.
///
/// # Safety
/// See `Coder::reconstruct`.
#[no_mangle]
pub unsafe extern "C" fn sg_reconstruct(c: *mut Coder, base: *mut u8, stride: usize, len: usize, present: *const u8, data_only: u32) -> i32 {
    let c = &mut *c;
    let flags: Vec<bool> = core::slice::from_raw_parts(present, c.k + c.m).iter().map(|&b| b != 0).collect();
    match c.reconstruct(base, stride, len, &flags, data_only != 0) {
        Ok(()) => 0,
        Err(_) => -1,
    }
}

/// # Safety
/// See `Coder::verify`.
#[no_mangle]
pub unsafe extern "C" fn sg_verify(c: *const Coder, base: *mut u8, stride: usize, len: usize) -> u32 {
    (*c).verify(base, stride, len) as u32
}

unsafe fn bytes<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        core::slice::from_raw_parts(ptr, len)
    }
}

/// # Safety
/// ptr readable for len bytes.
#[no_mangle]
pub unsafe extern "C" fn sg_crc32(prev: u32, ptr: *const u8, len: usize) -> u32 {
    crc::crc32::update(prev, bytes(ptr, len))
}

/// # Safety
/// ptr readable for len bytes.
#[no_mangle]
pub unsafe extern "C" fn sg_crc32c(prev: u32, ptr: *const u8, len: usize) -> u32 {
    crc::crc32c::update(prev, bytes(ptr, len))
}

/// # Safety
/// ptr readable for len bytes.
#[no_mangle]
pub unsafe extern "C" fn sg_crc64nvme(prev: u64, ptr: *const u8, len: usize) -> u64 {
    crc::crc64nvme::update(prev, bytes(ptr, len))
}

#[no_mangle]
pub extern "C" fn sg_crc32_combine(a: u32, b: u32, len_b: u64) -> u32 {
    crc::crc32::combine(a, b, len_b)
}

#[no_mangle]
pub extern "C" fn sg_crc32c_combine(a: u32, b: u32, len_b: u64) -> u32 {
    crc::crc32c::combine(a, b, len_b)
}

#[no_mangle]
pub extern "C" fn sg_crc64nvme_combine(a: u64, b: u64, len_b: u64) -> u64 {
    crc::crc64nvme::combine(a, b, len_b)
}

/// # Safety
/// ptr readable for len bytes.
#[no_mangle]
pub unsafe extern "C" fn sg_xxh64(ptr: *const u8, len: usize, seed: u64) -> u64 {
    xxh64::hash(bytes(ptr, len), seed)
}
