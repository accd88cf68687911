/**
 * Multipart uploads of the MemoryStore: parts buffered per upload, assembled on completion.
 * Spec: S3 CreateMultipartUpload, UploadPart, UploadPartCopy, CompleteMultipartUpload (ascending
 * parts -> InvalidPartOrder, unknown part or ETag -> InvalidPart, parts but the last below the
 * minimum -> EntityTooSmall, conditional completion), AbortMultipartUpload, ListParts,
 * ListMultipartUploads. A part sent with a checksum of another algorithm than the upload's is
 * InvalidRequest; a part sent without one gets it computed.
 * Known gaps: an upload created without a checksum algorithm yields an object without a checksum.
 */
import { S3Error } from '../model/errors.ts';
import { checkCopySourceRange } from '../model/range.ts';
import { checkReadConditions, checkWriteConditions, etagMatches } from '../model/conditions.ts';
import { digestBody } from '../model/digest.ts';
import { commonPrefixOf, compareKeys } from '../model/listing.ts';
import { concat, streamOf } from '../model/bytes.ts';
import type { MemoryStore } from './memory-store.ts';
import { combinePartChecksums, multipartEtag } from '../model/multipart.ts';
import type * as T from '../model/object-store.ts';

interface StoredPart extends T.PartInfo {
  data: Uint8Array;
}

export interface UploadState {
  info: T.UploadInfo;
  metadata: T.ObjectMetadata;
  parts: Map<number, StoredPart>;
}

export class MemoryMultipart {
  constructor(
    private readonly store: MemoryStore,
    private readonly minPartSize: number,
  ) {}

  private upload(bucket: string, key: string, uploadId: string): UploadState {
    const u = this.store.bucket(bucket).uploads.get(uploadId);
    if (!u || u.info.key !== key) throw new S3Error('NoSuchUpload', undefined, { UploadId: uploadId });
    return u;
  }

  async create(bucket: string, key: string, opts: { metadata: T.ObjectMetadata; checksum: T.MultipartChecksumSpec | null }): Promise<T.UploadInfo> {
    const uploads = this.store.bucket(bucket).uploads;
    const uploadId = randomHex(16);
    const info: T.UploadInfo = { key, uploadId, initiated: new Date(), checksum: opts.checksum };
    uploads.set(uploadId, { info, metadata: opts.metadata, parts: new Map() });
    return info;
  }

  async uploadPart(bucket: string, key: string, uploadId: string, partNumber: number, body: ReadableStream<Uint8Array>, opts: Omit<T.PutObjectOptions, 'metadata' | 'conditions'>): Promise<T.PartInfo> {
    const spec = this.upload(bucket, key, uploadId).info.checksum;
    if (spec && opts.checksum && opts.checksum.algorithm !== spec.algorithm) {
      throw new S3Error('InvalidRequest', `Checksum Type mismatch occurred, expected checksum Type: ${spec.algorithm.toLowerCase()}, actual checksum Type: ${opts.checksum.algorithm.toLowerCase()}`);
    }
    const checksum = opts.checksum ?? (spec ? { algorithm: spec.algorithm, expected: null } : null);
    const chunks: Uint8Array[] = [];
    const d = await digestBody(body, { ...opts, checksum }, (c) => void chunks.push(c));
    return this.putPart(bucket, key, uploadId, partNumber, concat(chunks, d.size), d.etag, d.checksum);
  }

  async uploadPartCopy(src: T.CopySource, bucket: string, key: string, uploadId: string, partNumber: number): Promise<T.PartInfo> {
    const spec = this.upload(bucket, key, uploadId).info.checksum;
    const source = this.store.object(src.bucket, src.key);
    checkReadConditions(source, src.conditions, true);
    if (src.range) checkCopySourceRange(src.range, source.size);
    const data = src.range ? source.data.subarray(src.range.start, src.range.end + 1) : source.data;
    const checksumReq = spec ? { algorithm: spec.algorithm, expected: null } : null;
    const d = await digestBody(streamOf(data), { checksum: checksumReq }, () => {});
    return this.putPart(bucket, key, uploadId, partNumber, data, d.etag, d.checksum);
  }

  private putPart(bucket: string, key: string, uploadId: string, partNumber: number, data: Uint8Array, etag: string, checksum: T.ObjectChecksum | null): T.PartInfo {
    const upload = this.upload(bucket, key, uploadId); // still there after the body was read?
    const part: StoredPart = { partNumber, etag, size: data.byteLength, lastModified: new Date(), checksum, data };
    upload.parts.set(partNumber, part);
    const { data: _d, ...info } = part;
    return info;
  }

