/**
 * A backend double that enforces S3 Object Lock retention, in front of an s3rver (which has no
 * object lock): `PUT <key>?retention` (with a Content-MD5 that matches, as S3 requires; COMPLIANCE
 * only) records the key's retain-until date, refusing a shorter one; a DELETE before that date
 * answers 403 AccessDenied, so the retained bytes stay. (AWS, whose lock buckets are versioned,
 * answers a DELETE by key with a delete marker and keeps the retained version; a DELETE of that
 * version is what it refuses. s3rver has no versions, so refusing the DELETE is how the double
 * keeps the bytes. A PUT over the key passes, as it makes a new version on AWS.) Everything else
 * passes through to s3rver unchanged (raw target and headers, so s3rver checks the signatures the
 * gateway made). The retention requests themselves are not signature-checked.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { forwardable } from '../../dev/front.ts';

export interface RetentionDouble {
  url: URL;
  /** Path (`/bucket/key`) -> retain-until date, as set. */
  retained: Map<string, Date>;
  /** `METHOD path` of each request refused for a retention. */
  refused: string[];
  close(): Promise<void>;
}

const error = (code: string, message: string) => `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;

export async function startRetentionDouble(upstream: URL): Promise<RetentionDouble> {
  const retained = new Map<string, Date>();
  const refused: string[] = [];
  const answer = (res: http.ServerResponse, status: number, body = '') => {
    res.writeHead(status, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  const server = http.createServer((req, res) => {
    const target = new URL(req.url ?? '/', 'http://double');
    const path = target.pathname;
    if (req.method === 'PUT' && target.searchParams.has('retention')) {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        if (req.headers['content-md5'] !== createHash('md5').update(body).digest('base64'))
          return answer(res, 400, error('InvalidRequest', 'Content-MD5 required'));
        const text = body.toString('utf8');
        const until = new Date(/<RetainUntilDate>([^<]+)<\/RetainUntilDate>/.exec(text)?.[1] ?? 'x');
        if (!/<Mode>COMPLIANCE<\/Mode>/.test(text) || Number.isNaN(until.getTime())) return answer(res, 400, error('MalformedXML', 'bad retention'));
        const current = retained.get(path);
        if (current && until < current) return answer(res, 403, error('AccessDenied', 'retention can only be extended'));
        retained.set(path, until);
        answer(res, 200);
      });
      return;
    }
    const until = retained.get(path);
    if (req.method === 'DELETE' && until && until.getTime() > Date.now()) {
      refused.push(`${req.method} ${path}`);
      req.resume();
      return answer(res, 403, error('AccessDenied', 'Access Denied because object protected by object lock.'));
    }
    const up = http.request({
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers: forwardable(req.rawHeaders),
      setHost: false,
    });
    up.on('response', (a) => {
      res.writeHead(a.statusCode ?? 502, forwardable(a.rawHeaders, ['transfer-encoding']));
      a.pipe(res);
    });
    up.on('error', () => res.destroy());
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}`),
    retained,
    refused,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
