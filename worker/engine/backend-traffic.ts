/**
 * BackendTraffic: what this isolate has asked of each backend, per bucket: requests by kind and
 * bytes in and out, counted by a wrapper around each Backend (gateway.ts wraps them once). It
 * feeds the cost report (upkeep/cost.ts, admin `costs`) through the narrow `snapshot()`.
 *
 * The bucket is read from the shard key (`sg1/<bucket>/...`, catalog/manifest.ts shardKey); a
 * list over every bucket counts under bucket null.
 * Known gaps: counters live per isolate (Workers run many, and recycle them), so they show the
 * traffic of one isolate since `since`, not the account's month: the shared counters of the
 * metrics work (issue 13) are meant to replace them behind the same snapshot. Egress is counted
 * as the bytes asked for when a GET answers (a read cancelled early counts whole: an upper bound).
 */
import type { Backend, ByteRange, GetOptions, ListOptions, PutBody, PutOptions } from '../../backends/types.ts';

export interface TrafficCounts {
  backendId: string;
  /** The bucket whose shard keys were touched; null for requests over all buckets. */
  bucket: string | null;
  puts: number;
  gets: number;
  heads: number;
  lists: number;
  deletes: number;
  /** Bytes sent to the backend (PUT bodies). */
  bytesIn: number;
  /** Bytes read from the backend (GET bodies): what egress is billed on. */
  bytesOut: number;
}

type Counter = Exclude<keyof TrafficCounts, 'backendId' | 'bucket'>;

export class BackendTraffic {
  readonly since = new Date();
  private readonly counts = new Map<string, TrafficCounts>();

  /** `backend`, with every call counted (failed calls too: providers bill them). */
  wrap(backend: Backend): Backend {
    const add = (key: string, counter: Counter, n = 1) => {
      const c = this.entry(backend.id, bucketOf(key));
      c[counter] += n;
    };
    return {
      id: backend.id,
      domain: backend.domain,
      put: (key: string, body: PutBody, length: number, opts?: PutOptions) => {
        add(key, 'puts');
        add(key, 'bytesIn', length);
        return backend.put(key, body, length, opts);
      },
      get: async (key: string, range?: ByteRange, opts?: GetOptions) => {
        add(key, 'gets');
        const res = await backend.get(key, range, opts);
        add(key, 'bytesOut', range ? range.length : res.size);
        return res;
      },
      head: (key: string) => (add(key, 'heads'), backend.head(key)),
      delete: (key: string) => (add(key, 'deletes'), backend.delete(key)),
      list: (prefix: string, cursor?: string, opts?: ListOptions) => (add(prefix, 'lists'), backend.list(prefix, cursor, opts)),
    };
  }

  /** A copy of every counter, one row per backend and bucket. */
  snapshot(): TrafficCounts[] {
    return [...this.counts.values()].map((c) => ({ ...c }));
  }

  private entry(backendId: string, bucket: string | null): TrafficCounts {
    const id = `${backendId}\n${bucket ?? ''}`;
    let c = this.counts.get(id);
    if (!c) this.counts.set(id, (c = { backendId, bucket, puts: 0, gets: 0, heads: 0, lists: 0, deletes: 0, bytesIn: 0, bytesOut: 0 }));
    return c;
  }
}

/** `sg1/<bucket>/...` -> bucket; anything else (a list over `sg1/`) -> null. */
export function bucketOf(key: string): string | null {
  const m = /^sg1\/([^/]+)\//.exec(key);
  return m ? m[1]! : null;
}
