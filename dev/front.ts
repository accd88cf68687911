/**
 * The local gateway's front door: a small Node HTTP server on the public port that streams every
 * request to workerd (wrangler's dev server on an internal loopback port) and the answer back.
 * It exists for two things workerd and wrangler do differently from Cloudflare's edge:
 * - `Expect: 100-continue` (RFC 9110 §10.1.1): workerd never answers it, so boto3 and awscli wait
 *   1 s for their timeout before every PutObject/UploadPart body, and the JS SDK v3 about 6 s
 *   before every body of 2 MiB or more. The edge answers it; so does this front, at once, as soon
 *   as the request head has arrived (`answerExpectContinue`).
 * - `/cdn-cgi/` paths: wrangler answers some of them itself, before the Worker runs
 *   (`/cdn-cgi/handler/scheduled` runs the cron for anyone who can reach the port). The edge
 *   keeps that path for itself too; this front refuses it (`isRefusedDevPath`, guard.ts).
 * Everything else passes through unchanged: the request target exactly as received (S3 keys and
 * SigV4 need the raw path: `//`, `%2F`, `+` are all significant), every header but the hop-by-hop
 * ones (Host included: SigV4 signs it), the body streamed both ways, status and headers as
 * workerd sent them. Nothing is buffered, decoded or re-encoded.
 * Two more things it does that workerd does not: malformed framings (`malformedFraming`) are
 * answered 400 here, and a request the Worker answered before its body had all come (a refusal)
 * has both its connections closed after the answer, so stalled uploads never hold the front's
 * connections to workerd (at most 64 at once) and everyone else keeps being answered.
 * Known gaps: HTTP/1.1 only (no h2, no TLS); HTTP trailers on the request (not S3's aws-chunked
 * trailers, which are body bytes) are not forwarded; a `cdn-cgi` bucket cannot be used
 * path-style (it cannot on Cloudflare either).
 */
import { isRefusedDevPath } from './guard.ts';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** Connection-scoped headers (RFC 9110 §7.6.1) that a proxy must not forward, plus Expect, which
 *  the front has answered. Transfer-Encoding / Content-Length stay: they frame the body. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'expect']);

export interface FrontOptions {
  /** Where workerd listens: requests go there (a function: asked per request, it may change on reload). */
  upstream: URL | (() => Promise<URL>);
  /** Called for a request the front answers itself or could not forward (for the console). */
  log?: (line: string) => void;
}

export interface RunningFront {
  /** The port the front listens on (the first listener's). */
  port: number;
  /** How many `Expect: 100-continue` requests the front has answered (tests check clients sent it). */
  readonly continued: number;
  close(): Promise<void>;
}

/** Minimal S3-shaped error document, so that S3 clients print something readable. */
function errorXml(code: string, message: string, resource: string): string {
  const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${esc(message)}</Message><Resource>${esc(resource)}</Resource><RequestId>front</RequestId></Error>`;
}

/**
 * `Connection: keep-alive` for a response on a connection that stays open. Said explicitly so that
 * Node does not add its own `Keep-Alive: timeout=65` (it does whenever the response names no
 * Connection): S3 never sends that hop-by-hop header, and s3cmd's `modify` copies the HEAD
 * response's headers into the CopyObject request it signs, Keep-Alive too, which then never
 * reaches the Worker: every `s3cmd modify` failed with SignatureDoesNotMatch.
 */
function keepAliveWithoutTimeout(res: http.ServerResponse): string[] {
  return res.shouldKeepAlive ? ['Connection', 'keep-alive'] : [];
}

function answer(res: http.ServerResponse, status: number, code: string, message: string, resource: string): void {
  if (res.headersSent) return void res.destroy();
  const body = errorXml(code, message, resource);
  res.writeHead(status, ['Content-Type', 'application/xml', 'Content-Length', String(Buffer.byteLength(body)), ...keepAliveWithoutTimeout(res)]);
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

/** rawHeaders without the hop-by-hop ones (and `alsoDrop`), in the flat [name, value, ...] form Node takes. */
export function forwardable(rawHeaders: string[], alsoDrop: string[] = []): string[] {
  const out: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    if (!HOP_BY_HOP.has(name) && !alsoDrop.includes(name)) out.push(rawHeaders[i]!, rawHeaders[i + 1]!);
  }
  return out;
}

/**
 * What the front answers with 400 itself rather than pass to workerd, which would answer a
 * plain-text 500 (or worse, read the request otherwise than the Worker sees it): a request
 * target that is not origin-form (`http://host/path`, `host:port`, `*`: the URL the Worker sees
 * and the Host SigV4 signs could then differ), no or more than one Host, a Host that is not a
 * plain host[:port] (`%`-encoded, userinfo, spaces), and a Transfer-Encoding other than exactly
 * `chunked` (RFC 9112 allows `gzip, chunked`; S3 does not, and workerd does not decode it).
 * Null when the framing is fine.
 */
export function malformedFraming(req: http.IncomingMessage): string | null {
  if (!(req.url ?? '').startsWith('/')) return 'the request target must be a path (origin-form), not an absolute URL or an authority';
  const hosts: string[] = [];
  const encodings: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    if (name === 'host') hosts.push(req.rawHeaders[i + 1]!);
    if (name === 'transfer-encoding') encodings.push(req.rawHeaders[i + 1]!);
  }
  if (hosts.length !== 1) return hosts.length ? 'more than one Host header' : 'no Host header';
  if (!/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/.test(hosts[0]!.trim())) return 'the Host header is not a host name or address with an optional port';
  if (encodings.length && encodings.join(',').trim().toLowerCase() !== 'chunked') return 'Transfer-Encoding other than chunked is not supported';
  return null;
}

