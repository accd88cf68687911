/**
 * The status page in a real browser: headless Chromium (Debian's /usr/bin/chromium through
 * playwright-core, as test/s3/cors-browser.test.ts) loads /_shardgate/ from the real gateway in
 * workerd (R2 backends behind fault wrappers, the catalog and ops Durable Objects) while one
 * backend is down and objects written meanwhile are degraded. It checks what the page shows
 * without a key (health only), then signs in through the page's form (SigV4 computed in the
 * browser) and checks the per-bucket scrub bars, the error of the down backend, the plots and the
 * storage overhead, the bytes per storage class; and that the page's own CSP let everything run
 * (no console errors).
 * SHARDGATE_SCREENSHOT=1 also writes the screenshot kept in docs/status-page.png.
 * It needs('chromium'), like the CORS test.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Page } from 'playwright-core';
import { launchChromium, type Chromium } from '../support/chromium.ts';
import { needs } from '../support/prerequisites.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIALS, r2Config, removeDir, startGateway, type RunningGateway } from '../engine/harness.ts';

const DOWN = 'r2-3';

describe('the status page in Chromium, one backend down', { timeout: 180_000, ...needs('chromium') }, () => {
  let g: RunningGateway;
  let chrome: Chromium | undefined;
  let profile: string;
  let page: Page;
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    // STANDARD_IA names the same 4+2 policy: a class card on the page, nothing else changed.
    g = await startGateway(r2Config({ storageClasses: { STANDARD_IA: 'ec' } }));
    const s3 = g.s3();
    await s3.send(new CreateBucketCommand({ Bucket: 'photos' }));
    await s3.send(new CreateBucketCommand({ Bucket: 'logs' }));
    const body = (n: number) => new Uint8Array(200_000 + n).fill(n);
    for (let i = 0; i < 4; i++) await s3.send(new PutObjectCommand({ Bucket: 'photos', Key: `2024/img-${i}.jpg`, Body: body(i) }));
    for (let i = 0; i < 2; i++)
      await s3.send(new PutObjectCommand({ Bucket: 'logs', Key: `app-${i}.log`, Body: body(10 + i), ...(i === 1 ? { StorageClass: 'STANDARD_IA' } : {}) }));
    await g.control('/__test/cron'); // a scrub pass of both buckets, a probe, a data-health sample
    await g.control(`/__test/fault?backend=${DOWN}&action=offline`);
    for (let i = 4; i < 7; i++) await s3.send(new PutObjectCommand({ Bucket: 'photos', Key: `2024/img-${i}.jpg`, Body: body(i) }));
    await (await s3.send(new GetObjectCommand({ Bucket: 'photos', Key: '2024/img-0.jpg' }))).Body!.transformToByteArray();
    chrome = await launchChromium({ viewport: { width: 1280, height: 1100 } });
    profile = chrome.profile;
    page = await chrome.browser.newPage();
    page.on('console', (m) => void (m.type() === 'error' && consoleErrors.push(m.text())));
    page.on('pageerror', (e) => void consoleErrors.push(String(e)));
  }, 180_000);

  afterAll(async () => {
    await chrome?.close();
    if (g) {
      await g.stop();
      removeDir(g.persistDir);
    }
  }, 60_000);

  const rows = () =>
    page.$$eval('#backends tbody tr', (trs) =>
      trs.map((tr) => ({
        id: tr.getAttribute('data-backend'),
        state: tr.getAttribute('data-state'),
        cells: [...tr.querySelectorAll('td')].map((td) => td.textContent ?? ''),
      })),
    );
  const cardValue = (name: string) => page.$eval(`[data-card="${name}"] .v`, (e) => e.textContent);

  it('without a key: the down backend in red, the degraded objects, one overall scrub bar, no bucket names', async () => {
    const response = await page.goto(`${g.url}/_shardgate/`);
    expect(response?.status()).toBe(200);
    expect(page.url()).toMatch(/\/_shardgate\/ui$/);
    await page.waitForSelector('body[data-rendered]');
    const backends = await rows();
    expect(backends.map((b) => b.id)).toEqual(['r2-0', 'r2-1', 'r2-2', 'r2-3', 'r2-4', 'r2-5']);
    expect(backends.find((b) => b.id === DOWN)!.state).toBe('down');
    expect(backends.filter((b) => b.id !== DOWN).every((b) => b.state === 'up' || b.state === 'degraded')).toBe(true);
    expect(
      await page.$eval(
        `tr[data-backend="${DOWN}"] .light`,
        (e) => (globalThis as unknown as { getComputedStyle(x: unknown): { backgroundColor: string } }).getComputedStyle(e).backgroundColor,
      ),
    ).toBe('rgb(198, 40, 40)');
    expect(await page.$eval('#health', (e) => e.textContent)).toBe('warning');
    expect(await cardValue('degraded')).toBe('3');
    expect(await cardValue('objects')).toBe('9');
    expect(await page.$$eval('#scrub [data-bucket]', (bars) => bars.map((b) => b.getAttribute('data-bucket')))).toEqual(['*']);
    expect(await page.$eval('#usage', (e) => e.textContent)).toBe('sign in to see the buckets');
    expect(await page.content()).not.toContain('photos'); // bucket names only when signed
  });

  it('signed in through the form: every bucket scrubbed, the backend error, plots and overhead', async () => {
    await page.click('#signin');
    await page.fill('#akid', CREDENTIALS.accessKeyId);
    await page.fill('#secret', CREDENTIALS.secretAccessKey);
    await page.click('#signin-ok');
    await page.waitForSelector('body[data-signed="true"]');
    expect(await page.$eval('body', (b) => b.dataset.error ?? null)).toBeNull();
    const bars = await page.$$eval('#scrub [data-bucket]', (els) => els.map((e) => ({ bucket: e.getAttribute('data-bucket'), text: e.textContent })));
    expect(bars.map((b) => b.bucket)).toEqual(['logs', 'photos']);
    // The cron's pass checked every unit of both buckets; the three photos written after it are
    // not checked yet, and coverage says so (units checked of units stored).
    expect(bars.map((b) => /^\w+(\d+ \/ \d+ units) · last pass \d+ s ago/.exec(b.text ?? '')?.[1])).toEqual(['2 / 2 units', '4 / 7 units']);
    expect(await page.$$eval('#scrub [data-coverage]', (els) => els.map((e) => e.getAttribute('data-coverage')))).toEqual(['1', String(4 / 7)]);
    const down = (await rows()).find((b) => b.id === DOWN)!;
    expect(down.cells[8]).toMatch(/Unavailable|offline/);
    expect(await page.$eval('polyline[data-series="degraded-objects"]', (e) => e.getAttribute('data-last'))).toBe('3');
    expect(await page.$eval('polyline[data-series="s3-in"]', (e) => e.getAttribute('points')?.split(' ').length ?? 0)).toBeGreaterThan(1);
    const overhead = Number(await page.$eval('[data-overhead]', (e) => e.getAttribute('data-overhead')));
    expect(overhead).toBeGreaterThan(1.3); // 4+2 stores 1.5x, less the shards the down backend missed
    expect(overhead).toBeLessThan(1.6);
    expect(await page.$$eval('#storage [data-storage]', (els) => els.length)).toBe(6);
    // Usage per bucket (issue 45): every version's bytes and the objects, no quota bar without a quota.
    const usage = await page.$$eval('#usage [data-usage]', (els) =>
      els.map((e) => ({ bucket: e.getAttribute('data-usage'), ratio: e.getAttribute('data-quota-ratio'), text: e.textContent })),
    );
    expect(usage.map((u) => [u.bucket, u.ratio])).toEqual([
      ['logs', ''],
      ['photos', ''],
    ]);
    expect(usage[1]!.text).toMatch(/^photos[\d.]+ \w+ · \d+ objects · \d+ versions, 0 markers/);
    // And the clients' requests naming the bucket with their egress (the PUTs and GETs above).
    expect(Number(/ · (\d+) requests, [\d.]+ \w+ egress$/.exec(usage[1]!.text ?? '')?.[1])).toBeGreaterThan(0);
    // Bytes per storage class (issue 44): one card per class once some version is not STANDARD.
    const classCard = (c: string) => page.$eval(`[data-card="class-${c}"] .k`, (e) => e.textContent);
    expect(await classCard('STANDARD')).toMatch(/^class STANDARD: 8 version\(s\), .* on the backends$/);
    expect(await classCard('STANDARD_IA')).toMatch(/^class STANDARD_IA: 1 version\(s\), .* on the backends$/);
    expect(await cardValue('class-STANDARD_IA')).toBe('195.3 KiB'); // 200,011 bytes
    const shot = join(profile, 'status-page.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect([...readFileSync(shot).subarray(1, 4)].map((c) => String.fromCharCode(c)).join('')).toBe('PNG');
    if (process.env.SHARDGATE_SCREENSHOT === '1') copyFileSync(shot, join(__dirname, '../../docs/status-page.png'));
    expect(consoleErrors).toEqual([]);
  });

  it('keeps no secret where an HTML object served from the same origin could read it, and such an object runs no script (issue 21)', async () => {
    expect(await page.$eval('body', (b) => b.dataset.signed)).toBe('true');
    const stores = () =>
      page.evaluate(() => {
        const w = globalThis as unknown as { sessionStorage: { length: number }; localStorage: { length: number } };
        return [w.sessionStorage.length, w.localStorage.length];
      });
    expect(await stores()).toEqual([0, 0]); // signed in, and nothing kept in the origin's storage
    const html =
      '<!doctype html><title>x</title><script>document.title = "stolen:" + JSON.stringify({ s: Object.assign({}, sessionStorage), l: Object.assign({}, localStorage) });</script>';
    await g.s3().send(new PutObjectCommand({ Bucket: 'photos', Key: 'steal.html', Body: html, ContentType: 'text/html' }));
    const url = await getSignedUrl(g.s3(), new GetObjectCommand({ Bucket: 'photos', Key: 'steal.html' }), { expiresIn: 300 });
    const res = await page.goto(url); // the same tab, the same origin as the status page
    expect(res?.headers()).toMatchObject({ 'content-security-policy': 'sandbox', 'x-content-type-options': 'nosniff' });
    // Sandboxed (s3/served-object.ts): an opaque origin, and its script never ran.
    expect(await page.title()).toBe('x');
    expect(await page.evaluate(() => (globalThis as unknown as { origin: string }).origin)).toBe('null');
    expect(
      await page.evaluate(() => {
        try {
          return JSON.stringify((globalThis as unknown as { sessionStorage: object }).sessionStorage);
        } catch (err) {
          return (err as Error).name;
        }
      }),
    ).toBe('SecurityError');
  });
});
