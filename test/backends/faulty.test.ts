// FaultyBackend: with no fault armed it must keep the whole contract; each fault kind is then
// checked on its own, deterministically (seeded PRNG, call numbers, order of completion).

import { describe, expect, it } from 'vitest';
import { FaultyBackend } from '../../backends/faulty.ts';
import { MemoryBackend } from '../../backends/memory.ts';
import { readAll } from '../../backends/streams.ts';
import { chunked, expectKind, getBytes, pattern, runBackendContract } from './contract.ts';

runBackendContract('faulty(memory), no faults', () => new FaultyBackend(new MemoryBackend({ id: 'f0', domain: 'local' })));
runBackendContract('faulty(memory), recording writes', () => new FaultyBackend(new MemoryBackend({ id: 'f1', domain: 'local' }), { recordWrites: true }));

function setup(opts: ConstructorParameters<typeof FaultyBackend>[1] = {}) {
  const inner = new MemoryBackend({ id: 'disk-1', domain: 'local' });
  return { inner, faulty: new FaultyBackend(inner, opts) };
}

describe('FaultyBackend offline', () => {
  it('fails every operation as Unavailable without touching the inner backend', async () => {
    const { inner, faulty } = setup();
    await faulty.put('k', pattern(4), 4);
    faulty.goOffline();
    await expectKind(faulty.put('k2', pattern(4), 4), 'Unavailable', 'disk-1');
    await expectKind(faulty.get('k'), 'Unavailable');
    await expectKind(faulty.head('k'), 'Unavailable');
    await expectKind(faulty.delete('k'), 'Unavailable');
    await expectKind(faulty.list(''), 'Unavailable');
    expect(inner.blobCount).toBe(1);
    faulty.goOnline();
    expect((await getBytes(faulty, 'k')).bytes).toEqual(pattern(4));
  });

  it('can be taken down in the middle of a run', async () => {
    const { faulty } = setup();
    const outcomes: string[] = [];
    for (let i = 0; i < 5; i++) {
      if (i === 2) faulty.goOffline();
      outcomes.push(
        await faulty.put(`k${i}`, pattern(1), 1).then(
          () => 'ok',
          (e: { kind: string }) => e.kind,
        ),
      );
    }
    expect(outcomes).toEqual(['ok', 'ok', 'Unavailable', 'Unavailable', 'Unavailable']);
  });
});

describe('FaultyBackend chosen failures', () => {
  it('fails the Nth put only, before it reaches the inner backend', async () => {
    const { inner, faulty } = setup();
    faulty.failWhen(FaultyBackend.nth('put', 2), 'Timeout');
    const outcomes = [];
    for (let i = 1; i <= 3; i++)
      outcomes.push(
        await faulty.put(`k${i}`, pattern(1), 1).then(
          () => 'ok',
          (e: { kind: string }) => e.kind,
        ),
      );
    expect(outcomes).toEqual(['ok', 'Timeout', 'ok']);
    await expectKind(inner.head('k2'), 'NotFound');
  });

  it('fails calls chosen by op and key', async () => {
    const { faulty } = setup();
    await faulty.put('shard.0', pattern(1), 1);
    await faulty.put('shard.1', pattern(1), 1);
    faulty.failWhen((c) => c.op === 'get' && c.key.endsWith('.1'), 'Corrupt');
    await getBytes(faulty, 'shard.0');
    await expectKind(faulty.get('shard.1'), 'Corrupt');
    expect((await faulty.head('shard.1')).size).toBe(1);
  });

  it('can fail a call after it succeeded (the write is stored, the caller hears an error)', async () => {
    const { inner, faulty } = setup();
    faulty.failWhen((c) => c.op === 'put', 'Timeout', { after: true });
    await expectKind(faulty.put('k', pattern(3), 3), 'Timeout');
    expect((await getBytes(inner, 'k')).bytes).toEqual(pattern(3));
  });

  it('logs every call with its numbers', async () => {
    const { faulty } = setup();
    await faulty.put('a', pattern(1), 1);
    await faulty.head('a');
    await faulty.put('b', pattern(1), 1);
    await faulty.list('x/');
    expect(faulty.calls).toEqual([
      { op: 'put', key: 'a', callNo: 1, opCallNo: 1 },
      { op: 'head', key: 'a', callNo: 2, opCallNo: 1 },
      { op: 'put', key: 'b', callNo: 3, opCallNo: 2 },
      { op: 'list', key: 'x/', callNo: 4, opCallNo: 1 },
    ]);
  });
});

describe('FaultyBackend failures at a rate', () => {
  async function pattern200(seed: number, rate: number, ops?: ('get' | 'head')[]) {
    const { faulty } = setup({ seed });
    await faulty.put('k', pattern(1), 1);
    faulty.failAtRate(rate, { kind: 'Throttled', ops });
    const out: string[] = [];
    for (let i = 0; i < 200; i++)
      out.push(
        await faulty.head('k').then(
          () => '.',
          () => 'x',
        ),
      );
    return out.join('');
  }

  it('is deterministic for a seed and differs between seeds', async () => {
    const a = await pattern200(7, 0.25);
    expect(await pattern200(7, 0.25)).toBe(a);
    expect(await pattern200(8, 0.25)).not.toBe(a);
    const failures = a.split('').filter((c) => c === 'x').length;
    expect(failures).toBeGreaterThan(25);
    expect(failures).toBeLessThan(75);
  });

  it('never fails at rate 0, always at rate 1, and only the listed operations', async () => {
    expect(await pattern200(1, 0)).toBe('.'.repeat(200));
    expect(await pattern200(1, 1)).toBe('x'.repeat(200));
    expect(await pattern200(1, 1, ['get'])).toBe('.'.repeat(200));
  });
});

