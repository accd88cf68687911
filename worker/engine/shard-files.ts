/**
 * Reading the self-describing parts of a stored shard file: its header (learned from the first
 * bytes, whatever its length) and its footer; checking a shard whole or by its size. Used by
 * repair (to rewrite a lost shard exactly, and to triage what to rewrite), the catalog rebuild (to
 * recover manifests from the backends alone) and the scrubber.
 */
import { isBackendError, type Backend } from '../../backends/types.ts';
import {
  HEADER_PREFIX_BYTES,
  ShardFormatError,
  decodeFooter,
  decodeHeader,
  headerLength,
  unitSalt,
  type ShardFooter,
  type ShardHeader,
} from '../format/shard-file.ts';
import { shardLayout, UnitLayout } from '../format/layout.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { shardKey } from '../format/shard-key.ts';
import { ShardReader } from './shard-reader.ts';

async function readRange(backend: Backend, key: string, offset: number, length: number): Promise<Uint8Array> {
  const { body } = await backend.get(key, { offset, length });
  const out = new Uint8Array(length);
  let at = 0;
  for await (const piece of body as unknown as AsyncIterable<Uint8Array>) {
    out.set(piece.subarray(0, length - at), at);
    at += piece.length;
  }
  if (at !== length) throw new Error(`${backend.id}/${key}: short read`);
  return out;
}

export interface ShardFileInfo {
  header: ShardHeader;
  headerLen: number;
  footer: ShardFooter;
  footerBytes: Uint8Array;
  layout: UnitLayout;
}

/** Reads and checks the header and footer of one shard file. */
export async function readShardFile(backend: Backend, key: string): Promise<ShardFileInfo> {
  const prefix = await readRange(backend, key, 0, HEADER_PREFIX_BYTES);
  const headerLen = headerLength(prefix);
  const header = decodeHeader(await readRange(backend, key, 0, headerLen));
  const layout = new UnitLayout(header.size, header.k, header.m, header.blockSize, headerLen);
  const footerBytes = await readRange(backend, key, layout.footerOffset(), layout.footerLen());
  return { header, headerLen, footer: decodeFooter(footerBytes, header.k + header.m), footerBytes, layout };
}

/**
 * Scrubs one shard file end to end: header, every block's checksum, footer and the shard digest.
 * Throws ShardReadError or ShardFormatError on the first problem. Reads the whole shard.
 */
export async function verifyShardFile(backend: Backend, key: string, unit: CodedUnit, shardIndex: number): Promise<void> {
  const info = await readShardFile(backend, key);
  const layout = shardLayout(unit, shardIndex);
  if (info.headerLen !== layout.headerLen || info.header.unitId !== unit.unitId || info.header.shardIndex !== shardIndex) {
    throw new ShardFormatError(`${key}: header does not describe shard ${shardIndex} of unit ${unit.unitId}`);
  }
  if (layout.stripes === 0) return;
  const reader = new ShardReader(shardIndex, backend, key, layout, 0, layout.stripes - 1, unitSalt(unit.unitId));
  try {
    for (let s = 0; s < layout.stripes; s++) await reader.readBlock(s);
  } finally {
    reader.cancel();
  }
  if (info.footer.shardDigests[shardIndex]!.toString(16).padStart(16, '0') !== unit.shardDigests[shardIndex]) {
    throw new ShardFormatError(`${key}: footer digest differs from the manifest`);
  }
}

/** A shard as checked: intact, damaged (missing, another length, rotten), or its backend not answering (or not configured). */
export type ShardState = 'ok' | 'damaged' | 'unreachable';

/**
 * One ranged GET of a shard file's last byte, for backends whose HEAD answers from metadata
 * alone (the local R2 emulator, miniflare: a blob file deleted on disk still HEADs with its
 * size; its GET answers NotFound): a shard whose last byte reads is 'ok'; missing or shorter
 * (NotFound, Corrupt), 'damaged'. One byte of egress per shard.
 */
export async function probeShardTail(backend: Backend | undefined, bucket: string, unit: CodedUnit, shardIndex: number): Promise<ShardState> {
  if (!backend) return 'unreachable';
  const len = shardLayout(unit, shardIndex).shardFileLen();
  try {
    const { body, size } = await backend.get(shardKey(bucket, unit.unitId, shardIndex), { offset: len - 1, length: 1 });
    const read = await new Response(body).arrayBuffer();
    return size === len && read.byteLength === 1 ? 'ok' : 'damaged';
  } catch (err) {
    return isBackendError(err) && err.transient ? 'unreachable' : 'damaged';
  }
}

/** One HEAD: a shard at its full length is 'ok'; missing or of another length, 'damaged'. */
export async function probeShardSize(backend: Backend | undefined, bucket: string, unit: CodedUnit, shardIndex: number): Promise<ShardState> {
  if (!backend) return 'unreachable';
  try {
    const { size } = await backend.head(shardKey(bucket, unit.unitId, shardIndex));
    return size === shardLayout(unit, shardIndex).shardFileLen() ? 'ok' : 'damaged';
  } catch (err) {
    return isBackendError(err) && err.transient ? 'unreachable' : 'damaged';
  }
}
