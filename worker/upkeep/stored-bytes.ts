/**
 * What each backend holds, per directory (a bucket, or a bucket's shelf: format/shard-key.ts),
 * measured by listing shard keys under `prefixes` (all of `sg1/` by default):
 * bytes and shard files as the provider bills them, garbage not yet collected included. Feeds
 * the cost report (cost.ts, admin `costs`).
 * Listing costs a request per page (a PUT-class request on S3 and R2): each backend is listed
 * for at most `maxPagesPerBackend` pages per call; a backend cut short is marked `complete:
 * false` and its figures are a lower bound.
 * Known gap: no cursor to resume a cut-short listing; bytes are measured, not kept as counters
 * in the catalog (a bucket of millions of shards takes thousands of pages).
 */
import type { Backend } from '../../backends/types.ts';
import { bucketPrefix, directoryOfShardKey } from '../format/shard-key.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore } from '../engine/index.ts';

export interface StoredBytes {
  backendId: string;
  /** The directory as listed; the caller names its bucket (shard-key.ts bucketsByDirectory). */
  bucket: string;
  bytes: number;
  shards: number;
}

export interface StoredMeasure {
  stored: StoredBytes[];
  /** Backends whose listing ended within the page budget. */
  complete: Record<string, boolean>;
  /** List requests made. */
  pages: number;
  /** Backends whose listing failed (their figures are what was listed before). */
  errors: Record<string, string>;
}

export async function measureStored(backends: Backend[], o: { prefixes?: string[]; maxPagesPerBackend: number }): Promise<StoredMeasure> {
  const prefixes = o.prefixes ?? [bucketPrefix()];
  const slots = new Semaphore(MAX_OPEN_SUBREQUESTS);
  const stored = new Map<string, StoredBytes>();
  const complete: Record<string, boolean> = {};
  const errors: Record<string, string> = {};
  let pages = 0;
  await Promise.all(
    backends.map((b) =>
      slots.run(async () => {
        let cursor: string | undefined;
        let n = 0;
        complete[b.id] = false;
        // A backend that does not answer is reported, not fatal: the others are still worth seeing.
        try {
          for (const prefix of prefixes) {
            do {
              const page = await b.list(prefix, cursor);
              pages++;
              n++;
              for (const e of page.entries) {
                const directory = directoryOfShardKey(e.key);
                if (!directory) continue;
                const id = `${b.id}\n${directory}`;
                let s = stored.get(id);
                if (!s) stored.set(id, (s = { backendId: b.id, bucket: directory, bytes: 0, shards: 0 }));
                s.bytes += e.size;
                s.shards++;
              }
              cursor = page.cursor;
            } while (cursor && n < o.maxPagesPerBackend);
            if (cursor) break; // out of pages: this backend's figures are a lower bound
          }
          complete[b.id] = cursor === undefined;
        } catch (err) {
          errors[b.id] = (err as Error).message;
        }
      }),
    ),
  );
  return { stored: [...stored.values()], complete, pages, errors };
}
