// The S3 backend's own retry and timeout policy (s3-http.ts), driven by a scripted fetch and by
// raw loopback sockets that misbehave on purpose. No clocks are read: retries are counted, and
// timeouts are told apart from other failures by their kind.

import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { S3Backend, type S3BackendOptions } from '../../backends/s3.ts';
import { readAll } from '../../backends/streams.ts';
import { statusKind } from '../../backends/s3-http.ts';
import { expectKind, pattern } from './contract.ts';
import { OFFLINE_S3 } from './helpers.ts';

const s3Error = (status: number, code: string) =>
  new Response(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>scripted</Message></Error>`, { status });

/** A backend whose fetch answers from `script` in turn (the last entry repeats). */
function scripted(script: (() => Response | Promise<Response>)[], extra: Partial<S3BackendOptions> = {}) {
  const calls: string[] = [];
  const backend = new S3Backend({
    ...OFFLINE_S3,
    id: 'scripted',
    retries: 2,
    retryBaseMs: 1,
    fetch: async (req) => {
      calls.push(req.method);
      return script[Math.min(calls.length, script.length) - 1]();
    },
    ...extra,
  });
  return { backend, calls };
}

describe('S3Backend retry policy', () => {
  it('retries SlowDown and succeeds within its budget', async () => {
    const ok = () => new Response(pattern(4), { status: 200, headers: { 'content-length': '4' } });
    const { backend, calls } = scripted([() => s3Error(503, 'SlowDown'), () => s3Error(503, 'SlowDown'), ok]);
    expect(await readAll((await backend.get('k')).body)).toEqual(pattern(4));
    expect(calls).toEqual(['GET', 'GET', 'GET']);
  });

  it('gives up after 1 + retries attempts: Throttled for 503, Unavailable for 500', async () => {
    const throttled = scripted([() => s3Error(503, 'SlowDown')]);
    await expectKind(throttled.backend.head('k'), 'Throttled', 'scripted');
    expect(throttled.calls).toHaveLength(3);
    const broken = scripted([() => s3Error(500, 'InternalError')]);
    await expectKind(broken.backend.put('k', pattern(3), 3), 'Unavailable');
    expect(broken.calls).toHaveLength(3);
    const never = scripted([() => s3Error(500, 'InternalError')], { retries: 0 });
    await expectKind(never.backend.delete('k'), 'Unavailable');
    expect(never.calls).toHaveLength(1);
  });

  it('never retries a streamed put (its body cannot be sent twice)', async () => {
    const { backend, calls } = scripted([() => s3Error(503, 'SlowDown')]);
    await expectKind(backend.put('k', new Blob([pattern(8)]).stream(), 8), 'Throttled');
    expect(calls).toEqual(['PUT']);
  });

  it('does not retry client errors or network failures', async () => {
    const denied = scripted([() => s3Error(403, 'AccessDenied')]);
    await expectKind(denied.backend.get('k'), 'Unavailable');
    expect(denied.calls).toHaveLength(1);
    const refused = scripted([() => Promise.reject(new TypeError('fetch failed'))]);
    await expectKind(refused.backend.list('p/'), 'Unavailable');
    expect(refused.calls).toHaveLength(1);
  });

  it('maps statuses and S3 codes to kinds', () => {
    expect(statusKind(404, 'NoSuchKey')).toBe('NotFound');
    expect(statusKind(404, '')).toBe('NotFound');
    expect(statusKind(404, 'NoSuchBucket')).toBe('Unavailable');
    expect(statusKind(412, 'PreconditionFailed')).toBe('PreconditionFailed');
    expect(statusKind(416, 'InvalidRange')).toBe('Corrupt');
    expect(statusKind(429, '')).toBe('Throttled');
    expect(statusKind(503, 'SlowDown')).toBe('Throttled');
    expect(statusKind(400, 'RequestTimeout')).toBe('Timeout');
    expect(statusKind(500, 'InternalError')).toBe('Unavailable');
    expect(statusKind(403, 'SignatureDoesNotMatch')).toBe('Unavailable');
  });
});

describe('S3Backend against misbehaving sockets', () => {
  let server: Server | undefined;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
  });

  /** A loopback TCP server running `onRequest` for each connection's first bytes. */
  async function rawServer(onRequest: (socket: Socket) => void): Promise<S3Backend> {
    server = createServer((socket) => {
      sockets.push(socket);
      socket.once('data', () => onRequest(socket));
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    return new S3Backend({
      ...OFFLINE_S3,
      id: 'raw',
      endpoint: `http://127.0.0.1:${port}`,
      timeoutMs: 300,
      retries: 0,
    });
  }
  const head = (len: number) => `HTTP/1.1 200 OK\r\nContent-Length: ${len}\r\nLast-Modified: Wed, 01 Jan 2025 00:00:00 GMT\r\n\r\n`;

  it('times out a server that accepts and never answers', async () => {
    const backend = await rawServer(() => {});
    await expectKind(backend.get('k'), 'Timeout', 'raw');
  });

  it('times out a body that stalls part-way, as a body error', async () => {
    const backend = await rawServer((s) => s.write(head(1000) + 'x'.repeat(10)));
    const { body, size } = await backend.get('k');
    expect(size).toBe(1000);
    await expectKind(readAll(body), 'Timeout', 'raw');
  });

  it("ends a read the caller aborts with the caller's reason, not a backend failure", async () => {
    const backend = await rawServer((s) => s.write(head(1000) + 'x'.repeat(10)));
    const caller = new AbortController();
    const { body } = await backend.get('k', undefined, { signal: caller.signal });
    const reader = body.getReader();
    expect((await reader.read()).value?.byteLength).toBe(10);
    const stop = new Error('client went away');
    caller.abort(stop);
    await expect(reader.read()).rejects.toBe(stop);
    await expect(backend.get('k', undefined, { signal: caller.signal })).rejects.toBe(stop);
  });

  it('reports a connection cut part-way through a body as Unavailable', async () => {
    const backend = await rawServer((s) => s.end(head(1000) + 'x'.repeat(10)));
    const { body } = await backend.get('k');
    await expectKind(readAll(body), 'Unavailable', 'raw');
  });

  it('reports a reset connection as Unavailable', async () => {
    const backend = await rawServer((s) => s.resetAndDestroy());
    await expectKind(backend.head('k'), 'Unavailable', 'raw');
  });
});

