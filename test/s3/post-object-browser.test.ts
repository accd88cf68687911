/**
 * Browser form uploads (POST Object) as browsers make them, against the product in workerd (the
 * real gates, the engine, the catalog Durable Object): forms made by boto3's
 * generate_presigned_post (Debian's python3-boto3: SigV2 by default for us-east-1, SigV4 with
 * signature_version s3v4) and by @aws-sdk/s3-presigned-post (SigV4), uploaded from headless
 * Chromium (Debian's /usr/bin/chromium, driven by playwright-core) on a page of another origin:
 * - with fetch() and FormData through the bucket's CORS rules (rule for POST, ETag and Location
 *   exposed): the page reads the answer; a page of an origin the rules do not name cannot;
 * - as a plain HTML form submitted with a file chosen in its file input, with
 *   success_action_redirect back to the page's origin (no CORS involved: a navigation).
 * Every stored object is read back with the JS SDK. Chromium flags as in cors-browser.test.ts;
 * needs('chromium') skips this file without it; the boto3 forms need('boto3') too.
 */
import { CreateBucketCommand, GetObjectCommand, PutBucketCorsCommand } from '@aws-sdk/client-s3';
import { createPresignedPost } from '@aws-sdk/s3-presigned-post';
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import type { BrowserContext } from 'playwright-core';
import { launchChromium, type Chromium } from '../support/chromium.ts';
import { needs, toolPath } from '../support/prerequisites.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIALS, s3Client, startTestWorker, type TestWorker } from './harness.ts';

const BUCKET = 'form-web';

/** boto3's forms: argv endpoint, key id, secret, key, redirect URL; prints {v2, v4} as JSON. */
const BOTO3 = `
import boto3, json, sys
from botocore.config import Config
endpoint, akid, secret, key, redirect = sys.argv[1:6]
def form(cfg):
    s3 = boto3.client('s3', endpoint_url=endpoint, aws_access_key_id=akid, aws_secret_access_key=secret, region_name='us-east-1', config=cfg)
    return s3.generate_presigned_post('${BUCKET}', key, Fields={'Content-Type': 'text/plain', 'success_action_redirect': redirect},
        Conditions=[['starts-with', '$Content-Type', 'text/'], ['content-length-range', 1, 10000], {'success_action_redirect': redirect}], ExpiresIn=600)
print(json.dumps({'v2': form(Config(s3={'addressing_style': 'path'})), 'v4': form(Config(signature_version='s3v4', s3={'addressing_style': 'path'}))}))
`;

interface Form {
  url: string;
  fields: Record<string, string>;
}

