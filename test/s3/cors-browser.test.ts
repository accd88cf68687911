/**
 * CORS as a browser sees it: headless Chromium (Debian's /usr/bin/chromium, driven by
 * playwright-core) opens a page on another origin, which PUTs and GETs an object through
 * presigned URLs of the product (the real gate, the engine, the catalog Durable Object). The
 * bucket's rules (PutBucketCors) allow that page's origin: Chromium's preflight for the PUT must
 * pass, and the page must be able to read the answers and the exposed ETag. A page on an origin
 * the rules do not name must be refused by the browser.
 * Chromium runs with a fresh profile and the flags this machine needs (no sandbox as root, no
 * background networking: nothing may leave the machine). .ci/run installs it (apt-get install
 * chromium); needs('chromium') skips this file without it.
 */
import { CreateBucketCommand, GetObjectCommand, PutBucketCorsCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserContext } from 'playwright-core';
import { launchChromium, type Chromium } from '../support/chromium.ts';
import { needs } from '../support/prerequisites.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3Client, startTestWorker, type TestWorker } from './harness.ts';

const BUCKET = 'cors-web';

describe('CORS in Chromium: a page on another origin uses presigned URLs', { timeout: 120_000, ...needs('chromium') }, () => {
  let worker: TestWorker;
  let pages: http.Server;
  let pagePort: number;
  let chrome: Chromium | undefined;
  let browser: BrowserContext;

  beforeAll(async () => {
    worker = await startTestWorker('engine');
    pages = http.createServer((_, res) => res.end('<!doctype html><title>shardgate cors test</title><p>page</p>'));
    await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
    pagePort = (pages.address() as AddressInfo).port;
    const client = s3Client(worker.url);
    await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    await client.send(
      new PutBucketCorsCommand({
        Bucket: BUCKET,
        CORSConfiguration: {
          CORSRules: [
            {
              AllowedOrigins: [`http://localhost:${pagePort}`],
              AllowedMethods: ['GET', 'PUT'],
              AllowedHeaders: ['*'],
              ExposeHeaders: ['ETag'],
              MaxAgeSeconds: 60,
            },
          ],
        },
      }),
    );
    chrome = await launchChromium();
    browser = chrome.browser;
  }, 120_000);

  afterAll(async () => {
    await chrome?.close();
    await new Promise((r) => (pages ? pages.close(r) : r(undefined)));
    await worker?.dispose();
  }, 60_000);

  async function presigned(key: string) {
    const client = s3Client(worker.url, { requestChecksumCalculation: 'WHEN_REQUIRED' });
    return {
      put: await getSignedUrl(client, new PutObjectCommand({ Bucket: BUCKET, Key: key }), { expiresIn: 300 }),
      get: await getSignedUrl(client, new GetObjectCommand({ Bucket: BUCKET, Key: key }), { expiresIn: 300 }),
    };
  }

  /** Runs a PUT then a GET with fetch() inside a page served from `origin`. */
  async function fromPage(origin: string, urls: { put: string; get: string }, body: string) {
    const page = await browser.newPage();
    try {
      await page.goto(`${origin}/`);
      return await page.evaluate(
        async ({ urls, body }) => {
          const out: Record<string, unknown> = {};
          try {
            const put = await fetch(urls.put, { method: 'PUT', body, headers: { 'content-type': 'text/plain' } });
            Object.assign(out, { putStatus: put.status, putEtag: put.headers.get('etag') });
            const get = await fetch(urls.get);
            Object.assign(out, { getStatus: get.status, getBody: await get.text(), getEtag: get.headers.get('etag') });
          } catch (err) {
            out.error = String(err);
          }
          return out;
        },
        { urls, body },
      );
    } finally {
      await page.close();
    }
  }

  it('an allowed origin PUTs (after a preflight) and GETs, and reads the exposed ETag', async () => {
    const urls = await presigned('from-a-page.txt');
    const r = await fromPage(`http://localhost:${pagePort}`, urls, 'written by a page');
    expect(r.error).toBeUndefined();
    expect(r).toMatchObject({ putStatus: 200, getStatus: 200, getBody: 'written by a page' });
    expect(r.putEtag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(r.getEtag).toBe(r.putEtag);
    const stored = await s3Client(worker.url).send(new GetObjectCommand({ Bucket: BUCKET, Key: 'from-a-page.txt' }));
    expect(await stored.Body!.transformToString()).toBe('written by a page');
  });

  it('an origin the rules do not name is refused by the browser, and stores nothing', async () => {
    const urls = await presigned('from-elsewhere.txt');
    const r = await fromPage(`http://127.0.0.1:${pagePort}`, urls, 'should not arrive');
    expect(r.error).toMatch(/TypeError/);
    expect(r.putStatus).toBeUndefined();
    await expect(s3Client(worker.url).send(new GetObjectCommand({ Bucket: BUCKET, Key: 'from-elsewhere.txt' }))).rejects.toMatchObject({ name: 'NoSuchKey' });
  });
});
