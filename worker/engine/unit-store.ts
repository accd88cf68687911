/**
 * UnitStore: turns bodies into stored bytes by policy, and stored bytes back into streams. It
 * decides inline vs replicated vs erasure-coded, places shards, verifies client digests after
 * the single streaming pass, and deletes what it wrote when a write does not commit. Everything
 * S3-level (conditions, catalog commits, multipart rules) is in ec-store.ts.
 */
import type { Backend } from '../../backends/types.ts';
import { fromBase64, toBase64 } from '../model/bytes.ts';
import { BodyDigest } from '../model/digest.ts';
import { S3Error } from '../model/errors.ts';
import type { ChecksumRequest, ObjectChecksum } from '../model/object-store.ts';
import { newId, shardKey, type Codec, type CodedUnit, type ObjectManifest } from '../catalog/manifest.ts';
import { BackendLatency } from './backend-latency.ts';
import { BodyReader } from './body-reader.ts';
import { placeShards } from './placement.ts';
import type { StoragePolicy } from './policy.ts';
import type { ShardReadError } from './shard-reader.ts';
import { MAX_OPEN_SUBREQUESTS } from './subrequests.ts';
import { readUnit } from './unit-reader.ts';
import { writeUnit } from './unit-writer.ts';

/** Bytes of object data per unit when a wide policy cuts a body into segments. */
const SEGMENT_TARGET = 16 * 1024 * 1024;

export interface StoredBody {
  storage: ObjectManifest['storage'];
  md5: Uint8Array;
  checksum: ObjectChecksum | null;
}

/**
 * How a body of a given size is stored, decided before any byte is read: inline in the index,
 * one unit, or segments of a wide policy; `unitIds` are the ids its shards will go under (none
 * inline), so a caller can reserve them in the same round trip as its other catalog reads.
 */
export interface StoragePlan {
  mode: 'inline' | 'unit' | 'segmented';
  codec: Codec;
  k: number;
  m: number;
  quorum: number;
  unitIds: string[];
}

export interface StoreBodyInput {
  bucket: string;
  key: string;
  body: ReadableStream<Uint8Array>;
  size: number;
  policy: StoragePolicy;
  /** From plan(), whose unit ids the caller has reserved in the catalog. */
  plan: StoragePlan;
  checksum: ChecksumRequest | null;
  contentMD5?: string | null;
  /** Parts are always coded units (a manifest lists units), never inline. */
  part?: { uploadId: string; partNumber: number };
  metadata?: unknown;
}

export type UnhealthyHandler = (bucket: string, key: string, unit: CodedUnit, err: ShardReadError) => void;

export interface UnitStoreOptions {
  /** A healthy read decodes around data shards slower than this (ms); absent: never. */
  hedgeMs?: number;
  /** Bytes per unit when a wide policy segments a body (tests make it small). */
  segmentTarget?: number;
}

export class UnitStore {
  readonly byId: Map<string, Backend>;
  /** How fast each backend has answered this isolate's reads. */
  readonly latency = new BackendLatency();

  constructor(
    readonly backends: Backend[],
    private readonly onUnhealthy: UnhealthyHandler = () => {},
    private readonly options: UnitStoreOptions = {},
  ) {
    this.byId = new Map(backends.map((b) => [b.id, b]));
  }

  /** How a body of `size` bytes will be stored under `policy`; a part is always coded (a manifest lists units), never inline. */
  plan(size: number, policy: StoragePolicy, part: boolean): StoragePlan {
    const small = size <= policy.small.threshold;
    const replicas = small ? policy.small.replicas : policy.codec === 'replica' ? policy.k + policy.m : 0;
    const [codec, k, m] = replicas ? (['replica', 1, replicas - 1] as const) : (['rs-cauchy-gf8', policy.k, policy.m] as const);
    // Small-object replicas need a majority; a policy's own codec keeps its configured quorum.
    const quorum = replicas && small ? Math.floor(replicas / 2) + 1 : policy.writeQuorum;
    if (small && policy.small.mode === 'inline' && !part) return { mode: 'inline', codec, k, m, quorum, unitIds: [] };
    const segment = this.segmentBytes(k, policy.blockSize);
    if (k + m > MAX_OPEN_SUBREQUESTS && size > segment) {
      const count = Math.ceil(size / segment);
      return { mode: 'segmented', codec, k, m, quorum, unitIds: Array.from({ length: count }, () => newId()) };
    }
    return { mode: 'unit', codec, k, m, quorum, unitIds: [newId()] };
  }

  async storeBody(input: StoreBodyInput): Promise<StoredBody> {
    const { plan } = input;
    if (plan.mode === 'inline') return this.storeInline(input);
    if (plan.mode === 'segmented') return this.storeSegmented(input);
    const { unit, digest } = await writeUnit({
      ...this.unitGeometry(input), unitId: plan.unitIds[0]!, body: input.body, size: input.size, checksum: input.checksum,
      headerExtra: { ...input.part, metadata: input.metadata },
    });
    try {
      const { md5, checksum } = await digest.verify(input.contentMD5);
      if (input.part) unit.partNumber = input.part.partNumber;
      unit.checksum = checksum;
      return { storage: { kind: 'coded', units: [unit] }, md5, checksum };
    } catch (err) {
      await this.discard(input.bucket, [unit]);
      throw err;
    }
  }

  private unitGeometry(input: StoreBodyInput) {
    const { codec, k, m, quorum } = input.plan;
    return {
      bucket: input.bucket, key: input.key, codec, k, m, blockSize: input.policy.blockSize, writeQuorum: quorum,
      backends: placeShards(`${input.bucket}/${input.key}`, this.backends, k, m),
    };
  }

