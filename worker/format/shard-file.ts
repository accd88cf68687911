/**
 * The shard file format, version 1 (docs/FORMAT.md is the byte-by-byte spec). A shard is
 * self-describing: its header carries the unit's geometry and the object's identity, each block
 * carries its XXH64, and the footer carries the unit's MD5, the client checksum and every
 * shard's digest, so a catalog can be rebuilt and an object rescued from raw backend buckets.
 */
import { checksums } from '../../coder-wasm/index.ts';
import type { ChecksumAlgorithm } from '../model/object-store.ts';
import type { HeaderSeal } from './seal.ts';
import type { Codec, UnitLayoutKind } from './manifest.ts';

export const HEADER_MAGIC = new Uint8Array([0x53, 0x47, 0x53, 0x48, 0x52, 0x44, 0x00, 0x01]); // "SGSHRD" 0 1
export const FOOTER_MAGIC = new Uint8Array([0x53, 0x47, 0x46, 0x4f, 0x4f, 0x54, 0x00, 0x01]); // "SGFOOT" 0 1
/** A column unit's data shard that was complete before the rest of its unit: see ShardFooter.partial. */
export const PARTIAL_FOOTER_MAGIC = new Uint8Array([0x53, 0x47, 0x46, 0x50, 0x52, 0x54, 0x00, 0x01]); // "SGFPRT" 0 1
export const SHARD_DIGEST_BYTES = 8;
/** magic 8 + md5 16 + checksum algorithm 1 + checksum 32 + footer xxh64 8 (+ 8 per shard). */
export const FOOTER_FIXED_BYTES = 65;
const CHECKSUM_CODES: (ChecksumAlgorithm | null)[] = [null, 'CRC32', 'CRC32C', 'CRC64NVME', 'SHA1', 'SHA256'];

export interface ShardHeader {
  format: 1;
  codec: Codec;
  /** Absent in a sealed header (`seal`): the identity is in `seal.meta` (sealed-header.ts opens it). */
  bucket?: string;
  key?: string;
  unitId: string;
  /** Set for multipart parts; the object manifest listing parts lives in the catalog. */
  uploadId?: string;
  partNumber?: number;
  size: number;
  k: number;
  m: number;
  blockSize: number;
  /** Present for column units; absent: striped. */
  layout?: UnitLayoutKind;
  shardIndex: number;
  placement: string[];
  /** Object metadata as given at write time (content-type, user metadata...). */
  metadata?: unknown;
  /** Set when a single PUT was cut into several units: all share `writeId`, in `index` order. */
  segment?: { writeId: string; index: number; count: number; objectSize: number };
  createdAt: string;
  /** A sealed unit: `size` is its stored size; bucket, key, metadata, upload and plaintext size are in `seal.meta`. */
  seal?: HeaderSeal;
}

export interface ShardFooter {
  md5: Uint8Array;
  checksum: { algorithm: ChecksumAlgorithm; digest: Uint8Array } | null;
  shardDigests: bigint[];
  /**
   * A column unit's data shard i < k-1 is finished before the rest of the unit has arrived, so
   * its footer knows only the digests of data shards 0..i (the others, the MD5 and the checksum
   * are zero). The last data shard and every parity shard carry the complete footer.
   */
  partial?: boolean;
}

export class ShardFormatError extends Error {
  override readonly name = 'ShardFormatError';
}

const utf8 = new TextEncoder();

export function encodeHeader(h: ShardHeader): Uint8Array {
  const json = utf8.encode(JSON.stringify(h));
  const out = new Uint8Array(8 + 4 + json.length + 8);
  const view = new DataView(out.buffer);
  out.set(HEADER_MAGIC, 0);
  view.setUint32(8, json.length, true);
  out.set(json, 12);
  view.setBigUint64(12 + json.length, checksums().xxh64(out.subarray(0, 12 + json.length)), true);
  return out;
}

/** Bytes needed to know the header's length: magic + length field. */
export const HEADER_PREFIX_BYTES = 12;