async function boto3Forms(endpoint: string, key: string, redirect: string): Promise<{ v2: Form; v4: Form }> {
  try {
    const { stdout } = await promisify(execFile)(
      toolPath('boto3'),
      ['-c', BOTO3, endpoint, CREDENTIALS.accessKeyId, CREDENTIALS.secretAccessKey, key, redirect],
      { timeout: 60_000 },
    );
    return JSON.parse(stdout);
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${e.message}\n${e.stderr}`);
  }
}

describe('POST Object from Chromium: boto3 and @aws-sdk/s3-presigned-post forms', { timeout: 120_000, ...needs('chromium') }, () => {
  let worker: TestWorker;
  let pages: http.Server;
  let pagePort: number;
  let chrome: Chromium | undefined;
  let browser: BrowserContext;

  beforeAll(async () => {
    worker = await startTestWorker('engine');
    pages = http.createServer((req, res) => {
      // fetch() follows the gateway's 303 here; after a cross-origin hop its origin is "null".
      if (req.url?.startsWith('/done')) res.setHeader('access-control-allow-origin', '*');
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>shardgate form test</title><p>page</p>');
    });
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
              AllowedMethods: ['POST', 'GET'],
              AllowedHeaders: ['*'],
              ExposeHeaders: ['ETag', 'Location'],
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

  async function stored(key: string) {
    const got = await s3Client(worker.url).send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    return { body: await got.Body!.transformToString(), contentType: got.ContentType, etag: got.ETag };
  }

  /** fetch() with a FormData of the form's fields and a File, from a page served at `origin`. */
  async function postFromPage(origin: string, form: Form, file: { name: string; text: string; type: string }) {
    const page = await browser.newPage();
    try {
      await page.goto(`${origin}/`);
      return await page.evaluate(
        async ({ form, file }) => {
          const fd = new FormData();
          for (const [k, v] of Object.entries(form.fields)) fd.append(k, v);
          fd.append('file', new File([file.text], file.name, { type: file.type }));
          try {
            const res = await fetch(form.url, { method: 'POST', body: fd });
            return { status: res.status, etag: res.headers.get('etag'), location: res.headers.get('location'), body: await res.text() };
          } catch (err) {
            return { error: String(err) };
          }
        },
        { form, file },
      );
    } finally {
      await page.close();
    }
  }

  it('an @aws-sdk/s3-presigned-post form uploads by fetch() through CORS; the page reads ETag and Location', async () => {
    const post = await createPresignedPost(s3Client(worker.url) as never, {
      Bucket: BUCKET,
      Key: 'sdk/${filename}',
      Conditions: [
        ['content-length-range', 1, 10_000],
        ['starts-with', '$Content-Type', 'text/'],
        ['eq', '$success_action_status', '201'],
      ],
      Fields: { 'Content-Type': 'text/plain', success_action_status: '201' },
      Expires: 600,
    });
    const r = await postFromPage(`http://localhost:${pagePort}`, post, { name: 'hello.txt', text: 'from the SDK form', type: 'text/plain' });
    expect(r).toMatchObject({ status: 201 });
    expect(r.body).toContain('<Key>sdk/hello.txt</Key>');
    expect(r.location).toBe(`${worker.url.origin}/${BUCKET}/sdk/hello.txt`);
    const obj = await stored('sdk/hello.txt');
    expect(obj).toMatchObject({ body: 'from the SDK form', contentType: 'text/plain' });
    expect(r.etag).toBe(obj.etag);
  });

  it('boto3 forms (SigV2 and SigV4) upload by fetch() through CORS', needs('boto3'), async () => {
    const forms = await boto3Forms(worker.url.origin, 'boto3/${filename}', `http://localhost:${pagePort}/done`);
    expect(forms.v2.fields).toHaveProperty('AWSAccessKeyId');
    expect(forms.v4.fields).toHaveProperty('x-amz-signature');
    for (const [scheme, form] of Object.entries(forms)) {
      // Without the redirect field the answer is 204, readable by the page.
      const { success_action_redirect: _, ...fields } = form.fields;
      void _;
      const blocked = await postFromPage(
        `http://localhost:${pagePort}`,
        { url: form.url, fields },
        { name: `${scheme}.txt`, text: scheme, type: 'text/plain' },
      );
      // The policy names success_action_redirect: a form without it is refused, and the page can read why.
      expect(blocked.status, scheme).toBe(403);
      expect(blocked.body).toContain('Invalid according to Policy');
    }
    for (const [scheme, form] of Object.entries(forms)) {
      const r = await postFromPage(`http://localhost:${pagePort}`, form, { name: `${scheme}.txt`, text: `boto3 ${scheme}`, type: 'text/plain' });
      // fetch follows the 303 to the page's own origin.
      expect(r, scheme).toMatchObject({ status: 200 });
      expect(await stored(`boto3/${scheme}.txt`)).toMatchObject({ body: `boto3 ${scheme}`, contentType: 'text/plain' });
    }
  });

  it('a plain HTML form (boto3 SigV4 fields, a chosen file) uploads and lands on success_action_redirect', needs('boto3'), async () => {
    const forms = await boto3Forms(worker.url.origin, 'html/${filename}', `http://localhost:${pagePort}/done`);
    const page = await browser.newPage();
    try {
      await page.goto(`http://localhost:${pagePort}/`);
      await page.evaluate((form) => {
        // eslint-disable-next-line @typescript-eslint/no-explicit-any -- page-side DOM (tsc has no DOM lib here)
        const document = (globalThis as unknown as { document: any }).document;
        const f = document.createElement('form');
        Object.assign(f, { method: 'post', enctype: 'multipart/form-data', action: form.url });
        for (const [k, v] of Object.entries(form.fields)) {
          const input = document.createElement('input');
          Object.assign(input, { type: 'hidden', name: k, value: v });
          f.appendChild(input);
        }
        const file = document.createElement('input');
        Object.assign(file, { type: 'file', name: 'file' });
        f.appendChild(file);
        document.body.appendChild(f);
      }, forms.v4);
      await page.setInputFiles('input[type=file]', { name: 'chosen.txt', mimeType: 'text/plain', buffer: Buffer.from('chosen in a file input') });
      await Promise.all([
        page.waitForURL(/\/done\?/),
        page.evaluate(() => (globalThis as unknown as { document: { forms: { submit(): void }[] } }).document.forms[0]!.submit()),
      ]);
      const landedAt = new URL(page.url());
      expect(Object.fromEntries(landedAt.searchParams)).toMatchObject({ bucket: BUCKET, key: 'html/chosen.txt' });
      const obj = await stored('html/chosen.txt');
      expect(obj.body).toBe('chosen in a file input');
      expect(landedAt.searchParams.get('etag')).toBe(obj.etag);
    } finally {
      await page.close();
    }
  });

  it('a page of an origin the rules do not name cannot read the answer', async () => {
    const post = await createPresignedPost(s3Client(worker.url) as never, { Bucket: BUCKET, Key: 'elsewhere.txt', Expires: 600 });
    const r = await postFromPage(`http://127.0.0.1:${pagePort}`, post, { name: 'x.txt', text: 'x', type: 'text/plain' });
    expect(r.error).toMatch(/TypeError/);
  });
});
