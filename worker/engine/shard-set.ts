/**
 * ShardSet: the k+m shard files of one unit being written, whatever the layout: their headers
 * and layouts, their uploads (ShardSink, opened on first use within the unit's subrequest
 * slots), the block checksums written so far, the write quorum, the footer, and the clean-up of
 * a write that fails. UnitWriter (striped) and ColumnWriter (column) drive it.
 */
import type { Backend } from '../../backends/types.ts';
import { checksums } from '../../coder-wasm/index.ts';
import { toHex } from '../model/bytes.ts';
import type { BodyDigestResult } from '../model/digest.ts';
import { S3Error } from '../model/errors.ts';
import { shardKey, type CodedUnit, type Codec, type UnitLayoutKind } from '../format/manifest.ts';
import { encodeFooter, encodeHeader, footerOfShard, type ShardFooter, type ShardHeader } from '../format/shard-file.ts';
import { BLOCK_CHECKSUM_BYTES, UnitLayout } from '../format/layout.ts';
import { ShardSink } from './shard-sink.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore } from './subrequests.ts';

/** Fewer shards were written than the write quorum needs: the storage, not the client, failed. */
export class QuorumError extends Error {
  override readonly name = 'QuorumError';
  constructor(
    message: string,
    readonly failures: unknown[],
  ) {
    super(message);
  }
}

export interface UnitGeometry {
  bucket: string;
  key: string;
  unitId: string;
  codec: Codec;
  k: number;
  m: number;
  blockSize: number;
  writeQuorum: number;
  /** Backends in shard order (k+m). */
  backends: Backend[];
  /** Bytes of object data in this unit. */
  size: number;
  headerExtra?: Pick<ShardHeader, 'uploadId' | 'partNumber' | 'metadata' | 'segment'>;
  /**
   * Settles when the catalog has reserved this write's unit ids (ec-store.ts): every shard's
   * footer, its last bytes, waits for it, so no backend can store a shard before its unit is
   * reserved (S3, R2 and MinIO store a PUT only once its whole body has arrived). A rejection
   * aborts every upload and is the write's error.
   */
  commitGate?: Promise<void>;
}

export class ShardSet {
  readonly n: number;
  readonly headers: Uint8Array[];
  readonly layouts: UnitLayout[];
  /** Per shard, the XXH64 of every block written so far (the footer's shard digests). */
  readonly blockSums: bigint[][];
  private readonly sinks: (ShardSink | undefined)[];
  private readonly slots = new Semaphore(MAX_OPEN_SUBREQUESTS);
  private readonly abort = new AbortController();
  /** Why the commit gate refused the write, once it has. */
  private gateError: unknown = null;

  constructor(readonly g: UnitGeometry, readonly layoutKind: UnitLayoutKind) {
    g.commitGate?.catch((err: unknown) => {
      this.gateError = err;
      for (const s of this.sinks) s?.abort(err);
      this.abort.abort(err);
    });
    const { k, m, blockSize, size } = g;
    this.n = k + m;
    const createdAt = new Date().toISOString(); // one value: every shard's header differs only by its index
    const placement = g.backends.map((b) => b.id);
    const layout = layoutKind === 'column' ? { layout: layoutKind } : {};
    this.headers = g.backends.map((_, i) =>
      encodeHeader({ format: 1, codec: g.codec, bucket: g.bucket, key: g.key, unitId: g.unitId, size, k, m, blockSize, ...layout, shardIndex: i, placement, createdAt, ...g.headerExtra }),
    );
    // Header lengths differ only by the shard index's digits; each shard has its own layout.
    this.layouts = this.headers.map((h) => new UnitLayout(size, k, m, blockSize, h.length, layoutKind));
    this.blockSums = Array.from({ length: this.n }, () => []);
    this.sinks = Array.from({ length: this.n }, () => undefined);
  }

  get layout(): UnitLayout {
    return this.layouts[0]!;
  }

  /** Shard i's upload; created (and its header queued) on first use. */
  sink(i: number): ShardSink {
    let s = this.sinks[i];
    if (!s) {
      const key = shardKey(this.g.bucket, this.g.unitId, i);
      s = new ShardSink(i, this.g.backends[i]!, key, this.layouts[i]!.shardFileLen(), this.abort.signal, BLOCK_CHECKSUM_BYTES + this.g.blockSize, (upload) => this.slots.run(upload));
      this.sinks[i] = s;
      const header = this.headers[i]!;
      void s.write(() => [header]); // the first chunk: a buffer is free, so this never waits
    }
    return s;
  }

