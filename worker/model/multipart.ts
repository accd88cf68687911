/**
 * What CompleteMultipartUpload derives from the parts: the multipart ETag
 * `"hex(md5(concat(binary part md5s)))-N"` and the object checksum, COMPOSITE (the algorithm over
 * the concatenated binary part checksums, value suffixed "-N") or FULL_OBJECT (CRCs only: the
 * part CRCs combined into the CRC of the whole object, no suffix).
 * Spec: S3 "Checking object integrity", multipart upload section.
 */
import { combineCrc, createHasher } from './checksums.ts';
import { fromBase64, toBase64, toHex } from './bytes.ts';
import { md5Of } from './digest.ts';
import type { MultipartChecksumSpec, ObjectChecksum } from './object-store.ts';

/** Multipart ETag from the part ETags (quoted hex MD5s), in part order. */
export function multipartEtag(partEtags: string[]): string {
  const md5s = partEtags.map((e) => hexToBytes(e.replace(/"/g, '')));
  return `"${toHex(md5Of(md5s))}-${partEtags.length}"`;
}

export interface PartChecksum {
  value: string; // base64 digest of the part
  size: number;
}

export function combinePartChecksums(spec: MultipartChecksumSpec, parts: PartChecksum[]): ObjectChecksum {
  const raw = parts.map((p) => fromBase64(p.value) ?? new Uint8Array());
  if (spec.type === 'COMPOSITE') {
    const h = createHasher(spec.algorithm);
    for (const r of raw) h.update(r);
    return { ...spec, value: `${h.digestBase64()}-${parts.length}` };
  }
  const alg = spec.algorithm;
  if (alg !== 'CRC32' && alg !== 'CRC32C' && alg !== 'CRC64NVME') throw new Error(`FULL_OBJECT needs a CRC, not ${alg}`);
  let acc = raw[0];
  for (let i = 1; i < raw.length; i++) acc = combineCrc(alg, acc, raw[i], parts[i].size);
  return { ...spec, value: toBase64(acc) };
}

function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}