  async complete(bucket: string, key: string, uploadId: string, parts: T.CompletedPart[], opts: T.CompleteMultipartOptions): Promise<T.PutObjectResult> {
    const upload = this.upload(bucket, key, uploadId);
    checkWriteConditions(this.store.bucket(bucket).objects.get(key), opts.conditions, key);
    const chosen: StoredPart[] = [];
    for (const [i, p] of parts.entries()) {
      if (i > 0 && p.partNumber <= parts[i - 1].partNumber) throw new S3Error('InvalidPartOrder');
      const stored = upload.parts.get(p.partNumber);
      const invalid = () => new S3Error('InvalidPart', undefined, { UploadId: uploadId, PartNumber: String(p.partNumber), ETag: p.etag });
      if (!stored || !etagMatches(p.etag, stored.etag)) throw invalid();
      if (p.checksum && stored.checksum?.algorithm === p.checksum.algorithm && stored.checksum.value !== p.checksum.value) throw invalid();
      chosen.push(stored);
    }
    for (const p of chosen.slice(0, -1)) {
      if (p.size < this.minPartSize) {
        throw new S3Error('EntityTooSmall', undefined, { ProposedSize: String(p.size), MinSizeAllowed: String(this.minPartSize), PartNumber: String(p.partNumber), ETag: p.etag });
      }
    }
    const spec = upload.info.checksum;
    const checksum = spec && chosen.every((p) => p.checksum?.algorithm === spec.algorithm)
      ? combinePartChecksums(spec, chosen.map((p) => ({ value: p.checksum!.value, size: p.size })))
      : null;
    const expected = opts.expectedChecksum;
    if (expected && (!checksum || expected.algorithm !== checksum.algorithm || expected.value.replace(/-\d+$/, '') !== checksum.value.replace(/-\d+$/, ''))) {
      throw new S3Error('BadDigest', `The ${expected.algorithm} you specified did not match the calculated checksum.`);
    }
    const size = chosen.reduce((n, p) => n + p.size, 0);
    const data = concat(chosen.map((p) => p.data), size);
    const etag = multipartEtag(chosen.map((p) => p.etag));
    const result = this.store.commit(bucket, key, { size, etag, checksum, data, metadata: upload.metadata, partsCount: chosen.length }, opts.conditions);
    this.store.bucket(bucket).uploads.delete(uploadId);
    return result;
  }

  async abort(bucket: string, key: string, uploadId: string): Promise<void> {
    this.upload(bucket, key, uploadId);
    this.store.bucket(bucket).uploads.delete(uploadId);
  }

  async listParts(bucket: string, key: string, uploadId: string, opts: { partNumberMarker: number; maxParts: number }): Promise<T.ListPartsResult> {
    const upload = this.upload(bucket, key, uploadId);
    const all = [...upload.parts.values()].filter((p) => p.partNumber > opts.partNumberMarker).sort((a, b) => a.partNumber - b.partNumber);
    const page = all.slice(0, opts.maxParts).map(({ data: _d, ...info }) => info);
    const isTruncated = all.length > page.length;
    return { upload: upload.info, parts: page, isTruncated, nextPartNumberMarker: page.length ? page[page.length - 1].partNumber : null };
  }

  async listUploads(bucket: string, opts: T.ListUploadsOptions): Promise<T.ListUploadsResult> {
    const order = (a: T.UploadInfo, b: T.UploadInfo) => compareKeys(a.key, b.key) || a.initiated.getTime() - b.initiated.getTime() || compareKeys(a.uploadId, b.uploadId);
    const all = [...this.store.bucket(bucket).uploads.values()].map((u) => u.info).sort(order);
    const { prefix, delimiter, keyMarker, uploadIdMarker, maxUploads } = opts;
    let start = 0;
    if (keyMarker !== null) {
      const markerUpload = uploadIdMarker !== null ? all.find((u) => u.key === keyMarker && u.uploadId === uploadIdMarker) : undefined;
      start = all.findIndex((u) => (markerUpload ? order(u, markerUpload) > 0 : compareKeys(u.key, keyMarker) > 0));
      if (start < 0) start = all.length;
    }
    const result: T.ListUploadsResult = { uploads: [], commonPrefixes: [], isTruncated: false, nextKeyMarker: null, nextUploadIdMarker: null };
    const skipUnder = keyMarker !== null && commonPrefixOf(keyMarker, prefix, delimiter) === keyMarker ? keyMarker : null;
    for (const u of all.slice(start)) {
      if (!u.key.startsWith(prefix) || (skipUnder !== null && u.key.startsWith(skipUnder))) continue;
      const cp = commonPrefixOf(u.key, prefix, delimiter);
      if (cp !== null && result.commonPrefixes.at(-1) === cp) continue;
      if (result.uploads.length + result.commonPrefixes.length >= maxUploads) {
        result.isTruncated = true;
        break;
      }
      if (cp !== null) {
        result.commonPrefixes.push(cp);
        result.nextKeyMarker = cp;
        result.nextUploadIdMarker = null;
      } else {
        result.uploads.push(u);
        result.nextKeyMarker = u.key;
        result.nextUploadIdMarker = u.uploadId;
      }
    }
    return result;
  }
}

function randomHex(bytes: number): string {
  return [...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, '0')).join('');
}
