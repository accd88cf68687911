/**
 * The status page's script in Chromium over status documents served to it (no gateway): the
 * history window defaults to the last hour; the charts start at the oldest data present when it
 * is younger than the window (at least 10 minutes), so a fresh incident is spread over the chart
 * rather than squashed into its right edge; the header shows the version and the isolate's
 * uptime; with writes impossible the page says so and lists the failing checks with what to do,
 * instead of promising that new writes are repaired later. It needs('chromium').
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { MemoryBackend } from '../../backends/memory.ts';
import { MeteredBackend } from '../../backends/metered.ts';
import { MemoryOpsRecord } from '../../worker/ops/book.ts';
import { OpsFlusher } from '../../worker/ops/flusher.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import { statusPage } from '../../worker/ops/page.ts';
import { OpsService } from '../../worker/ops/service.ts';
import type { StatusDoc } from '../../worker/ops/status.ts';
import { healthChecks } from '../../worker/ops/checks.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { launchChromium, type Chromium } from '../support/chromium.ts';
import { needs } from '../support/prerequisites.ts';

const MIN = 60_000;
const ORIGIN = 'http://gateway.test';

/** A real status document of a quiet gateway, answering `hours` of history. */
async function baseDoc(): Promise<StatusDoc> {
  const meter = new IsolateMeter();
  const record = new MemoryOpsRecord();
  const ops = new OpsService({
    config: {
      backends: [{ id: 'm', domain: 'd' }],
      policies: { p: { codec: 'rs', k: 1, m: 0 } },
      defaultPolicy: 'p',
      coder: { kernel: 'scalar', crc32: 'js' },
      scrubMode: 'heads',
      deployment: { mode: 'local', warnings: [] },
    },
    catalog: localCatalog(),
    backends: [new MeteredBackend(new MemoryBackend({ id: 'm', domain: 'd' }), (r) => meter.backendCall(r))],
    meter,
    record,
    flusher: new OpsFlusher(meter, (d) => record.record(d), 5000),
    probeEveryMs: 30_000,
  });
  return (await ops.status({ signed: false, hours: 1, probe: false })).doc;
}

/** `doc` with `hours` of window and data (samples and minutes) from `oldestAgo` ms ago to now. */
function withData(doc: StatusDoc, hours: number, oldestAgo: number): StatusDoc {
  const now = doc.now;
  const at = (ago: number) => Math.floor((now - ago) / MIN) * MIN;
  const sample = { ...doc.series.samples.at(-1)! };
  const minute = {
    at: 0,
    s3Requests: 5,
    s3Errors: 0,
    s3BytesIn: 1000,
    s3BytesOut: 0,
    backendBytesWritten: 0,
    backendBytesRead: 0,
    backendErrors: 0,
    repairsDone: 0,
    repairsFailed: 0,
  };
  return {
    ...doc,
    isolate: { ...doc.isolate, startedAt: now - 150_000, uptimeSeconds: 150 },
    series: {
      ...doc.series,
      from: now - hours * 60 * MIN,
      minutes: [
        { ...minute, at: at(oldestAgo) },
        { ...minute, at: at(0) },
      ],
      samples: [
        { ...sample, at: now - oldestAgo },
        { ...sample, at: now },
      ],
    },
  };
}

describe('the status page: window, header, checks', { timeout: 60_000, ...needs('chromium') }, () => {
  let chrome: Chromium;
  let page: Page;
  let serve: (hours: number) => StatusDoc;
  const asked: string[] = [];

  beforeAll(async () => {
    chrome = await launchChromium();
    page = await chrome.browser.newPage();
    await page.route(`${ORIGIN}/**`, (route) => {
      const url = new URL(route.request().url());
      if (url.pathname === '/_shardgate/') return route.fulfill({ contentType: 'text/html', body: statusPage('n0nce') });
      asked.push(url.search);
      return route.fulfill({ contentType: 'application/json', body: JSON.stringify(serve(Number(url.searchParams.get('hours')))) });
    });
  });
  afterAll(async () => chrome?.close());

  async function open(): Promise<{ chartFrom: number; build: string; hours: string }> {
    await page.goto(`${ORIGIN}/_shardgate/`);
    await page.waitForFunction(
      () => (globalThis as unknown as { document: { body: { dataset: { rendered?: string } } } }).document.body.dataset.rendered === '1',
    );
    return {
      chartFrom: Number(await page.$eval('body', (b) => b.dataset.chartFrom)),
      build: (await page.$eval('#build', (e) => e.textContent)) ?? '',
      hours: await page.$eval('#hours', (e) => (e as unknown as { value: string }).value),
    };
  }

  it('asks for the last hour by default; the header shows the version and uptime', async () => {
    const doc = await baseDoc();
    serve = (hours) => withData(doc, hours, 50 * MIN);
    asked.length = 0;
    const shown = await open();
    expect(shown.hours).toBe('1');
    expect(asked).toEqual(['?hours=1']);
    expect(shown.build).toBe(`v${doc.version} \u00b7 up 3 min (this isolate)`);
  });

  it('data younger than the window: the charts start at the oldest of it', async () => {
    const doc = await baseDoc();
    serve = (hours) => withData(doc, hours, 25 * MIN);
    const { chartFrom } = await open();
    expect(chartFrom).toBe(Math.floor((doc.now - 25 * MIN) / MIN) * MIN); // the oldest minute present
  });

  it('minutes of data: the charts span at least 10 minutes', async () => {
    const doc = await baseDoc();
    serve = (hours) => withData(doc, hours, 3 * MIN);
    expect((await open()).chartFrom).toBe(doc.now - 10 * MIN);
  });

  it('two of six backends down under 4+2: writes are said to be refused, with what to do; one down: the usual note', async () => {
    const doc = await baseDoc();
    const withDown = (down: number): StatusDoc => {
      const backends = Array.from({ length: 6 }, (_, i) => ({ ...doc.backends[0]!, id: `b${i}`, state: i < down ? ('down' as const) : ('up' as const) }));
      const policies = { ec: { codec: 'rs', k: 4, m: 2, writeQuorum: 5 } };
      const checks = healthChecks({ backends, policies, degradedObjects: 0, repairStuck: 0 });
      return { ...withData(doc, 1, 5 * MIN), backends, policies, checks, health: 'critical' };
    };
    serve = () => withDown(2);
    await open();
    const note = await page.$eval('#backends-note', (e) => e.textContent);
    expect(note).toBe('2 backend(s) down: reads decode around them where they can; writes of ec are refused (too few backends for the write quorum).');
    expect(note).not.toContain('repaired when they return');
    const listed = await page.$$eval('#checks li', (lis) =>
      lis.map((li) => [li.getAttribute('data-check'), li.getAttribute('data-state'), li.querySelector('.action')?.textContent ?? '']),
    );
    expect(listed).toEqual([
      ['writes:ec', 'critical', expect.stringMatching(/^what to do: bring back backends \(down: b0, b1\)/)],
      ['reads:ec', 'warning', expect.stringMatching(/^what to do: bring back backends \(down: b0, b1\): one more lost backend/)],
      ['backends', 'warning', expect.stringMatching(/^what to do: /)],
    ]);
    serve = () => withDown(1);
    await open();
    expect(await page.$eval('#backends-note', (e) => e.textContent)).toBe(
      '1 backend(s) down: reads decode around them; new writes miss their shards and are repaired when they return.',
    );
  });

  it('data older than the window: the charts span the window', async () => {
    const doc = await baseDoc();
    serve = (hours) => withData(doc, hours, 5 * 60 * MIN);
    expect((await open()).chartFrom).toBe(doc.now - 60 * MIN);
  });
});
