/**
 * engine/shard-reader.ts cancel(): a reader whose backend call has sent its whole range is
 * closed without aborting that call (there is nothing left to stop, and the abort, an error with
 * its stack and the signal's listeners, was a few percent of a small GET's Worker CPU, issue 42);
 * a reader cancelled with part of its range unsent still aborts its call, so a client gone
 * mid-read stops every backend read it had started. Through the real engine over memory backends
 * that record each read's signal.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/memory.ts';
import type { Backend, ByteRange, GetOptions, GetResult } from '../../backends/types.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { memoryEcStore } from '../support/memory-store.ts';

class RecordingBackend extends MemoryBackend {
  readonly signals: AbortSignal[] = [];
  override get(key: string, range?: ByteRange, opts?: GetOptions): Promise<GetResult> {
    if (opts?.signal) this.signals.push(opts.signal);
    return super.get(key, range, opts);
  }
}

const put = (size: number) => ({ contentLength: size, metadata: { user: {} }, checksum: null, conditions: {} });
const stream = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });

async function setup(sizes: Record<string, number>) {
  const backends = Array.from({ length: 6 }, (_, i) => new RecordingBackend({ id: `mem-${i}`, domain: `zone-${i}` }));
  const { store } = memoryEcStore(localCatalog(), { backends: backends as Backend[] });
  await store.createBucket('b', { region: 'us-east-1' });
  for (const [key, size] of Object.entries(sizes)) await store.putObject('b', key, stream(new Uint8Array(size).fill(7)), put(size));
  const signals = () => backends.flatMap((b) => b.signals.splice(0));
  signals(); // the writes' own calls
  return { store, signals };
}

describe('ShardReader.cancel', () => {
  it('a read that got every byte it asked for aborts none of its backend calls', async () => {
    const { store, signals } = await setup({ small: 200_000, large: 3 * 1024 * 1024 });
    for (const key of ['small', 'large']) {
      const got = await store.getObject('b', key, { conditions: {} });
      let length = 0; // a lent chunk is valid until the next read: count it, keep nothing
      const reader = (got.body as ReadableStream<Uint8Array>).getReader();
      for (let r = await reader.read(); !r.done; r = await reader.read()) length += r.value.length;
      expect(length).toBe(key === 'small' ? 200_000 : 3 * 1024 * 1024);
      const read = signals();
      expect(read.length).toBeGreaterThanOrEqual(4);
      expect(read.filter((s) => s.aborted)).toEqual([]);
    }
  });

  it('a read the client stops early aborts the calls still sending', async () => {
    const { store, signals } = await setup({ large: 3 * 1024 * 1024 });
    const got = await store.getObject('b', 'large', { conditions: {} });
    const reader = (got.body as ReadableStream<Uint8Array>).getReader();
    await reader.read(); // the first block, then the client goes away
    await reader.cancel(new Error('client gone'));
    await new Promise((r) => setTimeout(r, 10));
    expect(signals().some((s) => s.aborted)).toBe(true);
  });
});
