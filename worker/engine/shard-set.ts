/**
 * ShardSet: the k+m shard files of one unit being written, whatever the layout: their framing
 * (one ShardFileWriter each: header, checksummed blocks, footer), their uploads (ShardSink,
 * opened on first use within the unit's subrequest slots), the write quorum, the complete
 * footer, and the clean-up of a write that fails. UnitWriter (striped) and ColumnWriter (column)
 * drive it.
 */
import type { Backend } from '../../backends/types.ts';
import { toHex } from '../model/bytes.ts';
import type { BodyDigestResult } from '../model/digest.ts';
import { S3Error } from '../model/errors.ts';
import type { CodedUnit, Codec, UnitLayoutKind } from '../format/manifest.ts';
import { shardKey } from '../format/shard-key.ts';
import { maskFooterDigests, type HeaderSeal } from '../format/seal.ts';
import type { ShardFooter, ShardHeader } from '../format/shard-file.ts';
import { ShardFileWriter } from '../format/shard-file-writer.ts';
import { BLOCK_CHECKSUM_BYTES, type UnitLayout } from '../format/layout.ts';
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
   * A sealed unit (format/seal.ts): `size` is the stored size, and the headers carry this seal
   * instead of the identity (bucket, key, metadata, upload); footers carry no MD5 or checksum.
   */
  seal?: HeaderSeal;
  /** With `seal`: the unit's footer mask (DataKey.footerMask): the footer's digests are masked by it. */
  footerMask?: Uint8Array;
  /**
   * Settles when the catalog has reserved this write's unit ids (ec-store.ts): every shard's
   * footer, its last bytes, waits for it, so no backend can store a shard before its unit is
   * reserved (S3, R2 and MinIO store a PUT only once its whole body has arrived). A rejection
   * aborts every upload and is the write's error.
   */
  commitGate?: Promise<void>;
  /**
   * The time the headers record as the write's (ISO 8601); absent: now. A re-stripe (upkeep/restripe.ts)
   * gives the version's own, so a rebuild from the headers restores its Last-Modified and its
   * place among the key's versions, not the time it was rewritten.
   */
  createdAt?: string;
}

export class ShardSet {
  readonly n: number;
  /** Shard i's framing; its chunks go to shard i's upload (opened on first write). */
  readonly files: ShardFileWriter[];
  private readonly sinks: (ShardSink | undefined)[];
  private readonly slots = new Semaphore(MAX_OPEN_SUBREQUESTS);
  private readonly abort = new AbortController();
  /** Why the commit gate refused the write, once it has. */
  private gateError: unknown = null;

  constructor(
    readonly g: UnitGeometry,
    readonly layoutKind: UnitLayoutKind,
  ) {
    g.commitGate?.catch((err: unknown) => {
      this.gateError = err;
      for (const s of this.sinks) s?.abort(err);
      this.abort.abort(err);
    });
    const { k, m, blockSize, size } = g;
    this.n = k + m;
    const createdAt = g.createdAt ?? new Date().toISOString(); // one value: every shard's header differs only by its index
    const placement = g.backends.map((b) => b.id);
    const layout = layoutKind === 'column' ? { layout: layoutKind } : {};
    this.sinks = Array.from({ length: this.n }, () => undefined);
    // Headers differ only by the shard index (so their lengths, by its digits): each file has its own layout.
    this.files = g.backends.map((_, i) => {
      const header: ShardHeader = g.seal
        ? {
            format: 1,
            codec: g.codec,
            unitId: g.unitId,
            size,
            k,
            m,
            blockSize,
            ...layout,
            shardIndex: i,
            placement,
            createdAt,
            ...(g.headerExtra?.segment ? { segment: g.headerExtra.segment } : {}),
            seal: g.seal,
          }
        : {
            format: 1,
            codec: g.codec,
            bucket: g.bucket,
            key: g.key,
            unitId: g.unitId,
            size,
            k,
            m,
            blockSize,
            ...layout,
            shardIndex: i,
            placement,
            createdAt,
            ...g.headerExtra,
          };
      return new ShardFileWriter(header, { write: (parts) => this.sink(i).write(parts) });
    });
  }

  get layout(): UnitLayout {
    return this.files[0]!.layout;
  }

  /** Shard i's upload; created on first use (its file's first chunk, the header, is a buffer that is free: it never waits). */
  sink(i: number): ShardSink {
    let s = this.sinks[i];
    if (!s) {
      const key = shardKey(this.g.bucket, this.g.unitId, i);
      // Buffers as long as the unit's longest framed block; pooled only at the full block size, so
      // that the odd lengths of short bodies never take the pool's few sizes (buffer-pool.ts).
      const block = this.layout.largestBlock;
      s = new ShardSink(
        i,
        this.g.backends[i]!,
        key,
        this.files[i]!.fileLen,
        this.abort.signal,
        BLOCK_CHECKSUM_BYTES + block,
        (upload) => this.slots.run(upload),
        2,
        block === this.g.blockSize,
      );
      this.sinks[i] = s;
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
    const footer: ShardFooter = {
      md5: result?.md5 ?? new Uint8Array(16),
      checksum: result?.checksum && result.checksumDigest ? { algorithm: result.checksum.algorithm, digest: result.checksumDigest } : null,
      shardDigests: this.files.map((f) => f.digest()),
    };
    // A plaintext digest on a backend would confirm a guessed plaintext: sealed units mask them.
    return this.g.footerMask && result ? maskFooterDigests(footer, this.g.footerMask) : footer;
  }

  /** Queues shard i's footer (after the commit gate) and closes its upload (not waiting for it to finish). */
  finishShard(i: number, complete: ShardFooter): void {
    const file = this.files[i]!;
    const sink = this.sink(i);
    const gate = this.g.commitGate;
    const footer = () => file.writeFooter(complete);
    void (gate ? gate.then(footer, () => {}) : footer()).then(
      () => sink.close(),
      (err: unknown) => sink.abort(err),
    );
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
      unitId,
      codec,
      size,
      k,
      m,
      blockSize,
      ...(this.layoutKind === 'column' ? { layout: 'column' as const } : {}),
      placement: this.g.backends.map((b) => b.id),
      headerLens: this.files.map((f) => f.headerBytes.length),
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
    return new QuorumError(
      `only ${this.n - failed.length} of ${this.n} shards were written; the write quorum is ${this.g.writeQuorum}`,
      failed.map((s) => s.failure),
    );
  }
}