describe('S3Backend timeout: no progress, not the whole transfer (a driven clock)', () => {
  afterEach(() => vi.useRealTimers());

  /** A body of `gaps.length` bytes, one after each gap (ms); `Infinity`: it stalls there. */
  const trickle = (gaps: number[]) => {
    let i = 0;
    return new ReadableStream<Uint8Array>({
      async pull(c) {
        if (i === gaps.length) return c.close();
        const gap = gaps[i++]!;
        await new Promise((r) => (Number.isFinite(gap) ? setTimeout(r, gap) : undefined));
        c.enqueue(pattern(1));
      },
    });
  };
  /**
   * A server that reads the whole upload, then answers 200, and stops when the request is aborted;
   * `reading` resolves when the upload reaches it (signing is real async work: the clock is driven
   * only from there).
   */
  const backend = () => {
    let reached!: () => void;
    const reading = new Promise<void>((r) => (reached = r));
    const fetch = (req: Request) =>
      new Promise<Response>((resolve, reject) => {
        reached();
        req.signal.addEventListener('abort', () => reject(req.signal.reason), { once: true });
        readAll(req.body!).then(() => resolve(new Response(null, { status: 200 })), reject);
      });
    const s3 = new S3Backend({
      ...OFFLINE_S3,
      id: 'clock',
      timeoutMs: 300,
      retries: 0,
      fetch,
    });
    return { s3, reading };
  };

  it('an upload that keeps moving outlasts the timeout many times over', async () => {
    vi.useFakeTimers();
    const gaps = Array.from({ length: 12 }, () => 250); // 3 s in all, never 300 ms without a byte
    const { s3, reading } = backend();
    const put = s3.put('k', trickle(gaps), gaps.length);
    const settled = put.then(
      () => 'stored',
      (e: unknown) => e,
    );
    await reading;
    await vi.advanceTimersByTimeAsync(4000);
    expect(await settled).toBe('stored');
  });

  it('an upload that stops moving is a Timeout one window after its last byte', async () => {
    vi.useFakeTimers();
    const { s3, reading } = backend();
    const put = s3.put('k', trickle([250, 250, Infinity]), 3);
    let outcome: unknown = 'pending';
    put.then(
      () => (outcome = 'stored'),
      (e: unknown) => (outcome = e),
    );
    await reading;
    await vi.advanceTimersByTimeAsync(500 + 250); // the second byte at 500 ms; quiet since
    expect(outcome).toBe('pending');
    await vi.advanceTimersByTimeAsync(100);
    await expectKind(put, 'Timeout', 'clock');
  });
});
