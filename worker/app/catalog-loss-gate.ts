/**
 * Refuses writes to buckets whose catalog is lost (upkeep/catalog-loss.ts found their journal on
 * the backends ahead of the catalog): every request but GET and HEAD naming such a bucket,
 * CreateBucket of its name included, is InvalidBucketState (409, not retried by SDKs) until an
 * operator runs `shardgate rebuild` or discards the journal. Writing first would make a rebuild
 * merge two histories and, worse, let the new catalog's journal hide the old one. Reads go on
 * (they see what the catalog holds now).
 * The record lives in the bucket list's catalog instance; each isolate reads it at most every
 * REFRESH_MS (one catalog call), and the isolate that finds or ends a loss updates it at once.
 * A write never waits for a read another request started (model/isolate-shared.ts: Workers
 * cancel such a request as hung; the partitions bench met it at the first writes after each
 * refresh interval, up to 15 of 64 at once): while one request reads, the others go on with the
 * record if it is under STALE_MAX_MS old, and otherwise wait for that read with timers of their
 * own, up to a second, and then read it themselves.
 */
import type { CatalogLoss } from '../catalog/types.ts';
import { S3Error } from '../model/errors.ts';
import { IsolateShared } from '../model/isolate-shared.ts';

/** How stale an isolate's copy of the record may be before a write reads it again. */
export const REFRESH_MS = 10_000;
/** How stale it may be for a write while another request of the isolate is reading it. */
export const STALE_MAX_MS = 2 * REFRESH_MS;

export class CatalogLossGate {
  private readonly record: IsolateShared<Set<string>>;

  constructor(
    private readonly read: () => Promise<CatalogLoss>,
    private readonly clock: () => number = Date.now,
  ) {
    this.record = new IsolateShared({ freshMs: REFRESH_MS, staleMs: STALE_MAX_MS, waitMs: 1000, now: clock });
  }

  /** The record as just read or written (the detector, a rebuild, a discard). */
  update(loss: CatalogLoss): void {
    this.record.set(lostBuckets(loss));
  }

  /** Throws InvalidBucketState for a write to a bucket whose catalog is lost. */
  async check(method: string, bucket: string | null | undefined): Promise<void> {
    if (!bucket || method === 'GET' || method === 'HEAD') return;
    const lost = await this.record.get(async () => lostBuckets(await this.read()));
    if (lost.has(bucket)) {
      throw new S3Error(
        'InvalidBucketState',
        `the catalog of bucket ${bucket} is behind its journal on the backends (the catalog was lost): writes are refused until an operator runs shardgate rebuild --bucket ${bucket} (or discards that journal: shardgate rebuild --discard ${bucket})`,
        { BucketName: bucket },
      );
    }
  }
}

const lostBuckets = (loss: CatalogLoss): Set<string> => new Set(Object.keys(loss.lost));
