/**
 * The Node front of the local gateway (dev/front.ts) against a stand-in upstream (a plain Node
 * server that records what reaches it): what passes through unchanged (raw request target, Host,
 * body, status, response headers), what the front answers itself (`100 Continue` before the body,
 * `/cdn-cgi/` refused, 503 when workerd is not there), how long it keeps an idle connection to
 * workerd, and `npm start`'s option parsing.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFront, type RunningFront } from '../../dev/front.ts';
import { isRefusedDevPath } from '../../dev/guard.ts';
import { DEFAULT_STATE_DIR } from '../../dev/paths.ts';
import { parseStartOptions } from '../../dev/start-options.ts';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

describe('the front', () => {
  let upstream: http.Server;
  let front: RunningFront;
  const seen: Seen[] = [];

  beforeAll(async () => {
    upstream = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
        const text = `<ok>${Buffer.concat(chunks).length}</ok>`;
        res.writeHead(req.url === '/teapot' ? 418 : 200, {
          'x-amz-request-id': 'R1',
          etag: '"abc"',
          'content-type': 'application/xml',
          'content-length': text.length,
        });
        res.end(req.method === 'HEAD' ? undefined : text);
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const { port } = upstream.address() as AddressInfo;
    front = await startFront(0, ['127.0.0.1'], { upstream: new URL(`http://127.0.0.1:${port}`) });
  });
  afterAll(async () => {
    await front?.close();
    await new Promise((r) => upstream?.close(r));
  });

  /** A request on a bare socket: the head as given, the body only once `100 Continue` came. */
  function expectContinueExchange(head: string, body: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(front.port, '127.0.0.1', () => socket.write(head));
      let data = '';
      let sent = false;
      socket.on('data', (c: Buffer) => {
        data += c.toString('latin1');
        if (!sent && data.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
          sent = true;
          socket.write(body);
        }
        if (/<\/ok>$/.test(data)) {
          socket.destroy();
          resolve(data);
        }
      });
      socket.on('error', reject);
      socket.on('end', () => resolve(data));
    });
  }

  it('answers Expect: 100-continue before the body, then forwards the request without it', async () => {
    const head = 'PUT /bucket/key HTTP/1.1\r\nHost: example.test:8787\r\nExpect: 100-continue\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\n';
    const response = await expectContinueExchange(head, 'hello');
    expect(response).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
    expect(response).toMatch(/<ok>5<\/ok>$/);
    const last = seen[seen.length - 1]!;
    expect(last.body).toBe('hello');
    expect(last.headers.expect).toBeUndefined();
    expect(last.headers.host, 'Host is signed by SigV4: passed as sent').toBe('example.test:8787');
  });

  it.each(['200', '', 'hundred-continue'])('ignores Expect: %j as S3 does (no 417), and forwards the request without it', async (value) => {
    const res = await new Promise<http.IncomingMessage & { text: string }>((resolve, reject) => {
      const req = http.request(
        { port: front.port, host: '127.0.0.1', path: '/bucket/expect', method: 'PUT', headers: { expect: value, 'content-length': 3 } },
        (r) => {
          let text = '';
          r.on('data', (c) => (text += c));
          r.on('end', () => resolve(Object.assign(r, { text })));
        },
      );
      req.on('error', reject);
      req.end('bar');
    });
    expect([res.statusCode, res.text]).toEqual([200, '<ok>3</ok>']);
    expect(seen[seen.length - 1]).toMatchObject({ url: '/bucket/expect', body: 'bar' });
    expect(seen[seen.length - 1]!.headers.expect).toBeUndefined();
  });

  it('passes the request target byte for byte and the answer unchanged', async () => {
    const path = '/b/a//b%2Fc+d%20e?list-type=2&prefix=%0A&x=a+b';
    const res = await new Promise<http.IncomingMessage & { text: string }>((resolve, reject) => {
      const req = http.request(
        { port: front.port, host: '127.0.0.1', path, method: 'POST', headers: { 'x-amz-meta-a': 'é', 'content-type': 'text/plain' } },
        (r) => {
          let text = '';
          r.on('data', (c) => (text += c));
          r.on('end', () => resolve(Object.assign(r, { text })));
        },
      );
      req.on('error', reject);
      req.end('body!');
    });
    expect(seen[seen.length - 1]).toMatchObject({ method: 'POST', url: path, body: 'body!' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-amz-request-id']).toBe('R1');
    expect(res.headers.etag).toBe('"abc"');
    expect(res.text).toBe('<ok>5</ok>');
    const teapot = await fetch(`http://127.0.0.1:${front.port}/teapot`);
    expect(teapot.status).toBe(418);
  });

  it('answers on a kept-alive connection without a Keep-Alive header (s3cmd modify signs what a HEAD returned)', async () => {
    // Two requests on one socket: both answers come, neither carries Keep-Alive (Node's default
    // adds `Keep-Alive: timeout=65`), the connection stays open between them.
    const heads = await new Promise<string[]>((resolve, reject) => {
      const socket = net.connect(front.port, '127.0.0.1');
      let data = '';
      const request = (path: string) => socket.write(`HEAD ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      socket.on('data', (c: Buffer) => {
        data += c.toString('latin1');
        const answers = data.split('\r\n\r\n').filter(Boolean);
        if (answers.length === 1 && data.endsWith('\r\n\r\n')) request('/cdn-cgi/x');
        if (answers.length === 2) {
          socket.end();
          resolve(answers);
        }
      });
      socket.on('error', reject);
      request('/bucket/key');
    });
    expect(heads[0]).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(heads[1]).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/); // the front's own answer, on the same connection
    for (const head of heads) {
      expect(head).toMatch(/^Connection: keep-alive$/im);
      expect(head).not.toMatch(/^Keep-Alive:/im);
    }
  });

  it('refuses /cdn-cgi/ with an S3-shaped 403 and never forwards it', async () => {
    const count = seen.length;
    const res = await fetch(`http://127.0.0.1:${front.port}/cdn-cgi/handler/scheduled`);
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('<Code>AccessDenied</Code>');
    expect(seen.length).toBe(count);
  });

  it('answers 503 ServiceUnavailable when workerd does not answer', async () => {
    const lone = net.createServer();
    await new Promise<void>((r) => lone.listen(0, '127.0.0.1', r));
    const { port } = lone.address() as AddressInfo;
    await new Promise((r) => lone.close(r)); // nothing listens there now
    const orphan = await startFront(0, ['127.0.0.1'], { upstream: new URL(`http://127.0.0.1:${port}`) });
    try {
      const res = await fetch(`http://127.0.0.1:${orphan.port}/bucket`);
      expect(res.status).toBe(503);
      expect(await res.text()).toContain('<Code>ServiceUnavailable</Code>');
    } finally {
      await orphan.close();
    }
  });
});

describe("the front's connections to workerd", () => {
  it('opens one per request and closes it after the answer (never reused), asking for the address per request', async () => {
    // workerd closes pooled connections on its own terms; a request sent on one it had just
    // closed failed (ECONNRESET, socket hang up: a 503 to the client). This stand-in keeps
    // connections for a minute, so any close it sees before then comes from the front.
    const opened: net.Socket[] = [];
    const closed: net.Socket[] = [];
    const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
      req.resume();
      req.on('end', () => res.end('<ok/>'));
    });
    server.on('connection', (socket: net.Socket) => {
      opened.push(socket);
      socket.on('close', () => closed.push(socket));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    let asked = 0;
    const front = await startFront(0, ['127.0.0.1'], {
      upstream: async () => {
        asked++;
        return new URL(`http://127.0.0.1:${port}`);
      },
    });
    const get = async () => (await fetch(`http://127.0.0.1:${front.port}/bucket/key`)).text();
    const put = async () => (await fetch(`http://127.0.0.1:${front.port}/bucket/key`, { method: 'PUT', body: new Uint8Array(100_000) })).text();
    try {
      expect(await get()).toBe('<ok/>');
      expect(await put()).toBe('<ok/>');
      expect(await get()).toBe('<ok/>');
      await new Promise((r) => setTimeout(r, 200));
      expect({ opened: opened.length, closed: closed.length, asked }, 'back to back: a connection each, each closed').toEqual({
        opened: 3,
        closed: 3,
        asked: 3,
      });
    } finally {
      await front.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe("the front's check (isRefusedDevPath)", () => {
  it.each([
    ['/cdn-cgi/handler/scheduled', true],
    ['/cdn-cgi', true],
    ['/CDN-CGI/handler/scheduled', true],
    ['//cdn-cgi/handler/scheduled', true],
    ['/a/../cdn-cgi/handler/scheduled', true],
    ['/a/%2E%2E/cdn-cgi/handler/scheduled', true],
    ['/%63dn-cgi/handler/scheduled', true],
    ['/\\cdn-cgi/handler/scheduled', true],
    ['http://localhost/cdn-cgi/handler/scheduled', true],
    ['/cdn-cgi-bucket/key', false],
    ['/bucket/cdn-cgi/handler/scheduled', false],
    ['/bucket/key?x=/cdn-cgi/', false],
    ['/', false],
  ])('%s -> %s', (target, refused) => {
    expect(isRefusedDevPath(target)).toBe(refused);
  });
});

describe('npm start options', () => {
  it('PORT sets the port, --port wins over it, defaults otherwise', () => {
    expect(parseStartOptions([], {})).toEqual({ port: 8787, stateDir: DEFAULT_STATE_DIR, cronSeconds: 60, watch: true, lifecycleDaySeconds: null });
    expect(parseStartOptions([], { PORT: '9000' }).port).toBe(9000);
    expect(parseStartOptions([], { SHARDGATE_LIFECYCLE_DAY_SECONDS: '10' }).lifecycleDaySeconds).toBe(10);
    expect(() => parseStartOptions([], { SHARDGATE_LIFECYCLE_DAY_SECONDS: 'ten' })).toThrow(/SHARDGATE_LIFECYCLE_DAY_SECONDS/);
    expect(parseStartOptions(['--port', '9001'], { PORT: '9000' }).port).toBe(9001);
    expect(parseStartOptions(['--port=9002', '--cron-seconds', '0', '--no-watch'], {})).toMatchObject({ port: 9002, cronSeconds: 0, watch: false });
    expect(parseStartOptions([], { SHARDGATE_CRON_SECONDS: '5' }).cronSeconds).toBe(5);
    expect(parseStartOptions(['--persist-to', '/tmp/x'], {}).stateDir).toBe('/tmp/x');
  });

  it('a bad value or an unknown flag is an error that says what is expected', () => {
    expect(() => parseStartOptions([], { PORT: 'eighty' })).toThrow(/port .* must be an integer/);
    expect(() => parseStartOptions(['--port', '70000'], {})).toThrow(/from 0 to 65535/);
    expect(() => parseStartOptions(['--port'], {})).toThrow(/needs a value/);
    expect(() => parseStartOptions(['--prot', '1'], {})).toThrow(/unknown argument '--prot'/);
  });
});
