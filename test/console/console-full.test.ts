/**
 * The console at full size, in `npm run test:full` only (SHARDGATE_FULL_SIZE=1; skipped otherwise:
 * test/console/console-browser.test.ts proves the same paths at a few MiB and 300 keys): a bucket
 * of 10,000 keys browsed to its end by pages of 1,000, every key seen once; a 200 MiB file
 * uploaded by the picker in 8 MiB parts, paused half-way, the page reloaded, and resumed by picking
 * the file again, sending only the parts the gateway does not hold, the stored bytes checked. It
 * prints how long each page of 1,000 took to list and render, and the upload's rate: figures, not
 * assertions (the machine is shared).
 */
import { CreateBucketCommand, GetObjectCommand, ListPartsCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codingBudget } from '../support/abandon.ts';
import { launchChromium, type Chromium } from '../support/chromium.ts';
import { needs } from '../support/prerequisites.ts';
import type { RunningWorker } from '../support/worker.ts';
import { ROOT_KEY, startConsoleGateway } from './harness.ts';

// The page-side callbacks run in Chromium; the suite's tsconfig has no DOM types.
declare const localStorage: { getItem(key: string): string | null };
declare const location: { hash: string };

const FULL = process.env.SHARDGATE_FULL_SIZE === '1';
const MiB = 1024 * 1024;
const BUCKET = 'large';
const KEYS = 10_000;
const UPLOAD = 200 * MiB;