  /** Shards not (yet) failed. */
  live(): number {
    return this.sinks.filter((s) => !s || s.ok).length;
  }

  /** Throws QuorumError as soon as the quorum is out of reach (the client gets its answer sooner). */
  checkQuorum(): void {
    if (this.live() < this.g.writeQuorum) throw this.quorumFailure();
  }

  /** The complete footer: the write's digests when this unit ends its write, zeros otherwise. */
  footer(result: BodyDigestResult | null): ShardFooter {
    return {
      md5: result?.md5 ?? new Uint8Array(16),
      checksum: result?.checksum && result.checksumDigest ? { algorithm: result.checksum.algorithm, digest: result.checksumDigest } : null,
      shardDigests: this.blockSums.map((sums, i) => digestOf(sums, i)),
    };
  }

  /** Queues shard i's footer and closes its upload (not waiting for it to finish). */
  finishShard(i: number, complete: ShardFooter): void {
    const bytes = encodeFooter(footerOfShard(complete, { k: this.g.k, layout: this.layoutKind }, i));
    const sink = this.sink(i);
    const gate = this.g.commitGate;
    void (gate ? gate.then(() => sink.write(() => [bytes]), () => {}) : sink.write(() => [bytes])).then(() => sink.close());
  }

  /** Waits for every upload; QuorumError below the write quorum. Returns which shards were stored. */
  async settle(): Promise<boolean[]> {
    await this.g.commitGate; // a refusal is the write's error, whatever the uploads did
    const results = await Promise.all(this.sinks.map((s, i) => (s ?? this.sink(i)).close()));
    if (results.filter(Boolean).length < this.g.writeQuorum) throw this.quorumFailure();
    return results;
  }

  /** The catalog's record of the written unit. `md5`: hex, or '' when the write's store sets it. */
  record(complete: ShardFooter, written: boolean[], md5: Uint8Array | null): CodedUnit {
    const { unitId, codec, size, k, m, blockSize } = this.g;
    return {
      unitId, codec, size, k, m, blockSize,
      ...(this.layoutKind === 'column' ? { layout: 'column' as const } : {}),
      placement: this.g.backends.map((b) => b.id),
      headerLens: this.headers.map((h) => h.length),
      shardDigests: complete.shardDigests.map((d) => d.toString(16).padStart(16, '0')),
      missing: written.flatMap((ok, i) => (ok ? [] : [i])),
      md5: md5 ? toHex(md5) : '',
    };
  }

  /** Stops every shard, deletes what was written, and says why the write failed. */
  async fail(err: unknown): Promise<unknown> {
    const sinks = this.sinks.filter((s): s is ShardSink => !!s);
    if (this.gateError !== null) err = this.gateError;
    const failure = err instanceof S3Error || err instanceof QuorumError ? err : sinks.some((s) => !s.ok) ? this.quorumFailure() : err;
    for (const s of sinks) s.abort(err);
    this.abort.abort(err);
    await Promise.allSettled(sinks.map((s) => s.done));
    await Promise.allSettled(sinks.map((s) => this.slots.run(() => s.backend.delete(s.key))));
    return failure;
  }

  private quorumFailure(): QuorumError {
    const failed = this.sinks.filter((s) => s && !s.ok) as ShardSink[];
    return new QuorumError(`only ${this.n - failed.length} of ${this.n} shards were written; the write quorum is ${this.g.writeQuorum}`, failed.map((s) => s.failure));
  }
}

/** A block checksum as it is stored before the block: 8 bytes, little-endian. */
export function checksumBytes(sum: bigint): Uint8Array {
  const out = new Uint8Array(BLOCK_CHECKSUM_BYTES);
  new DataView(out.buffer).setBigUint64(0, sum, true);
  return out;
}

/** A shard's digest: XXH64 over its block checksums (little-endian), seeded by its index. */
export function digestOf(sums: bigint[], shardIndex: number): bigint {
  const bytes = new Uint8Array(8 * sums.length);
  const view = new DataView(bytes.buffer);
  sums.forEach((v, j) => view.setBigUint64(8 * j, v, true));
  return checksums().xxh64(bytes, BigInt(shardIndex));
}
