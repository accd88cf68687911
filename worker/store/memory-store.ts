/**
 * MemoryStore: an ObjectStore held in Maps inside one isolate, so the S3 layer and its
 * conformance suite run before the erasure-coded engine exists. Bodies are buffered whole
 * (fine for a stand-in, not for production); every write is verified by digestBody before it
 * becomes visible, and a commit is one synchronous step, which makes conditional writes atomic.
 * Multipart lives in memory-multipart.ts over the same state.
 * Known gaps: no persistence, no versioning, memory grows with data.
 */
import { S3Error } from '../model/errors.ts';
import { resolveRange } from '../model/range.ts';
import { checkReadConditions, checkWriteConditions } from '../model/conditions.ts';
import { createHasher } from '../model/checksums.ts';
import { concat, streamOf } from '../model/bytes.ts';
import { digestBody } from '../model/digest.ts';
import { compareKeys, listPage } from '../model/listing.ts';
import { MemoryMultipart, type UploadState } from './memory-multipart.ts';
import type * as T from '../model/object-store.ts';

export interface StoredObject extends T.ObjectInfo {
  data: Uint8Array;
}

export interface BucketState {
  info: T.BucketInfo;
  objects: Map<string, StoredObject>;
  uploads: Map<string, UploadState>;
}

export interface MemoryStoreOptions {
  /** Minimum size of every part but the last (S3: 5 MiB). */
  minPartSize?: number;
}

export class MemoryStore implements T.ObjectStore {
  readonly buckets = new Map<string, BucketState>();
  private readonly multipart: MemoryMultipart;

  constructor(options: MemoryStoreOptions = {}) {
    this.multipart = new MemoryMultipart(this, options.minPartSize ?? 5 * 1024 * 1024);
  }

  bucket(name: string): BucketState {
    const b = this.buckets.get(name);
    if (!b) throw new S3Error('NoSuchBucket', undefined, { BucketName: name });
    return b;
  }

  object(bucket: string, key: string): StoredObject {
    const obj = this.bucket(bucket).objects.get(key);
    if (!obj) throw new S3Error('NoSuchKey', undefined, { Key: key });
    return obj;
  }

  async listBuckets(): Promise<T.BucketInfo[]> {
    return [...this.buckets.values()].map((b) => b.info).sort((a, b) => compareKeys(a.name, b.name));
  }

  async createBucket(name: string, options: { region: string }): Promise<void> {
    if (this.buckets.has(name)) throw new S3Error('BucketAlreadyOwnedByYou', undefined, { BucketName: name });
    const info = { name, creationDate: new Date(), region: options.region };
    this.buckets.set(name, { info, objects: new Map(), uploads: new Map() });
  }

  async headBucket(name: string): Promise<T.BucketInfo> {
    return this.bucket(name).info;
  }

  async deleteBucket(name: string): Promise<void> {
    if (this.bucket(name).objects.size > 0) throw new S3Error('BucketNotEmpty', undefined, { BucketName: name });
    this.buckets.delete(name);
  }

  async putObject(bucket: string, key: string, body: ReadableStream<Uint8Array>, opts: T.PutObjectOptions): Promise<T.PutObjectResult> {
    checkWriteConditions(this.bucket(bucket).objects.get(key), opts.conditions, key); // fail fast
    const chunks: Uint8Array[] = [];
    const d = await digestBody(body, opts, (c) => void chunks.push(c));
    return this.commit(bucket, key, { size: d.size, etag: d.etag, checksum: d.checksum, metadata: opts.metadata, data: concat(chunks, d.size) }, opts.conditions);
  }

  /** The atomic step: re-checks the bucket and the conditions, then makes the object visible. */
  commit(bucket: string, key: string, o: Omit<StoredObject, 'key' | 'lastModified'>, conditions: T.WriteConditions): T.PutObjectResult {
    const objects = this.bucket(bucket).objects;
    checkWriteConditions(objects.get(key), conditions, key);
    const stored: StoredObject = { ...o, key, lastModified: new Date() };
    objects.set(key, stored);
    return { etag: stored.etag, checksum: stored.checksum, size: stored.size, lastModified: stored.lastModified };
  }