describe.skipIf(!FULL)('the web console at full size', { timeout: 900_000, ...needs('chromium') }, () => {
  let gateway: RunningWorker;
  let chrome: Chromium;
  let page: Page;
  let s3: S3Client;

  beforeAll(async () => {
    gateway = await startConsoleGateway({ maxObjectSize: 256 * MiB });
    s3 = new S3Client({ endpoint: gateway.url.origin, region: 'us-east-1', credentials: ROOT_KEY, forcePathStyle: true, maxAttempts: 1 });
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
    const started = Date.now();
    let next = 0;
    const put = async () => {
      for (let i = next++; i < KEYS; i = next++)
        await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `keys/k-${String(i).padStart(5, '0')}`, Body: `object ${i}` }));
    };
    await Promise.all(Array.from({ length: 32 }, put));
    console.log(`console-full: ${KEYS} keys stored in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    chrome = await launchChromium({ viewport: { width: 1280, height: 860 } });
    page = await chrome.browser.newPage();
    page.on('dialog', (d) => void d.accept());
  }, 900_000);

  afterAll(async () => {
    await chrome?.close();
    await gateway?.dispose();
  }, 60_000);

  async function signIn(): Promise<void> {
    await page.goto(new URL('/_shardgate/console', gateway.url).toString());
    await page.getByLabel('Access key ID').fill(ROOT_KEY.accessKeyId);
    await page.getByLabel('Secret access key').fill(ROOT_KEY.secretAccessKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('who').waitFor();
  }

  /**
   * Waits until the row's bar passes half the file. When it fails instead, or stops short, the
   * error says what the row says (state and message) and what the gateway's coding budget holds,
   * so a stalled upload explains itself in the CI log.
   */
  async function halfSent(row: Locator): Promise<void> {
    const until = Date.now() + 300_000;
    for (;;) {
      const [state, sent] = [await row.getAttribute('data-state'), Number(await row.getByRole('progressbar').getAttribute('value'))];
      if (state === 'uploading' && sent >= UPLOAD / 2) return;
      if (state !== 'uploading' || Date.now() > until) {
        const budget = await codingBudget(gateway.url.origin, ROOT_KEY).then(JSON.stringify, String);
        throw new Error(`the upload stopped at ${sent} bytes; its row: ${await row.textContent()}; the gateway's coding budget: ${budget}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  it('browses 10,000 keys to the end by pages of 1,000, each key once', async () => {
    await signIn();
    await page.evaluate((b) => {
      location.hash = `#/objects?bucket=${b}&prefix=keys/`;
    }, BUCKET);
    await page.getByRole('status').filter({ hasText: 'Page 1' }).waitFor();
    let t = Date.now();
    await page.getByLabel('Per page').selectOption('1000');
    const seen = new Set<string>();
    const times: number[] = [];
    const renders: number[] = [];
    for (let p = 1; ; p++) {
      await page
        .getByRole('status')
        .filter({ hasText: `Page ${p}: 0 folder(s), 1000 object(s)` })
        .waitFor();
      times.push(Date.now() - t);
      // The page's own cost: building its rows and laying them out (the console records it).
      renders.push(Number(await page.locator('table.objects').getAttribute('data-draw-ms')));
      for (const k of await page.locator('table.objects tbody tr[data-key]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key')!))) seen.add(k);
      const next = page.getByRole('button', { name: 'Next page ›' });
      if (await next.isDisabled()) break;
      t = Date.now();
      await next.click();
    }
    expect(seen.size).toBe(KEYS);
    expect(times).toHaveLength(KEYS / 1000);
    console.log(`console-full: pages of 1000 keys listed and rendered in ${times.map((ms) => `${ms} ms`).join(', ')}`);
    console.log(`console-full: of which building and laying out the 1000 rows: ${renders.map((ms) => `${Math.round(ms)} ms`).join(', ')}`);
  });

  it('uploads 200 MiB with a progress bar, paused, reloaded and resumed with the missing parts only', async () => {
    const file = join(chrome.profile, 'upload-200mib.bin');
    writeFileSync(file, randomBytes(UPLOAD));
    const hash = createHash('sha256');
    for await (const c of createReadStream(file)) hash.update(c as Buffer);
    const expected = hash.digest('hex');
    await page.evaluate((b) => {
      location.hash = `#/objects?bucket=${b}&prefix=uploads/`;
    }, BUCKET);
    await page.getByRole('heading', { name: `${BUCKET}/uploads/` }).waitFor();
    const partsSent: string[] = [];
    page.on('request', (r) => {
      const n = new URL(r.url()).searchParams.get('partNumber');
      if (r.method() === 'PUT' && n) partsSent.push(n);
    });
    const started = Date.now();
    await page.getByLabel('Upload files').setInputFiles(file);
    const label = `${BUCKET}/uploads/upload-200mib.bin`;
    const row = page.locator('.upload-list li', { hasText: label });
    await halfSent(row);
    await row.getByRole('button', { name: `Pause ${label}` }).click();
    await row.and(page.locator('[data-state="paused"]')).waitFor();
    const firstLeg = Date.now() - started;
    await page.reload();
    await signIn();
    const resumed = page.locator('.upload-list li', { hasText: label });
    expect(await resumed.getAttribute('data-state')).toBe('interrupted');
    // What the gateway holds now (a part whose body had all been sent when the pause came is stored all the same).
    const uploadId = JSON.parse((await page.evaluate(() => localStorage.getItem('shardgate.console.uploads')))!)[0].uploadId as string;
    const held = new Set(
      ((await s3.send(new ListPartsCommand({ Bucket: BUCKET, Key: 'uploads/upload-200mib.bin', UploadId: uploadId }))).Parts ?? []).map((p) =>
        String(p.PartNumber),
      ),
    );
    expect(held.size).toBeGreaterThan(0);
    partsSent.length = 0;
    const resumedAt = Date.now();
    await resumed.getByLabel(`Pick the file to resume ${label}`).setInputFiles(file);
    await resumed.and(page.locator('[data-state="done"]')).waitFor({ timeout: 600_000 });
    const secondLeg = Date.now() - resumedAt;
    const parts = Math.ceil(UPLOAD / (8 * MiB));
    const missing = Array.from({ length: parts }, (_, i) => String(i + 1)).filter((n) => !held.has(n));
    expect([...new Set(partsSent)].sort()).toEqual(missing.sort());
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'uploads/upload-200mib.bin' }));
    const stored = createHash('sha256');
    for await (const c of got.Body as AsyncIterable<Uint8Array>) stored.update(c);
    expect(stored.digest('hex')).toBe(expected);
    expect(got.ETag).toMatch(new RegExp(`-${parts}"$`));
    const secs = (firstLeg + secondLeg) / 1000;
    console.log(
      `console-full: 200 MiB uploaded in ${secs.toFixed(1)} s of sending (${(200 / secs).toFixed(1)} MiB/s); ${held.size} of ${parts} parts held after the pause, ${missing.length} sent after the reload`,
    );
  });
});