  /**
   * A wide policy's body, cut into units of about SEGMENT_TARGET bytes: each is written
   * buffered within the subrequest limit, so memory is bounded by one segment. One pass still:
   * MD5 and the client checksum of the whole body are computed as the segments stream by.
   */
  private async storeSegmented(input: StoreBodyInput): Promise<StoredBody> {
    const { size, plan } = input;
    const segBytes = this.segmentBytes(plan.k, input.policy.blockSize);
    const count = plan.unitIds.length;
    const reader = new BodyReader(input.body);
    const digest = new BodyDigest(input.checksum);
    const writeId = newId();
    const units: CodedUnit[] = [];
    let pending: Uint8Array | null = null;
    try {
      for (let index = 0; index < count; index++) {
        const len = Math.min(segBytes, size - index * segBytes);
        let remaining = len;
        const segment = new ReadableStream<Uint8Array>({
          async pull(c) {
            if (remaining === 0) return c.close();
            if (!pending || pending.length === 0) {
              pending = await reader.next();
              if (!pending) return c.close(); // short body: the writer reports IncompleteBody
              digest.update(pending);
            }
            const take = Math.min(remaining, pending.length);
            c.enqueue(pending.slice(0, take)); // a copy: the reader reuses its buffer
            pending = pending.subarray(take);
            remaining -= take;
          },
        }, { highWaterMark: 0 });
        const { unit } = await writeUnit({
          ...this.unitGeometry(input), unitId: plan.unitIds[index]!, body: segment, size: len, checksum: null,
          headerExtra: { metadata: input.metadata, segment: { writeId, index, count, objectSize: size } },
        });
        units.push(unit);
      }
      if ((pending as Uint8Array | null)?.length || !(await reader.atEnd())) {
        throw new S3Error('IncompleteBody', `the body is longer than its declared ${size} bytes`);
      }
      const { md5, checksum } = await digest.verify(input.contentMD5);
      return { storage: { kind: 'coded', units }, md5, checksum };
    } catch (err) {
      reader.release();
      await this.discard(input.bucket, units);
      throw err;
    }
  }

  private segmentBytes(k: number, blockSize: number): number {
    const stripe = k * blockSize;
    return Math.max(stripe, Math.floor((this.options.segmentTarget ?? SEGMENT_TARGET) / stripe) * stripe);
  }

  private async storeInline(input: StoreBodyInput): Promise<StoredBody> {
    const reader = new BodyReader(input.body);
    const data = new Uint8Array(input.size);
    const digest = new BodyDigest(input.checksum);
    for (let piece = await reader.next(); piece; piece = await reader.next()) {
      if (digest.size + piece.length > input.size) {
        await reader.cancel();
        throw new S3Error('IncompleteBody', `the body is longer than its declared ${input.size} bytes`);
      }
      data.set(piece, digest.size);
      digest.update(piece);
    }
    if (digest.size !== input.size) throw new S3Error('IncompleteBody', `the body ended after ${digest.size} of ${input.size} bytes`);
    const { md5, checksum } = await digest.verify(input.contentMD5);
    return { storage: { kind: 'inline', data: toBase64(data) }, md5, checksum };
  }

  /** The bytes [start, end] of object `key`; the first unit is opened before returning. */
  async open(bucket: string, key: string, storage: ObjectManifest['storage'], start: number, end: number): Promise<ReadableStream<Uint8Array>> {
    if (end < start) return new ReadableStream({ start: (c) => c.close() });
    if (storage.kind === 'inline') {
      const bytes = fromBase64(storage.data)!.subarray(start, end + 1);
      return new ReadableStream({ start: (c) => (c.enqueue(bytes), c.close()) });
    }
    const pieces: { unit: CodedUnit; from: number; to: number }[] = [];
    let offset = 0;
    for (const unit of storage.units) {
      const lo = Math.max(start, offset), hi = Math.min(end, offset + unit.size - 1);
      if (hi >= lo) pieces.push({ unit, from: lo - offset, to: hi - offset });
      offset += unit.size;
    }
    const openPiece = (p: (typeof pieces)[number]) =>
      readUnit({
        bucket, unit: p.unit, backends: this.byId, start: p.from, end: p.to,
        onUnhealthy: (e) => this.onUnhealthy(bucket, key, p.unit, e), hedgeMs: this.options.hedgeMs, latency: this.latency,
      });
    if (pieces.length === 1) return openPiece(pieces[0]!);
    let current: ReadableStreamDefaultReader<Uint8Array> | null = (await openPiece(pieces[0]!)).getReader();
    let next = 1;
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        for (;;) {
          if (!current) {
            if (next >= pieces.length) return controller.close();
            current = (await openPiece(pieces[next++]!)).getReader();
          }
          const r = await current.read();
          if (!r.done) return controller.enqueue(r.value);
          current = null;
        }
      },
      cancel: (reason) => current?.cancel(reason),
    }, { highWaterMark: 0 });
  }

  /**
   * Deletes the shards of units that will never be committed, best effort: a shard still being
   * written by a backend that does not abort cleanly may land afterwards; the unit's reservation
   * then brings the collector back for it.
   */
  async discard(bucket: string, units: CodedUnit[]): Promise<void> {
    await Promise.allSettled(units.flatMap((u) => u.placement.map((id, i) => this.byId.get(id)?.delete(shardKey(bucket, u.unitId, i)))));
  }
}
