/**
 * Checksums of the PUT/GET path: the S3 flexible-checksum CRCs (CRC32, CRC32C, CRC64NVME; all
 * reflected with init and xor-out all ones) with `combine` for multipart FULL_OBJECT values, and
 * XXH64, the per-block hash of the shard format (docs/FORMAT.md says why XXH64).
 *
 * Values chain: `crc32(b, crc32(a)) === crc32(a ++ b)`. CRC32 uses `node:zlib`'s native crc32
 * where the runtime has one (Node >= 20.15; workerd with nodejs_compat), since it measured
 * faster than our wasm tables (bench:coder prints both). Data outside wasm memory is staged
 * through a reused 256 KiB scratch buffer (CRCs stream; XXH64 copies once, it is not chained).
 */
import * as zlib from 'node:zlib';
import type { CoderRuntime } from './runtime.ts';

export interface Checksums {
  crc32(data: Uint8Array, prev?: number): number;
  crc32c(data: Uint8Array, prev?: number): number;
  crc64nvme(data: Uint8Array, prev?: bigint): bigint;
  /** crc(A ++ B) from crc(A), crc(B) and B's length in bytes. */
  crc32Combine(a: number, b: number, lenB: number): number;
  crc32cCombine(a: number, b: number, lenB: number): number;
  crc64nvmeCombine(a: bigint, b: bigint, lenB: number): bigint;
  xxh64(data: Uint8Array, seed?: bigint): bigint;
  /** Where CRC32 is computed: 'native' (node:zlib) or 'wasm'. */
  readonly crc32Impl: 'native' | 'wasm';
}

type NativeCrc32 = (data: Uint8Array, prev?: number) => number;

function nativeCrc32(): NativeCrc32 | null {
  try {
    const f = (zlib as unknown as { crc32?: NativeCrc32 }).crc32;
    return typeof f === 'function' && f(new TextEncoder().encode('123456789'), 0) >>> 0 === 0xcbf43926 ? f : null;
  } catch {
    return null;
  }
}

export function createChecksums(rt: CoderRuntime, opts: { native?: boolean } = {}): Checksums {
  const x = rt.exports;
  const native = opts.native === false ? null : nativeCrc32();
  const u64 = (v: bigint) => BigInt.asUintN(64, v);
  const i64 = (v: bigint) => BigInt.asIntN(64, v);
  return {
    crc32Impl: native ? 'native' : 'wasm',
    crc32: native ? (data, prev = 0) => native(data, prev) >>> 0 : (data, prev = 0) => rt.staged(data, prev, (acc, p, len) => x.sg_crc32(acc, p, len) >>> 0),
    crc32c: (data, prev = 0) => rt.staged(data, prev, (acc, p, len) => x.sg_crc32c(acc, p, len) >>> 0),
    crc64nvme: (data, prev = 0n) => rt.staged(data, prev, (acc, p, len) => u64(x.sg_crc64nvme(i64(acc), p, len))),
    crc32Combine: (a, b, lenB) => x.sg_crc32_combine(a, b, BigInt(lenB)) >>> 0,
    crc32cCombine: (a, b, lenB) => x.sg_crc32c_combine(a, b, BigInt(lenB)) >>> 0,
    crc64nvmeCombine: (a, b, lenB) => u64(x.sg_crc64nvme_combine(i64(a), i64(b), BigInt(lenB))),
    xxh64: (data, seed = 0n) => rt.withCopy(data, (p) => u64(x.sg_xxh64(p, data.length, i64(seed)))),
  };
}
