/**
 * Workers let one invocation hold at most 6 subrequests open at once (R2 binding calls count);
 * a 7th waits for one to finish. A unit whose shards would need more streams open at once
 * (k+m > 6 when writing, k > 6 when reading) therefore runs "buffered": each shard's bytes are
 * collected in memory and sent, or drained, with at most 6 requests in flight. Bodies of wide
 * policies are cut into segments (units of bounded size) so that memory stays bounded too.
 */
import type { Backend, BlobRetention, ByteRange, GetOptions, GetResult } from '../../backends/types.ts';

export const MAX_OPEN_SUBREQUESTS = 6;

export class Semaphore {
  private waiting: (() => void)[] = [];
  constructor(private free: number) {}

  /** Runs `fn` in a slot; `first`: ahead of every waiter (a read that replaces a failed one). */
  async run<T>(fn: () => Promise<T>, first = false): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => (first ? this.waiting.unshift(resolve) : this.waiting.push(resolve)));
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}

/** A view of `backend` whose get() reads the whole body inside the semaphore, then serves it from memory. */
export function drainingBackend(backend: Backend, sem: Semaphore): Backend {
  return {
    id: backend.id,
    domain: backend.domain,
    put: (key, body, length, opts) => sem.run(() => backend.put(key, body, length, opts)),
    head: (key) => sem.run(() => backend.head(key)),
    delete: (key) => sem.run(() => backend.delete(key)),
    ...(backend.retain ? { retain: (key: string, r: BlobRetention) => sem.run(() => backend.retain!(key, r)) } : {}),
    list: (prefix, cursor, opts) => sem.run(() => backend.list(prefix, cursor, opts)),
    async get(key: string, range?: ByteRange, opts?: GetOptions): Promise<GetResult> {
      return sem.run(async () => {
        const r = await backend.get(key, range, opts);
        const bytes = new Uint8Array(await new Response(r.body).arrayBuffer());
        return { size: r.size, body: new ReadableStream({ start: (c) => (c.enqueue(bytes), c.close()) }) };
      });
    },
  };
}
