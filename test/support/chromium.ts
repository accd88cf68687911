/**
 * Headless Chromium for the browser tests (Debian's chromium, found by prerequisites.ts, through
 * playwright-core): one launch, one throwaway profile, the same flags everywhere. A test that
 * uses it declares needs('chromium'), which skips it where Chromium is missing or
 * SHARDGATE_SKIP_BROWSER=1.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { toolPath } from './prerequisites.ts';

export interface Chromium {
  browser: BrowserContext;
  /** The profile directory (a place for screenshots too); removed by close(). */
  profile: string;
  close(): Promise<void>;
}

export async function launchChromium(options: { viewport?: { width: number; height: number } } = {}): Promise<Chromium> {
  const executablePath = toolPath('chromium');
  const profile = mkdtempSync(join(tmpdir(), 'shardgate-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    ...options,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
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
