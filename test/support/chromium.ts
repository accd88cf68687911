/**
 * Headless Chromium for the browser tests (Debian's /usr/bin/chromium through playwright-core):
 * one launch, one throwaway profile, the same flags everywhere. SHARDGATE_SKIP_BROWSER=1 skips
 * the tests that use it.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const SKIP_BROWSER = process.env.SHARDGATE_SKIP_BROWSER === '1';

/** Throws, saying how to get it, when Chromium is not installed. */
export function requireChromium(): void {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does), or SHARDGATE_SKIP_BROWSER=1 to skip`);
}

export interface Chromium {
  browser: BrowserContext;
  /** The profile directory (a place for screenshots too); removed by close(). */
  profile: string;
  close(): Promise<void>;
}

export async function launchChromium(options: { viewport?: { width: number; height: number } } = {}): Promise<Chromium> {
  requireChromium();
  const profile = mkdtempSync(join(tmpdir(), 'shardgate-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    ...options,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return {
    browser,
    profile,
    close: async () => {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
