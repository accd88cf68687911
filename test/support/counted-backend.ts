/**
 * A backend that counts what is asked of it, as the cost report would count it: the mover's view
 * in the drain proof (test/upkeep/drain-s3rver.test.ts) and the drain bench (bench/drain.ts).
 * A ranged GET counts its range's bytes, a whole GET the blob's size. `hangNextPut` makes the
 * next PUT never settle (a gateway that dies mid-copy); a PUT the backend refuses (it is down)
 * counts in `putsRefused` too, since it stores and bills nothing.
 */
import type { Backend, BlobInfo, GetResult, ListPage, PutBody } from '../../backends/types.ts';

export class CountedBackend implements Backend {
  gets = 0;
  puts = 0;
  putsRefused = 0;
  deletes = 0;
  heads = 0;
  lists = 0;
  bytesOut = 0;
  bytesIn = 0;
  hangNextPut = false;

  constructor(readonly inner: Backend) {}

  get id() {
    return this.inner.id;
  }
  get domain() {
    return this.inner.domain;
  }

  async put(key: string, body: PutBody, length: number): Promise<void> {
    this.puts++;
    this.bytesIn += length;
    if (this.hangNextPut) {
      this.hangNextPut = false;
      return new Promise(() => {});
    }
    return this.inner.put(key, body, length).catch((err) => {
      this.putsRefused++;
      throw err;
    });
  }

  async get(key: string, range?: { offset: number; length: number }): Promise<GetResult> {
    this.gets++;
    const r = await this.inner.get(key, range);
    this.bytesOut += range ? range.length : r.size;
    return r;
  }

  head(key: string): Promise<BlobInfo> {
    this.heads++;
    return this.inner.head(key);
  }
  delete(key: string): Promise<void> {
    this.deletes++;
    return this.inner.delete(key);
  }
  list(prefix: string, cursor?: string): Promise<ListPage> {
    this.lists++;
    return this.inner.list(prefix, cursor);
  }
}