/**
 * Connections to workerd are never reused: one per request, closed after its answer. workerd
 * closes pooled connections on its own terms (after 5 s idle, and under load sooner: four
 * concurrent 40 MiB multipart uploads and a download, repeated on 2 cores, had 10 requests in
 * four rounds sent on a connection workerd had just closed, each failing with read ECONNRESET or
 * socket hang up, a 503 to the client; every one on a reused connection, none on a fresh one),
 * and a request whose body has been streamed cannot be sent again. A loopback connect costs well
 * under a millisecond.
 */
export const UPSTREAM_MAX_SOCKETS = 64;

/** Streams one request to workerd and its answer back. */
async function forward(req: http.IncomingMessage, res: http.ServerResponse, options: FrontOptions, agent: http.Agent): Promise<void> {
  const target = req.url ?? '/';
  const to = typeof options.upstream === 'function' ? await options.upstream() : options.upstream;
  const upstream = http.request({
    host: to.hostname,
    port: to.port,
    method: req.method,
    path: target,
    headers: forwardable(req.rawHeaders),
    agent,
    setHost: false,
  });
  let answered = false;
  upstream.on('response', (up) => {
    answered = true;
    // Framing headers go: Node frames the body itself (Content-Length when workerd sent one).
    const headers = forwardable(up.rawHeaders, ['transfer-encoding']);
    // Answered before the whole request body came (a refusal): the rest is never read. The
    // connection to the client closes after the answer, and the one to workerd once the answer
    // is through, so a stalled upload holds neither the pool nor workerd.
    if (!req.complete) headers.push('Connection', 'close');
    else headers.push(...keepAliveWithoutTimeout(res));
    res.writeHead(up.statusCode ?? 502, up.statusMessage, headers);
    up.pipe(res);
    up.on('error', () => res.destroy());
    up.on('end', () => {
      if (!req.complete) {
        req.unpipe(upstream);
        upstream.destroy();
      }
    });
  });
  upstream.on('error', (err) => {
    if (answered) return void res.destroy();
    options.log?.(`front: ${req.method} ${target}: workerd did not answer (${err.message}${upstream.reusedSocket ? ', on a reused connection' : ''})`);
    answer(res, 503, 'ServiceUnavailable', `The local gateway (workerd) did not answer: ${err.message}`, target);
  });
  // A client that goes away mid-request or mid-response takes the upstream request with it.
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}

/**
 * Answers `Expect: 100-continue` as the edge does: the client may send its body now. Sent for
 * every such request, before the Worker has looked at it; a request the Worker then refuses is
 * answered with its error as usual, and the body it did not read is drained by the app.
 */
export function answerExpectContinue(res: http.ServerResponse): void {
  res.writeContinue();
}

/** Starts the front on `port` (0: any free port) at each of `hosts`. */
export async function startFront(port: number, hosts: string[], options: FrontOptions): Promise<RunningFront> {
  const agent = new http.Agent({ keepAlive: false, maxSockets: UPSTREAM_MAX_SOCKETS });
  let continued = 0;
  const handle = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const malformed = malformedFraming(req);
    if (malformed) {
      options.log?.(`front: refused ${req.method} ${req.url}: ${malformed}`);
      res.shouldKeepAlive = false;
      return answer(res, 400, 'InvalidRequest', `The request is malformed: ${malformed}.`, '/');
    }
    if (isRefusedDevPath(req.url ?? '')) {
      req.resume();
      options.log?.(`front: refused ${req.method} ${req.url} (a /cdn-cgi/ path)`);
      return answer(
        res,
        403,
        'AccessDenied',
        'Paths under /cdn-cgi/ belong to the platform, not to the S3 gateway: the local front refuses them (Cloudflare reserves them too).',
        req.url ?? '/',
      );
    }
    void forward(req, res, options, agent);
  };
  const servers: http.Server[] = [];
  let bound = port;
  try {
    for (const host of hosts) {
      // No limit on how long a request may take (Node's default cuts any request off after
      // 300 s: a multi-GiB upload takes longer); the head must still arrive within 60 s.
      const server = http.createServer({ keepAliveTimeout: 65_000, requestTimeout: 0, headersTimeout: 60_000 }, handle);
      server.on('checkContinue', (req, res) => {
        answerExpectContinue(res);
        continued++;
        handle(req, res);
      });
      // Any other Expect (`200`, empty, malformed): S3 ignores it and answers the request (ceph's
      // s3-tests pass on AWS with `Expect: 200`); Node alone would answer 417 Expectation Failed.
      server.on('checkExpectation', handle);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(bound, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      bound = (server.address() as AddressInfo).port; // the other hosts take the same port
      servers.push(server);
    }
  } catch (err) {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    throw err;
  }
  return {
    port: bound,
    get continued() {
      return continued;
    },
    close: async () => {
      await Promise.all(
        servers.map(
          (s) =>
            new Promise((r) => {
              s.close(r);
              s.closeAllConnections();
            }),
        ),
      );
      agent.destroy();
    },
  };
}
