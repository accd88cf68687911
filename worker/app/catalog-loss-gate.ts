/**
 * Refuses writes to buckets whose catalog is lost (upkeep/catalog-loss.ts found their journal on
 * the backends ahead of the catalog): every request but GET and HEAD naming such a bucket,
 * CreateBucket of its name included, is InvalidBucketState (409, not retried by SDKs) until an
 * operator runs `shardgate rebuild` or discards the journal. Writing first would make a rebuild
 * merge two histories and, worse, let the new catalog's journal hide the old one. Reads go on
 * (they see what the catalog holds now).
 * The record lives in the bucket list's catalog instance; each isolate reads it at most every
 * REFRESH_MS (one catalog call), and the isolate that finds or ends a loss updates it at once.
 */
import type { CatalogLoss } from '../catalog/types.ts';
import { S3Error } from '../model/errors.ts';

/** How stale an isolate's copy of the record may be. */
export const REFRESH_MS = 10_000;

export class CatalogLossGate {
  private lost = new Set<string>();
  private readAt = -Infinity;
  private reading: Promise<void> | null = null;

  constructor(
    private readonly read: () => Promise<CatalogLoss>,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The record as just read or written (the detector, a rebuild, a discard). */
  update(loss: CatalogLoss): void {
    this.lost = new Set(Object.keys(loss.lost));
    this.readAt = this.clock();
  }

  /** Throws InvalidBucketState for a write to a bucket whose catalog is lost. */
  async check(method: string, bucket: string | null | undefined): Promise<void> {
    if (!bucket || method === 'GET' || method === 'HEAD') return;
    if (this.clock() - this.readAt >= REFRESH_MS)
      await (this.reading ??= this.read()
        .then((l) => this.update(l))
        .finally(() => (this.reading = null)));
    if (this.lost.has(bucket)) {
      throw new S3Error(
        'InvalidBucketState',
        `the catalog of bucket ${bucket} is behind its journal on the backends (the catalog was lost): writes are refused until an operator runs shardgate rebuild --bucket ${bucket} (or discards that journal: shardgate rebuild --discard ${bucket})`,
        { BucketName: bucket },
      );
    }
  }
}
