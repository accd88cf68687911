/**
 * A Backend wrapper that counts the requests open at once across the backends it wraps, as
 * Workers count subrequests: a call is open from its start until it settles, and a GET until its
 * body has been read to the end, cancelled or has failed. A call that would be the 7th open one
 * is refused (and recorded in `violations`), so a test fails where production would stall.
 */
import type { Backend, ByteRange, GetOptions, GetResult, ListOptions, PutBody, PutOptions } from '../../backends/types.ts';

export const WORKERS_OPEN_SUBREQUESTS = 6;

export class SubrequestProbe {
  open = 0;
  peak = 0;
  readonly violations: string[] = [];

  constructor(private readonly limit = WORKERS_OPEN_SUBREQUESTS) {}

  wrap(b: Backend): Backend {
    const enter = (what: string) => {
      if (this.open >= this.limit) {
        this.violations.push(`${what} would be request ${this.open + 1} open at once`);
        throw new Error(`subrequest limit: ${what} would be request ${this.open + 1} open at once`);
      }
      this.open++;
      this.peak = Math.max(this.peak, this.open);
      let left = false;
      return () => {
        if (!left) this.open--;
        left = true;
      };
    };
    const call = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
      const leave = enter(what);
      try {
        return await fn();
      } finally {
        leave();
      }
    };
    return {
      id: b.id,
      domain: b.domain,
      put: (key: string, body: PutBody, length: number, opts?: PutOptions) => call(`put ${key}`, () => b.put(key, body, length, opts)),
      head: (key: string) => call(`head ${key}`, () => b.head(key)),
      delete: (key: string) => call(`delete ${key}`, () => b.delete(key)),
      list: (prefix: string, cursor?: string, opts?: ListOptions) => call(`list ${prefix}`, () => b.list(prefix, cursor, opts)),
      get: async (key: string, range?: ByteRange, opts?: GetOptions): Promise<GetResult> => {
        const leave = enter(`get ${key}`);
        let res: GetResult;
        try {
          res = await b.get(key, range, opts);
        } catch (err) {
          leave();
          throw err;
        }
        const reader = res.body.getReader();
        const body = new ReadableStream<Uint8Array>(
          {
            async pull(c) {
              try {
                const r = await reader.read();
                if (r.done) {
                  leave();
                  return c.close();
                }
                c.enqueue(r.value);
              } catch (err) {
                leave();
                c.error(err);
              }
            },
            cancel(reason) {
              leave();
              return reader.cancel(reason);
            },
          },
          { highWaterMark: 0 },
        );
        return { size: res.size, body };
      },
    };
  }
}
