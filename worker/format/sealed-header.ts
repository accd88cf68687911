/**
 * Opening a sealed shard header (format/seal.ts): its identity (bucket, key, metadata, upload,
 * plaintext size) is decrypted with the unit's data key, unwrapped by the key ring. The opened
 * header reads as a plain one, with `size` the plaintext size and `seal` kept (so the stored
 * geometry is `storedSize`), which is what a catalog rebuild and an offline rescue need.
 */
import type { KeyRing, UnitSeal } from './seal.ts';
import type { ShardHeader } from './shard-file.ts';

export type OpenedHeader = ShardHeader & { bucket: string; key: string };

/** A header as a reader uses it; a sealed one needs `ring` (SealError without it or its key). */
export async function openHeader(h: ShardHeader, ring: KeyRing | null | undefined): Promise<OpenedHeader> {
  if (!h.seal) {
    if (h.bucket === undefined || h.key === undefined) throw new Error(`shard header of unit ${h.unitId} has neither an identity nor a seal`);
    return h as OpenedHeader;
  }
  if (!ring) throw new Error(`unit ${h.unitId} is sealed (key "${h.seal.kid}"): give the key ring to read it`);
  const identity = await (await ring.open(h.seal)).openIdentity(h.seal.meta);
  const { bucket, key, size, uploadId, partNumber, metadata } = identity;
  return {
    ...h,
    bucket,
    key,
    size,
    ...(uploadId !== undefined ? { uploadId } : {}),
    ...(partNumber !== undefined ? { partNumber } : {}),
    ...(metadata !== undefined ? { metadata } : {}),
  };
}

/** The unit seal of a sealed header (what a catalog record keeps). */
export function unitSealOf(h: ShardHeader): UnitSeal | undefined {
  if (!h.seal) return undefined;
  const { alg, kid, wrapped, record } = h.seal;
  return { alg, kid, wrapped, record };
}
