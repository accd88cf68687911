/**
 * A proxy in front of the gateway that refuses chosen requests once each with 503 SlowDown, as a
 * busy S3 endpoint may, and passes everything else through unchanged (raw target, headers, body
 * streamed both ways). Clients must then retry, and a retry is signed anew: the case that showed
 * aws-sdk-go v1 signing the `Expect` header it had added on the first attempt.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { forwardable } from '../../dev/front.ts';

export interface RefusingProxy {
  url: URL;
  /** `METHOD target` of each request refused. */
  refused: string[];
  close(): Promise<void>;
}

const SLOW_DOWN = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>';

/** Starts the proxy on a free loopback port; `refuse` picks requests to refuse (each at most once). */
export async function startRefusingProxy(upstream: URL, refuse: (method: string, target: string) => boolean): Promise<RefusingProxy> {
  const refused: string[] = [];
  const server = http.createServer((req, res) => {
    const target = req.url ?? '/';
    const label = `${req.method} ${target}`;
    if (refuse(req.method ?? '', target) && !refused.includes(label)) {
      refused.push(label);
      req.resume(); // the body is not wanted; reading it keeps the connection usable
      res.writeHead(503, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(SLOW_DOWN) });
      res.end(SLOW_DOWN);
      return;
    }
    const up = http.request({
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: target,
      headers: forwardable(req.rawHeaders),
      setHost: false,
    });
    up.on('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, forwardable(answer.rawHeaders, ['transfer-encoding']));
      answer.pipe(res);
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
    refused,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