  async headObject(bucket: string, key: string, opts: T.GetObjectOptions): Promise<T.ObjectHead> {
    const { data: _data, ...info } = this.object(bucket, key);
    checkReadConditions(info, opts.conditions);
    return { ...info, range: opts.range ? resolveRange(opts.range, info.size) : null };
  }

  async getObject(bucket: string, key: string, opts: T.GetObjectOptions): Promise<T.ObjectBody> {
    const head = await this.headObject(bucket, key, opts);
    const data = this.object(bucket, key).data;
    const bytes = head.range ? data.subarray(head.range.start, head.range.end + 1) : data;
    return { ...head, body: streamOf(bytes) };
  }

  async deleteObject(bucket: string, key: string, opts: T.DeleteObjectOptions = {}): Promise<void> {
    const objects = this.bucket(bucket).objects;
    if (opts.ifMatch !== undefined) checkWriteConditions(objects.get(key), { ifMatch: opts.ifMatch }, key);
    objects.delete(key);
  }

  async deleteObjects(bucket: string, keys: string[]): Promise<T.DeleteObjectsEntry[]> {
    const objects = this.bucket(bucket).objects;
    return keys.map((key) => (objects.delete(key), { key }));
  }

  async copyObject(src: T.CopySource, bucket: string, key: string, opts: T.CopyObjectOptions): Promise<T.PutObjectResult> {
    const source = this.object(src.bucket, src.key);
    checkReadConditions(source, src.conditions, true);
    this.bucket(bucket);
    let checksum = source.checksum;
    const alg = opts.checksumAlgorithm;
    if (alg && (checksum?.algorithm !== alg || checksum.type !== 'FULL_OBJECT')) {
      const h = createHasher(alg);
      h.update(source.data);
      checksum = { algorithm: alg, type: 'FULL_OBJECT', value: h.digestBase64() };
    }
    const metadata = opts.metadataDirective === 'REPLACE' ? (opts.metadata ?? { user: {} }) : source.metadata;
    const { size, etag, data, partsCount } = source;
    return this.commit(bucket, key, { size, etag, data, partsCount, checksum, metadata }, opts.conditions);
  }

  async listObjects(bucket: string, opts: T.ListObjectsOptions): Promise<T.ListObjectsResult> {
    const objects = this.bucket(bucket).objects;
    const sorted = [...objects.entries()].sort((a, b) => compareKeys(a[0], b[0]));
    const page = listPage(sorted, opts);
    const result: T.ListObjectsResult = { objects: [], commonPrefixes: [], isTruncated: page.isTruncated, lastEntry: page.lastEntry };
    for (const e of page.entries) {
      if (e.kind === 'prefix') result.commonPrefixes.push(e.prefix);
      else result.objects.push({ key: e.key, size: e.value.size, etag: e.value.etag, lastModified: e.value.lastModified, checksum: e.value.checksum });
    }
    return result;
  }

  createMultipartUpload: T.ObjectStore['createMultipartUpload'] = (...a) => this.multipart.create(...a);
  uploadPart: T.ObjectStore['uploadPart'] = (...a) => this.multipart.uploadPart(...a);
  uploadPartCopy: T.ObjectStore['uploadPartCopy'] = (...a) => this.multipart.uploadPartCopy(...a);
  completeMultipartUpload: T.ObjectStore['completeMultipartUpload'] = (...a) => this.multipart.complete(...a);
  abortMultipartUpload: T.ObjectStore['abortMultipartUpload'] = (...a) => this.multipart.abort(...a);
  listParts: T.ObjectStore['listParts'] = (...a) => this.multipart.listParts(...a);
  listMultipartUploads: T.ObjectStore['listMultipartUploads'] = (...a) => this.multipart.listUploads(...a);
}