export function headerLength(prefix: Uint8Array): number {
  if (prefix.length < HEADER_PREFIX_BYTES || !HEADER_MAGIC.every((b, i) => prefix[i] === b)) {
    throw new ShardFormatError('not a shardgate v1 shard (bad magic)');
  }
  return 12 + new DataView(prefix.buffer, prefix.byteOffset).getUint32(8, true) + 8;
}

export function decodeHeader(bytes: Uint8Array): ShardHeader {
  const len = headerLength(bytes);
  if (bytes.length < len) throw new ShardFormatError('truncated header');
  const view = new DataView(bytes.buffer, bytes.byteOffset);
  if (view.getBigUint64(len - 8, true) !== checksums().xxh64(bytes.subarray(0, len - 8))) {
    throw new ShardFormatError('header checksum mismatch');
  }
  return JSON.parse(new TextDecoder().decode(bytes.subarray(12, len - 8))) as ShardHeader;
}

/**
 * The seed binds a block to its place: a block moved to another stripe, shard or unit (a
 * misdirected or stale write) fails its checksum. `unitSalt` is `unitSalt(unitId)`.
 */
export function blockSeed(unitSalt: bigint, stripe: number, shardIndex: number): bigint {
  return unitSalt ^ ((BigInt(stripe) << 8n) | BigInt(shardIndex));
}

export function unitSalt(unitId: string): bigint {
  return checksums().xxh64(new TextEncoder().encode(unitId));
}

/**
 * The footer shard i of `unit` carries, given the unit's complete footer: the same for every
 * shard, except a column unit's data shards before the last, which were finished before the rest
 * of the unit and so know only the digests of data shards 0..i (ShardFooter.partial).
 */
export function footerOfShard(complete: ShardFooter, unit: { k: number; layout?: UnitLayoutKind }, shardIndex: number): ShardFooter {
  if (unit.layout !== 'column' || shardIndex >= unit.k - 1) return complete;
  return {
    md5: new Uint8Array(16),
    checksum: null,
    shardDigests: complete.shardDigests.map((d, j) => (j <= shardIndex ? d : 0n)),
    partial: true,
  };
}

export function encodeFooter(f: ShardFooter): Uint8Array {
  const n = f.shardDigests.length;
  const out = new Uint8Array(FOOTER_FIXED_BYTES + SHARD_DIGEST_BYTES * n);
  const view = new DataView(out.buffer);
  out.set(f.partial ? PARTIAL_FOOTER_MAGIC : FOOTER_MAGIC, 0);
  out.set(f.md5, 8);
  if (f.checksum) {
    out[24] = CHECKSUM_CODES.indexOf(f.checksum.algorithm);
    out.set(f.checksum.digest, 25);
  }
  f.shardDigests.forEach((d, i) => view.setBigUint64(57 + 8 * i, d, true));
  const end = 57 + 8 * n;
  view.setBigUint64(end, checksums().xxh64(out.subarray(0, end)), true);
  return out;
}

export function decodeFooter(bytes: Uint8Array, shards: number): ShardFooter {
  const end = 57 + 8 * shards;
  const partial = PARTIAL_FOOTER_MAGIC.every((b, i) => bytes[i] === b);
  if (bytes.length !== end + 8 || !(partial || FOOTER_MAGIC.every((b, i) => bytes[i] === b))) throw new ShardFormatError('bad footer');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getBigUint64(end, true) !== checksums().xxh64(bytes.subarray(0, end))) throw new ShardFormatError('footer checksum mismatch');
  const alg = CHECKSUM_CODES[bytes[24]!] ?? null;
  const digestLen = alg === 'SHA256' ? 32 : alg === 'SHA1' ? 20 : alg === 'CRC64NVME' ? 8 : 4;
  return {
    md5: bytes.slice(8, 24),
    checksum: alg ? { algorithm: alg, digest: bytes.slice(25, 25 + digestLen) } : null,
    shardDigests: Array.from({ length: shards }, (_, i) => view.getBigUint64(57 + 8 * i, true)),
    ...(partial ? { partial } : {}),
  };
}
