/**
 * Replicated reads pick one replica and keep it (issue 23): a replicate-3 GET of any size is one
 * backend request, read after read in the same isolate (whose latency samples then differ per
 * backend); a replica that is down costs one failed request and the read moves on to the next.
 * Untried backends rank as the median of the known ones, never as 0 ms.
 */
import { describe, expect, it } from 'vitest';
import { FaultyBackend, MemoryBackend } from '../../backends/index.ts';
import { BackendLatency } from '../../worker/engine/backend-latency.ts';
import type { StoragePolicy } from '../../worker/engine/policy.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { prng, randomBytes } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';

const B = 4096;
const replicate3: StoragePolicy = {
  name: 'replicate-3',
  codec: 'replica',
  k: 1,
  m: 2,
  writeQuorum: 2,
  blockSize: B,
  small: { threshold: 0, mode: 'replicate', replicas: 3 },
};

function streamOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let off = 0;
  return new ReadableStream({
    pull(c) {
      if (off >= bytes.length) return c.close();
      c.enqueue(bytes.slice(off, off + 7000));
      off += 7000;
    },
  });
}

describe('replicated reads', () => {
  const rand = prng(233);

  it('a replicate-3 GET of 1 MiB is one backend request, every time; a replica down costs one more', async () => {
    const faulty = Array.from({ length: 3 }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `r${i}`, domain: `z${i}` })));
    const units = new UnitStore(faulty, () => {}, {});
    const data = randomBytes(rand, 1024 * 1024 + 5); // 257 rows of 4 KiB
    const plan = units.plan(data.length, replicate3, false);
    const stored = await units.storeBody({ bucket: 'bkt', key: 'obj', body: streamOf(data), size: data.length, policy: replicate3, plan, checksum: null });
    const gets = () => faulty.map((f) => f.calls.filter((c) => c.op === 'get').length);
    for (let round = 0; round < 4; round++) {
      faulty.forEach((f) => f.calls.splice(0));
      expect(Buffer.compare(await readBytes(await units.open('bkt', 'obj', stored.storage, 0, data.length - 1)), data)).toBe(0);
      expect(
        gets().reduce((a, b) => a + b, 0),
        `read ${round}: ${gets()}`,
      ).toBe(1);
    }
    const used = gets().indexOf(1);
    // The next read goes to the replica its latency samples rank first; on a loaded machine the
    // samples can come to rank another one first, and the read would never meet the one taken
    // down. So the others are made slow: the replica about to go down is the one it tries.
    faulty.forEach((f, i) => i !== used && units.latency.record(f.id, 10_000));
    faulty[used]!.goOffline();
    faulty.forEach((f) => f.calls.splice(0));
    expect(Buffer.compare(await readBytes(await units.open('bkt', 'obj', stored.storage, 0, data.length - 1)), data)).toBe(0);
    expect(
      gets().reduce((a, b) => a + b, 0),
      'the failed replica, then one other for every row',
    ).toBe(2);
  });

  it('an untried backend ranks as the median of the known ones, just ahead of one at that median', () => {
    const l = new BackendLatency();
    expect(l.of('a')).toBe(0);
    l.record('a', 5);
    expect(l.of('c')).toBeLessThan(5);
    expect(l.of('c')).toBeGreaterThan(4.99);
    l.record('b', 25);
    l.recordFailure('d');
    expect(l.of('c')).toBeLessThan(25);
    expect(l.of('c')).toBeGreaterThan(24.99);
    expect(l.known('c')).toBe(false);
  });
});