describe('FaultyBackend latency', () => {
  it('lets an undelayed call finish before a delayed one started earlier', async () => {
    const slow = setup().faulty;
    const fast = setup().faulty;
    await slow.put('k', pattern(8), 8);
    await fast.put('k', pattern(8), 8);
    slow.delayWhen(200, (c) => c.op === 'get');
    const finished: string[] = [];
    const slowRead = getBytes(slow, 'k').then((r) => (finished.push('slow'), r));
    const fastRead = getBytes(fast, 'k').then((r) => (finished.push('fast'), r));
    const [s, f] = await Promise.all([slowRead, fastRead]);
    expect(finished).toEqual(['fast', 'slow']);
    expect(s.bytes).toEqual(f.bytes); // delayed, not damaged
  });
});

describe('FaultyBackend damaged bodies', () => {
  it('cuts a read short silently, still reporting the full size', async () => {
    const { faulty } = setup();
    await faulty.put('k', chunked(pattern(1000), [100]), 1000);
    faulty.truncateGets(250);
    const { bytes, size } = await getBytes(faulty, 'k');
    expect(size).toBe(1000);
    expect(bytes).toEqual(pattern(1000).subarray(0, 250));
  });

  it('or errors the body as a lost connection after the kept bytes', async () => {
    const { faulty } = setup();
    await faulty.put('k', pattern(1000), 1000);
    faulty.truncateGets(250, { mode: 'error' });
    const { body } = await faulty.get('k');
    const reader = body.getReader();
    let receivedBytes = 0;
    const err = await (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return undefined;
        receivedBytes += value.byteLength;
      }
    })().catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'Unavailable', backendId: 'disk-1' });
    expect(receivedBytes).toBe(250);
  });

  it('flips bit 0 at chosen offsets of the returned body, leaving the stored blob intact', async () => {
    const { faulty } = setup();
    const data = pattern(300);
    await faulty.put('k', data, 300);
    faulty.flipBitsOnGet({ at: [0, 150] });
    const got = (await getBytes(faulty, 'k', { offset: 100, length: 200 })).bytes;
    const want = data.slice(100, 300);
    want[0] ^= 1;
    want[150] ^= 1;
    expect(got).toEqual(want);
    faulty.heal();
    expect((await getBytes(faulty, 'k')).bytes).toEqual(data);
  });

  it('flips seeded random bits: same seed, same damage', async () => {
    const damage = async (seed: number) => {
      const { faulty } = setup({ seed });
      await faulty.put('k', pattern(4096), 4096);
      faulty.flipBitsOnGet({ count: 3 });
      const got = (await getBytes(faulty, 'k')).bytes;
      return [...got].flatMap((v, i) => (v !== pattern(4096)[i] ? [`${i}:${v ^ pattern(4096)[i]}`] : []));
    };
    const first = await damage(3);
    expect(first.length).toBeGreaterThanOrEqual(1);
    expect(first.length).toBeLessThanOrEqual(3);
    expect(await damage(3)).toEqual(first);
  });
});

describe('FaultyBackend stale reads', () => {
  it('serves the version before the latest, and NotFound for a key written once', async () => {
    const { faulty } = setup({ recordWrites: true });
    await faulty.put('k', pattern(10, 1), 10);
    await faulty.put('k', pattern(20, 2), 20);
    await faulty.put('once', pattern(5), 5);
    faulty.serveStale();
    expect(await getBytes(faulty, 'k')).toEqual({ bytes: pattern(10, 1), size: 10 });
    expect(await getBytes(faulty, 'k', { offset: 2, length: 3 })).toEqual({ bytes: pattern(10, 1).subarray(2, 5), size: 10 });
    expect((await faulty.head('k')).size).toBe(10);
    await expectKind(faulty.get('once'), 'NotFound');
    faulty.heal();
    expect(await getBytes(faulty, 'k')).toEqual({ bytes: pattern(20, 2), size: 20 });
  });

  it('passes through keys it never saw written, and needs recordWrites', async () => {
    const { inner, faulty } = setup({ recordWrites: true });
    await inner.put('direct', pattern(3), 3);
    faulty.serveStale();
    expect((await getBytes(faulty, 'direct')).bytes).toEqual(pattern(3));
    expect(() => setup().faulty.serveStale()).toThrow(/recordWrites/);
  });
});

describe('FaultyBackend heal', () => {
  it('clears every fault at once', async () => {
    const { faulty } = setup({ recordWrites: true });
    await faulty.put('k', pattern(10), 10);
    await faulty.put('k', pattern(10, 9), 10);
    faulty
      .goOffline()
      .failAtRate(1)
      .failWhen(() => true)
      .truncateGets(1)
      .flipBitsOnGet()
      .serveStale()
      .delayWhen(1);
    faulty.heal();
    expect(faulty.offline).toBe(false);
    expect(await readAll((await faulty.get('k')).body)).toEqual(pattern(10, 9));
  });
});
