/**
 * Reading the self-describing parts of a stored shard file: its header (learned from the first
 * bytes, whatever its length) and its footer. Used by repair (to rewrite a lost shard exactly)
 * and by the index rebuild (to recover manifests from the backends alone).
 */
import type { Backend } from '../../backends/types.ts';
import { HEADER_PREFIX_BYTES, decodeFooter, decodeHeader, headerLength, type ShardFooter, type ShardHeader } from './format.ts';
import { UnitLayout } from './layout.ts';

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
