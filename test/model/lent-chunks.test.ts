/**
 * The lent-chunk contract (worker/model/lent-chunks.ts): a lent stream's chunk is valid until
 * the next read; in poison mode a consumer that keeps one without copying fails, and is told
 * which stream lent it; `keep` and `readAll` are the ways to keep bytes.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { ChunkMayBeHeld, ChunkOwnershipError, keep, lend, poisonMode, readAll, setPoisonMode } from '../../worker/model/lent-chunks.ts';

const wasOn = poisonMode();
afterEach(() => setPoisonMode(wasOn));

/** A producer that reuses one buffer for every chunk, as the engine's readers do. */
function reusing(chunks: number, size: number): ReadableStream<Uint8Array> {
  const buffer = new Uint8Array(size);
  let n = 0;
  return new ReadableStream<Uint8Array>(
    {
      pull(c) {
        if (n === chunks) return c.close();
        buffer.fill(++n);
        c.enqueue(buffer);
      },
    },
    { highWaterMark: 0 },
  );
}

async function collectWithoutCopy(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const c of stream as unknown as AsyncIterable<Uint8Array>) chunks.push(c);
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) out.set(c, at), (at += c.length);
  return out;
}

describe('lent streams', () => {
  test("poison mode: keeping chunks without a copy fails loudly (today's bug made deterministic)", async () => {
    setPoisonMode(true);
    await expect(collectWithoutCopy(lend(reusing(3, 32), 'unit u1'))).rejects.toThrow(/detached/);
  });

  test('poison mode: keep() of a chunk after the next read names the stream that took it back', async () => {
    setPoisonMode(true);
    const reader = lend(reusing(3, 32), 'unit u1 [0, 95]').getReader();
    const first = (await reader.read()).value!;
    await reader.read();
    expect(() => keep(first, 'a late consumer')).toThrow(ChunkOwnershipError);
    expect(() => keep(first, 'a late consumer')).toThrow(/a late consumer: .*unit u1 \[0, 95\] \(chunk 1, taken back at the consumer's next read\)/);
  });

  test("poison mode: the last chunk is taken back at the stream's end and at cancel", async () => {
    setPoisonMode(true);
    const reader = lend(reusing(1, 32), 'u').getReader();
    const only = (await reader.read()).value!;
    expect((await reader.read()).done).toBe(true);
    expect(only.length).toBe(0);
    const r2 = lend(reusing(2, 32), 'u2').getReader();
    const c = (await r2.read()).value!;
    await r2.cancel('bye');
    expect(() => keep(c)).toThrow(/u2 \(chunk 1, taken back at the stream's cancellation\)/);
  });

  test('poison mode: a chunk the runtime may still hold (ChunkMayBeHeld) is not taken back', async () => {
    setPoisonMode(true);
    const reader = lend(reusing(2, 32), 'u').getReader();
    const c = (await reader.read()).value!;
    await reader.cancel(new ChunkMayBeHeld(new Error('client gone')));
    expect(c.length).toBe(32);
    expect(c.every((v) => v === 1)).toBe(true);
  });

  test('readAll and keep give bytes the caller owns, in both modes', async () => {
    for (const on of [true, false]) {
      setPoisonMode(on);
      const all = await readAll(lend(reusing(3, 4), 'u'), 'test');
      expect([...all]).toEqual([1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]);
      const reader = lend(reusing(2, 4), 'u').getReader();
      const kept = keep((await reader.read()).value!);
      await reader.read();
      expect([...kept]).toEqual([1, 1, 1, 1]);
    }
  });

  test('readAll with a known size refuses a longer stream', async () => {
    await expect(readAll(reusing(3, 4), 'test', 8)).rejects.toThrow(/more than its 8 bytes/);
  });

  test('a lent stream over a lent stream hands the inner loans on (no copy of a copy)', async () => {
    setPoisonMode(true);
    const reader = lend(lend(reusing(2, 8), 'inner'), 'outer').getReader();
    const a = (await reader.read()).value!;
    await reader.read();
    expect(() => keep(a)).toThrow(/inner \(chunk 1/);
  });

  test('off: lend is the stream itself', () => {
    setPoisonMode(false);
    const s = reusing(1, 1);
    expect(lend(s, 'x')).toBe(s);
  });
});
