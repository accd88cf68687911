// The behavioural contract of backends/types.ts, as one suite run against every adapter
// (hono's router/common.case.test.ts style): memory, S3 over s3rver, R2 over miniflare's
// simulation (Node proxy and inside workerd), and the fault wrapper with no faults armed.
// Every test writes under its own fresh prefix, so one backend instance serves the whole suite.
// Known simulator quirks are declared by the caller and skip only the check they break.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../backends/types.ts';
import { byUtf8, chunked, expectKind, expectSameBytes, getBytes, listAll, pattern, reusingSource } from './helpers.ts';

export { byUtf8, chunked, expectKind, expectSameBytes, getBytes, listAll, pattern } from './helpers.ts';

export interface ContractQuirks {
  /** Reason the backend lists keys of different depths out of byte order (s3rver walks dirs). */
  listOrderAcrossDepths?: string;
  /** Reason a rejected put may leave a partial blob visible (a simulator that writes as bytes arrive). */
  partialWritesVisible?: string;
}

export interface ContractOptions {
  quirks?: ContractQuirks;
  /** Size of the large streamed put (default 8 MiB). */
  largeBytes?: number;
  cleanup?: () => Promise<void> | void;
}

export function runBackendContract(name: string, makeBackend: () => Backend | Promise<Backend>, options: ContractOptions = {}): void {
  describe(`Backend contract: ${name}`, () => {
    let backend: Backend;
    const run = `contract-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    let testNo = 0;
    const fresh = () => `${run}/t${++testNo}`; // a prefix no other test touches

    beforeAll(async () => {
      backend = await makeBackend();
    });
    afterAll(async () => {
      await options.cleanup?.();
    });

    defineBasicCases(() => backend, fresh);
    defineRangeCases(() => backend, fresh);
    defineListCases(() => backend, fresh, options.quirks ?? {});
    defineWriteCases(() => backend, fresh, options);
  });
}

function defineBasicCases(b: () => Backend, fresh: () => string) {
  it('has an id and a failure domain', () => {
    expect(b().id).toMatch(/\S/);
    expect(b().domain).toMatch(/\S/);
  });

  it('puts bytes and gets them back with their size', async () => {
    const key = `${fresh()}/blob`;
    const data = pattern(1000);
    await b().put(key, data, data.byteLength);
    const got = await getBytes(b(), key);
    expect(got.size).toBe(1000);
    expect(got.bytes).toEqual(data);
  });

  it('puts a chunked stream of known length', async () => {
    const key = `${fresh()}/stream`;
    const data = pattern(200_000, 2);
    await b().put(key, chunked(data), data.byteLength);
    expectSameBytes((await getBytes(b(), key)).bytes, data);
  });

  it('stores zero-length blobs, from bytes and from an empty stream', async () => {
    const p = fresh();
    await b().put(`${p}/empty-bytes`, new Uint8Array(0), 0);
    await b().put(`${p}/empty-stream`, chunked(new Uint8Array(0)), 0);
    for (const key of [`${p}/empty-bytes`, `${p}/empty-stream`]) {
      const got = await getBytes(b(), key);
      expect(got).toEqual({ bytes: new Uint8Array(0), size: 0 });
      expect((await b().head(key)).size).toBe(0);
      expect(await getBytes(b(), key, { offset: 0, length: 0 })).toEqual({ bytes: new Uint8Array(0), size: 0 });
    }
  });

  it('heads a blob: size and a valid lastModified', async () => {
    const key = `${fresh()}/h`;
    await b().put(key, pattern(321), 321);
    const info = await b().head(key);
    expect(info.size).toBe(321);
    expect(info.lastModified).toBeInstanceOf(Date);
    expect(Number.isNaN(info.lastModified.getTime())).toBe(false);
  });

  it('reports a missing key as NotFound on get, ranged get and head', async () => {
    const key = `${fresh()}/missing`;
    await expectKind(b().get(key), 'NotFound', b().id);
    await expectKind(b().get(key, { offset: 0, length: 1 }), 'NotFound', b().id);
    await expectKind(b().get(key, { offset: 0, length: 0 }), 'NotFound', b().id);
    await expectKind(b().head(key), 'NotFound', b().id);
  });

  it('deletes idempotently', async () => {
    const key = `${fresh()}/d`;
    await b().put(key, pattern(10), 10);
    await b().delete(key);
    await expectKind(b().get(key), 'NotFound');
    await expectKind(b().head(key), 'NotFound');
    await b().delete(key);
    await b().delete(`${fresh()}/never-written`);
  });

  it('overwrites a key with a shorter blob', async () => {
    const key = `${fresh()}/o`;
    await b().put(key, pattern(5000, 3), 5000);
    const second = pattern(123, 4);
    await b().put(key, chunked(second, [50]), 123);
    expect(await getBytes(b(), key)).toEqual({ bytes: second, size: 123 });
    expect((await b().head(key)).size).toBe(123);
  });

  it("rejects a call whose signal is already aborted with the caller's reason, writing nothing", async () => {
    const key = `${fresh()}/aborted`;
    const stop = new Error('caller gave up');
    const signal = AbortSignal.abort(stop);
    await expect(b().put(key, pattern(5), 5, { signal })).rejects.toBe(stop);
    await expect(b().get(key, undefined, { signal })).rejects.toBe(stop);
    await expectKind(b().head(key), 'NotFound');
  });

  it('hands out chunks the caller owns', async () => {
    const key = `${fresh()}/own`;
    const data = pattern(64);
    await b().put(key, data, 64);
    data.fill(0); // the put must have copied or finished with the caller's buffer
    const first = await getBytes(b(), key);
    first.bytes.fill(0xff);
    expect((await getBytes(b(), key)).bytes).toEqual(pattern(64));
  });
}

function defineRangeCases(b: () => Backend, fresh: () => string) {
  const size = 10_000;
  const cases: [string, number, number][] = [
    ['first byte', 0, 1],
    ['start', 0, 100],
    ['middle', 4321, 1234],
    ['end', size - 7, 7],
    ['last byte', size - 1, 1],
    ['whole blob', 0, size],
    ['zero length in the middle', 500, 0],
    ['zero length at the end', size, 0],
  ];
  for (const [label, offset, length] of cases) {
    it(`gets a range: ${label} (${offset}+${length})`, async () => {
      const key = `${fresh()}/r`;
      const data = pattern(size, 5);
      await b().put(key, data, size);
      const got = await getBytes(b(), key, { offset, length });
      expect(got.size).toBe(size);
      expectSameBytes(got.bytes, data.subarray(offset, offset + length));
    });
  }

  it('reports a range past the end of the blob as Corrupt', async () => {
    const key = `${fresh()}/short`;
    await b().put(key, pattern(100), 100);
    await expectKind(b().get(key, { offset: 99, length: 2 }), 'Corrupt', b().id);
    await expectKind(b().get(key, { offset: 150, length: 10 }), 'Corrupt', b().id);
    await expectKind(b().get(key, { offset: 101, length: 0 }), 'Corrupt', b().id);
  });

  it('rejects a malformed range as a caller bug, not a backend failure', async () => {
    const key = `${fresh()}/bad`;
    await b().put(key, pattern(10), 10);
    await expect(b().get(key, { offset: -1, length: 2 })).rejects.toBeInstanceOf(RangeError);
    await expect(b().get(key, { offset: 0.5, length: 2 })).rejects.toBeInstanceOf(RangeError);
  });
}

function defineListCases(b: () => Backend, fresh: () => string, quirks: ContractQuirks) {
  it('lists by prefix across pages, each key once, in byte order, with sizes', async () => {
    const p = fresh();
    const keys = Array.from({ length: 23 }, (_, i) => `${p}/in/k${String(i).padStart(3, '0')}`);
    await Promise.all(keys.map((key, i) => b().put(key, pattern(i), i)));
    await b().put(`${p}/inside-not`, pattern(1), 1); // shares the string prefix minus the slash
    await b().put(`${p}/other/k000`, pattern(1), 1);

    const seen: { key: string; size: number }[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await b().list(`${p}/in/`, cursor, { limit: 5 });
      expect(page.entries.length).toBeLessThanOrEqual(5);
      seen.push(...page.entries.map(({ key, size }) => ({ key, size })));
      for (const e of page.entries) expect(e.lastModified).toBeInstanceOf(Date);
      cursor = page.cursor;
    } while (cursor !== undefined && ++pages < 50);
    expect(seen.map((e) => e.key)).toEqual(keys);
    expect(seen.map((e) => e.size)).toEqual(keys.map((_, i) => i));
  });

  it('lists nothing, without a cursor, for a prefix with no keys', async () => {
    const page = await b().list(`${fresh()}/nothing/`);
    expect(page).toEqual({ entries: [], cursor: undefined });
  });

  it.skipIf(quirks.listOrderAcrossDepths)('orders keys of mixed depth and script by UTF-8 bytes', async () => {
    const p = fresh();
    const names = ['a', 'a-b', 'a/b', 'a/b/c', 'ab', 'é', 'z', '\u{1F600}', '\uFFFD', 'A', '0'];
    await Promise.all(names.map((n) => b().put(`${p}/${n}`, pattern(1), 1)));
    const expected = names.map((n) => `${p}/${n}`).sort(byUtf8);
    expect(await listAll(b(), `${p}/`, 3)).toEqual(expected);
  });
}

function defineWriteCases(b: () => Backend, fresh: () => string, options: ContractOptions) {
  const largeBytes = options.largeBytes ?? 8 * 1024 * 1024;
  it(`streams a large put (${largeBytes} bytes) of known length and reads ranges of it`, async () => {
    const key = `${fresh()}/large`;
    const data = pattern(largeBytes, 6);
    await b().put(key, chunked(data, [1 << 20, 12345, 3]), largeBytes);
    expect((await b().head(key)).size).toBe(largeBytes);
    expectSameBytes((await getBytes(b(), key)).bytes, data);
    const mid = Math.floor(largeBytes / 2) - 1000;
    expectSameBytes((await getBytes(b(), key, { offset: mid, length: 70_000 })).bytes, data.subarray(mid, mid + 70_000));
  }, 60_000);

  it('round-trips keys with spaces, unicode, slashes and URL-special characters', async () => {
    const p = fresh();
    const names = [
      'with space',
      'ü/ñ/日本語',
      'emoji 😀 end',
      'a+b=c&d?e#f',
      '100%25 sure',
      "tilde~star*(paren)!quote'",
      'deep/a/b/c/d/e',
      'semi;colon,comma:colon@at$',
    ];
    for (const [i, name] of names.entries()) {
      const key = `${p}/${name}`;
      await b().put(key, pattern(10 + i, i), 10 + i);
      expect((await getBytes(b(), key)).bytes).toEqual(pattern(10 + i, i));
      expect((await b().head(key)).size).toBe(10 + i);
    }
    expect((await listAll(b(), `${p}/`)).sort()).toEqual(names.map((n) => `${p}/${n}`).sort());
    for (const name of names) await b().delete(`${p}/${name}`);
    expect(await listAll(b(), `${p}/`)).toEqual([]);
  });

  it('a BYOB reader fills one buffer of its own, again and again, with the whole body or a range', async () => {
    const key = `${fresh()}/byob`;
    const data = pattern(700_000, 12);
    await b().put(key, data, data.length);
    for (const range of [undefined, { offset: 12_345, length: 300_001 }]) {
      const want = range ? data.subarray(range.offset, range.offset + range.length) : data;
      const { body } = await b().get(key, range);
      let reader: ReadableStreamBYOBReader;
      try {
        reader = body.getReader({ mode: 'byob' });
      } catch {
        await body.cancel();
        continue; // a backend whose bodies are not byte streams: readers fall back to copying
      }
      let buffer = new ArrayBuffer(65_536 + 8);
      let at = 0;
      for (;;) {
        // workerd's readers can ask for the buffer filled (readAtLeast), as the engine does.
        const ask = (reader as { readAtLeast?: (n: number, v: Uint8Array) => Promise<ReadableStreamReadResult<Uint8Array>> }).readAtLeast;
        // A partial view, past the buffer's start, as a reader filling a framed block asks.
        const view = new Uint8Array(buffer, 8, Math.min(65_536, want.length - at) || 1);
        const r = typeof ask === 'function' ? await ask.call(reader, Math.min(view.length, want.length - at) || 1, view) : await reader.read(view);
        if (r.value) buffer = r.value.buffer as ArrayBuffer;
        if (r.value && r.value.length) {
          expect(Buffer.compare(r.value, want.subarray(at, at + r.value.length)), `at ${at}`).toBe(0);
          at += r.value.length;
        }
        if (r.done) break;
      }
      expect(at).toBe(want.length);
    }
  });

  it('takes a ChunkSource that reuses its buffer: each chunk is consumed before the next read', async () => {
    const key = `${fresh()}/reused`;
    const data = pattern(3 * 1024 * 1024 + 17, 9);
    await b().put(key, reusingSource(data, 256 * 1024), data.byteLength);
    expectSameBytes((await getBytes(b(), key)).bytes, data);
  });

  it('a ChunkSource of the wrong length is Corrupt; a broken one fails with its own error', async () => {
    const p = fresh();
    await expectKind(b().put(`${p}/src-long`, reusingSource(pattern(1001), 500), 1000), 'Corrupt', b().id);
    await expectKind(b().put(`${p}/src-short`, reusingSource(pattern(999), 500), 1000), 'Corrupt', b().id);
    const broken = reusingSource(pattern(5000), 1000, 3);
    await expect(b().put(`${p}/src-broken`, broken, 5000)).rejects.toThrow('source broke');
  });

  it('rejects a body whose length differs from the declared one as Corrupt', async () => {
    const p = fresh();
    await expectKind(b().put(`${p}/bytes-long`, pattern(11), 10), 'Corrupt', b().id);
    await expectKind(b().put(`${p}/bytes-short`, pattern(9), 10), 'Corrupt', b().id);
    await expectKind(b().put(`${p}/stream-long`, chunked(pattern(1001), [500]), 1000), 'Corrupt', b().id);
    await expectKind(b().put(`${p}/stream-short`, chunked(pattern(999), [500]), 1000), 'Corrupt', b().id);
  });

  it.skipIf(options.quirks?.partialWritesVisible)('leaves nothing new visible after a put of the wrong length', async () => {
    const p = fresh();
    await b().put(`${p}/kept`, pattern(1000, 7), 1000);
    await expectKind(b().put(`${p}/kept`, chunked(pattern(999), [500]), 1000), 'Corrupt');
    await expectKind(b().put(`${p}/new`, chunked(pattern(1001), [500]), 1000), 'Corrupt');
    expect((await getBytes(b(), `${p}/kept`)).bytes).toEqual(pattern(1000, 7));
    await expectKind(b().head(`${p}/new`), 'NotFound');
  });
}
