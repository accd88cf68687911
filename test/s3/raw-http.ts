/**
 * Raw HTTP for what the SDK cannot send: node:http with the request path passed verbatim (fetch
 * would normalise it), any Host header, chunked bodies; and a bare socket for bytes node:http
 * refuses (control characters in the path, a Content-Length without a body).
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { Readable } from 'node:stream';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  text: string;
}

export interface RawRequest {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  /** A Readable is sent with Transfer-Encoding: chunked (no Content-Length). */
  body?: string | Uint8Array | Readable;
}

export function raw(url: URL, req: RawRequest): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'accept-encoding': 'identity', ...req.headers };
    const r = http.request({ host: url.hostname, port: url.port, method: req.method ?? 'GET', path: req.path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text: body.toString('utf8') });
      });
      res.on('error', reject);
    });
    r.on('error', reject);
    if (req.body instanceof Readable) req.body.pipe(r);
    else r.end(req.body);
  });
}

/** Sends `head` (request line + headers, CRLF-terminated) and optional bytes on a bare socket;
 *  resolves with the status and the raw response once its declared body is in (or on close). */
/**
 * The bucket a raw suite works in, created once the worker is up. A 5xx answer is printed (with
 * the gateway's error document) and the call made once more: CI once saw this first request of a
 * fresh worker answered 500 under full-suite load (Node 22, not reproduced alone), and the suites
 * test hostile input, not bucket creation (test/s3/conformance-* do). A second failure fails the suite.
 */
export async function createRawBucket(url: URL, path: string): Promise<RawResponse> {
  const first = await raw(url, { method: 'PUT', path });
  if (first.status < 500) return first;
  console.warn(`raw suite: PUT ${path} answered ${first.status} on a fresh worker; trying once more. Its answer:\n${first.text}`);
  const second = await raw(url, { method: 'PUT', path });
  // The first call may have made the bucket before it failed: then it is there, as asked.
  return second.status === 409 && second.text.includes('BucketAlreadyOwnedByYou') ? { ...second, status: 200 } : second;
}

export function rawSocket(url: URL, head: string, body: Uint8Array = new Uint8Array()): Promise<{ status: number; response: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname, () => {
      socket.write(Buffer.from(head, 'latin1'));
      if (body.length) socket.write(body);
    });
    let data = '';
    const done = () => {
      socket.destroy();
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0), response: data });
    };
    socket.on('data', (c: Buffer) => {
      data += c.toString('latin1');
      const end = data.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: *(\d+)/i.exec(data.slice(0, end));
      if (end >= 0 && length && data.length - end - 4 >= Number(length[1])) done();
      if (end >= 0 && /\r\ntransfer-encoding: *chunked/i.test(data.slice(0, end)) && data.endsWith('0\r\n\r\n')) done();
    });
    socket.on('end', done);
    socket.on('error', reject);
  });
}

/** The fields of an S3 error document. */
export function errorFields(text: string): Record<string, string> {
  const inner = /<Error>([\s\S]*)<\/Error>/.exec(text)?.[1] ?? '';
  return Object.fromEntries([...inner.matchAll(/<(\w+)>([^<]*)<\/\1>/g)].map((m) => [m[1], m[2]]));
}

export const md5Base64 = (body: string | Uint8Array) => createHash('md5').update(body).digest('base64');
