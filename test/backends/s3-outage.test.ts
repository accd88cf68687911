// The S3 backend facing a real outage: its s3rver process is stopped (connections refused),
// frozen with SIGSTOP (connections accepted, never answered), then brought back on the same port
// with the same data. Failures must be reported at once, with one attempt each (aws4fetch's
// default of 10 retries would hide the outage), and the backend must recover by itself.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { S3Backend } from '../../backends/s3.ts';
import { expectKind, getBytes, pattern } from './contract.ts';
import { S3rverProcess, s3rverBackend } from './s3rver-harness.ts';

describe('S3Backend when its server goes away', () => {
  const server = new S3rverProcess();
  let backend: S3Backend;
  const attempts: string[] = [];

  beforeAll(async () => {
    await server.start();
    backend = s3rverBackend(server, {
      id: 's3-outage',
      timeoutMs: 1500,
      retryBaseMs: 1,
      fetch: (req) => (attempts.push(`${req.method} ${new URL(req.url).pathname}`), fetch(req)),
    });
    await backend.put('o/kept', pattern(4096), 4096);
  });
  afterAll(() => server.dispose());

  it('reports every operation as Unavailable after one attempt while the server is down', async () => {
    await server.stop();
    attempts.length = 0;
    await expectKind(backend.get('o/kept'), 'Unavailable', 's3-outage');
    await expectKind(backend.get('o/kept', { offset: 10, length: 10 }), 'Unavailable');
    await expectKind(backend.head('o/kept'), 'Unavailable');
    await expectKind(backend.put('o/new', pattern(10), 10), 'Unavailable');
    await expectKind(backend.put('o/new', new Blob([pattern(10)]).stream(), 10), 'Unavailable');
    await expectKind(backend.delete('o/kept'), 'Unavailable');
    await expectKind(backend.list('o/'), 'Unavailable');
    expect(attempts).toEqual(['GET /b/o/kept', 'GET /b/o/kept', 'HEAD /b/o/kept', 'PUT /b/o/new', 'PUT /b/o/new', 'DELETE /b/o/kept', 'GET /b']);
  });

  it('serves the same blobs again once the server is back on its port', async () => {
    await server.start();
    expect((await getBytes(backend, 'o/kept')).bytes).toEqual(pattern(4096));
    await backend.put('o/after', pattern(5), 5);
    expect((await backend.list('o/')).entries.map((e) => e.key)).toEqual(['o/after', 'o/kept']);
  });

  it('reports a frozen server as Timeout, once, and recovers when it thaws', async () => {
    server.pause();
    attempts.length = 0;
    try {
      await expectKind(backend.head('o/kept'), 'Timeout', 's3-outage');
      expect(attempts).toHaveLength(1);
    } finally {
      server.resume();
    }
    expect((await backend.head('o/kept')).size).toBe(4096);
  });
});
