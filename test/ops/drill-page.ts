/**
 * The status page as the operator sees it during the outage drill (test/ops/outage.test.ts): one
 * Chromium for the whole drill, signed in once through the page's form (SigV4 in the browser),
 * then at each state of the drill a fresh read of the status, what the rendered DOM shows (the
 * health pill, the checks listed, the backends' lights, the redundancy table) and a PNG of the
 * page in test-output/drill/ at the repository root (git-ignored), its path printed.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { launchChromium, type Chromium } from '../support/chromium.ts';
import { ROOT } from '../support/worker.ts';

export const DRILL_OUTPUT = join(ROOT, 'test-output', 'drill');

/** What the page shows, read from the rendered DOM (not the HTML source). */
export interface PageView {
  health: string;
  /** The checks the page lists (every one not ok), name -> state. */
  checks: Record<string, string>;
  /** Backend id -> its light's state (up, degraded, down, unknown). */
  backends: Record<string, string>;
  /** The redundancy table's rows: "scope policy shards-left units bytes" as the cells read. */
  redundancy: string[];
  /** Card name -> the value it shows. */
  cards: Record<string, string>;
  note: string;
}

export class DrillPage {
  private constructor(
    private readonly chrome: Chromium,
    readonly page: Page,
    readonly errors: string[],
  ) {}

  static async open(url: string, credentials: { accessKeyId: string; secretAccessKey: string }): Promise<DrillPage> {
    const chrome = await launchChromium({ viewport: { width: 1280, height: 1200 } });
    const page = await chrome.browser.newPage();
    const errors: string[] = [];
    page.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())));
    page.on('pageerror', (e) => void errors.push(String(e)));
    await page.goto(`${url}/_shardgate/ui`);
    await page.waitForSelector('body[data-rendered]');
    await page.click('#signin');
    await page.fill('#akid', credentials.accessKeyId);
    await page.fill('#secret', credentials.secretAccessKey);
    await page.click('#signin-ok');
    await page.waitForSelector('body[data-signed="true"]');
    mkdirSync(DRILL_OUTPUT, { recursive: true });
    return new DrillPage(chrome, page, errors);
  }

  /** Reads the status again (as the page's own timer does) and waits for it to be drawn. */
  async refresh(): Promise<void> {
    const before = Number(await this.page.$eval('body', (b) => b.dataset.rendered));
    await this.page.dispatchEvent('#hours', 'change');
    await this.page.waitForFunction(
      (n) => Number((globalThis as unknown as { document: { body: { dataset: Record<string, string> } } }).document.body.dataset.rendered) > n,
      before,
    );
  }

  async view(): Promise<PageView> {
    const p = this.page;
    const pairs = (selector: string, key: string, value: string) =>
      p.$$eval(selector, (els, [k, v]) => els.map((e) => [e.getAttribute(k!) ?? '', e.getAttribute(v!) ?? '']), [key, value]);
    return {
      health: (await p.$eval('#health', (e) => e.textContent)) ?? '',
      checks: Object.fromEntries(await pairs('#checks li', 'data-check', 'data-state')),
      backends: Object.fromEntries(await pairs('#backends tbody tr', 'data-backend', 'data-state')),
      redundancy: await p.$$eval('#redundancy tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent).join(' | '))),
      cards: Object.fromEntries(
        await p.$$eval('[data-card]', (els) => els.map((e) => [e.getAttribute('data-card') ?? '', e.querySelector('.v')?.textContent ?? ''])),
      ),
      note: (await p.$eval('#backends-note', (e) => e.textContent)) ?? '',
    };
  }

  /** A full-page PNG named for the drill's state; returns its path (printed, so a person can look). */
  async screenshot(name: string): Promise<string> {
    const path = join(DRILL_OUTPUT, `${name}.png`);
    await this.page.screenshot({ path, fullPage: true });
    if (readFileSync(path).subarray(1, 4).toString('latin1') !== 'PNG') throw new Error(`${path} is no PNG`);
    console.log(`status page screenshot: ${path}`);
    return path;
  }

  close(): Promise<void> {
    return this.chrome.close();
  }
}
