/**
 * The rules of CompleteMultipartUpload that do not depend on how parts are stored: which stored
 * parts a Complete request names (ascending part numbers, each known with its ETag and checksum,
 * every part but the last at least the minimum size), the multipart ETag
 * `"hex(md5(concat(binary part md5s)))-N"`, and the object checksum, COMPOSITE (the algorithm over
 * the concatenated binary part checksums, value suffixed "-N") or FULL_OBJECT (CRCs only: the part
 * CRCs combined into the CRC of the whole object, no suffix), checked against the client's value.
 * Spec: S3 CompleteMultipartUpload; "Checking object integrity", multipart upload section.
 */
import { fromBase64, toBase64, toHex } from './bytes.ts';
import { badDigest, combineCrc, createHasher } from './checksums.ts';
import { etagMatches } from './conditions.ts';
import { md5Of } from './digest.ts';
import { S3Error } from './errors.ts';
import type { CompletedPart, MultipartChecksumSpec, ObjectChecksum } from './object-store.ts';

/** S3's minimum size of every part but the last. */
export const MIN_PART_SIZE = 5 * 1024 * 1024;

/** What completion needs to know of a stored part. */
export interface StoredPart {
  partNumber: number;
  etag: string; // quoted
  size: number;
  checksum?: ObjectChecksum | null;
}

/**
 * The stored parts a Complete request names, in order: InvalidPartOrder (a part number lower than
 * the one before), InvalidPart (unknown part, other ETag, other checksum value), EntityTooSmall
 * (a part but the last below `minPartSize`).
 * A part number may be listed more than once in a row, with the ETags of several uploads of that
 * part (a client that sent the part twice at once and recorded both answers): the upload that
 * completed last is the part, and the entry is valid when one of the listed ETags is its ETag.
 * (ceph's s3-tests, test_multipart_resend_first_finishes_last, completes this way; AWS is reported
 * to answer InvalidPartOrder. Accepting it is safe: the object is made of a part the client sent
 * and named.)
 */
export function selectCompletedParts<P extends StoredPart>(
  requested: CompletedPart[],
  stored: Map<number, P>,
  uploadId: string,
  minPartSize = MIN_PART_SIZE,
): P[] {
  if (requested.length === 0) throw new S3Error('MalformedXML');
  const chosen: P[] = [];
  for (let i = 0; i < requested.length; ) {
    const n = requested[i]!.partNumber;
    if (i > 0 && n < requested[i - 1]!.partNumber) throw new S3Error('InvalidPartOrder');
    let j = i;
    while (j < requested.length && requested[j]!.partNumber === n) j++;
    const named = requested.slice(i, j);
    const s = stored.get(n);
    const names = (p: CompletedPart) =>
      !!s && etagMatches(p.etag, s.etag) && !(p.checksum && s.checksum?.algorithm === p.checksum.algorithm && s.checksum.value !== p.checksum.value);
    if (!named.some(names)) {
      const last = named[named.length - 1]!;
      throw new S3Error('InvalidPart', undefined, { UploadId: uploadId, PartNumber: String(n), ETag: last.etag });
    }
    chosen.push(s!);
    i = j;
  }
  for (const p of chosen.slice(0, -1)) {
    if (p.size < minPartSize) {
      throw new S3Error('EntityTooSmall', undefined, {
        ProposedSize: String(p.size),
        MinSizeAllowed: String(minPartSize),
        PartNumber: String(p.partNumber),
        ETag: p.etag,
      });
    }
  }
  return chosen;
}

/** Multipart ETag from the part ETags (quoted hex MD5s), in part order. */
export function multipartEtag(partEtags: string[]): string {
  const md5s = partEtags.map((e) => hexToBytes(e.replace(/"/g, '')));
  return `"${toHex(md5Of(md5s))}-${partEtags.length}"`;
}

/**
 * The object checksum of a completed upload: null when the upload asked for none or a part lacks
 * one; BadDigest when the client's expected value differs: its digest, or a "-N" suffix that is not
 * the composite value's own (a FULL_OBJECT value has none).
 */
export function completedChecksum(
  spec: MultipartChecksumSpec | null,
  parts: StoredPart[],
  expected?: { algorithm: string; value: string } | null,
): ObjectChecksum | null {
  const checksum =
    spec && parts.every((p) => p.checksum?.algorithm === spec.algorithm)
      ? combinePartChecksums(
          spec,
          parts.map((p) => ({ value: p.checksum!.value, size: p.size })),
        )
      : null;
  const bare = (v: string) => v.replace(/-\d+$/, '');
  const suffix = (v: string) => /-\d+$/.exec(v)?.[0];
  // The composite form S3 returns ("<base64>-N") must name the right part count; the bare digest is accepted too.
  const suffixDiffers = (e: string, c: string) => suffix(e) !== undefined && suffix(e) !== suffix(c);
  if (
    expected &&
    (!checksum || expected.algorithm !== checksum.algorithm || bare(expected.value) !== bare(checksum.value) || suffixDiffers(expected.value, checksum.value))
  ) {
    throw badDigest(expected.algorithm as ObjectChecksum['algorithm']);
  }
  return checksum;
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
