/**
 * Shared state of the client smoke tests: one gateway for the whole file, the fixture files, and
 * a sandbox directory in which each client gets its own HOME, config and download folder. Case
 * files (`*.case.ts`) read the context lazily inside their tests, once beforeAll has filled it.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { FixtureFile, FixtureName } from './fixtures.ts';
import { sha256Hex } from './fixtures.ts';
import type { GatewayObserver } from './gateway.ts';

export interface CliContext {
  url: URL;
  observer: GatewayObserver;
  files: Record<FixtureName, FixtureFile>;
  /** Temporary directory of this run; removed afterwards. */
  sandbox: string;
}

export type CliSuite = () => CliContext;

export const FIXTURE_NAMES: FixtureName[] = ['small', 'medium', 'large'];

/** A client's own directories under the sandbox: `home/` (its HOME and config) and `out/`. */
export async function clientDirs(ctx: CliContext, client: string): Promise<{ home: string; out: string }> {
  const home = join(ctx.sandbox, client, 'home');
  const out = join(ctx.sandbox, client, 'out');
  await mkdir(home, { recursive: true });
  await mkdir(out, { recursive: true });
  return { home, out };
}

/** Same length and SHA-256 as `expected` (compared by digest: a byte diff of MiBs is unreadable). */
export function expectSameBytes(actual: Uint8Array, expected: Uint8Array, what: string): void {
  expect({ what, length: actual.length, sha256: sha256Hex(actual) }).toEqual({
    what,
    length: expected.length,
    sha256: sha256Hex(expected),
  });
}

export async function expectFileMatches(path: string, file: FixtureFile): Promise<void> {
  expectSameBytes(await readFile(path), file.bytes, `${path} vs ${file.name}`);
}

/** Fetches a presigned URL (Node fetch, no other headers) and checks status and body. */
export async function fetchPresigned(url: string, file: FixtureFile): Promise<void> {
  const res = await fetch(url);
  const body = new Uint8Array(await res.arrayBuffer());
  expect(res.status, `GET ${url}: ${new TextDecoder().decode(body.subarray(0, 2000))}`).toBe(200);
  expectSameBytes(body, file.bytes, `presigned GET of ${file.name}`);
}

/** The same URL with the first character of its signature changed (valid in hex and base64, and
 *  never a padding character): must be refused with 403. */
export async function expectTamperedRefused(url: string, signatureParam: string): Promise<void> {
  const u = new URL(url);
  const sig = u.searchParams.get(signatureParam);
  expect(sig, `${signatureParam} in ${url}`).toBeTruthy();
  u.searchParams.set(signatureParam, (sig![0] === 'a' ? 'b' : 'a') + sig!.slice(1));
  const res = await fetch(u);
  await res.arrayBuffer();
  expect(res.status, `tampered ${u}`).toBe(403);
}

/** The message of a client run that must fail (its command line and output): throws if it succeeded. */
export async function failureOf(run: Promise<unknown>): Promise<string> {
  try {
    await run;
  } catch (err) {
    return String(err);
  }
  throw new Error('the command succeeded; it should have been refused');
}
