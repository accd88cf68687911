/**
 * Clients that hang up: the behaviours of issue 19 (a download or a copy abandoned at any point),
 * over raw node:http so the socket is destroyed exactly when the test says, plus the gateway's
 * coding-budget gauge (`/_shardgate/status` signed, isolate.codingBudget) to check nothing stayed held.
 */
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { AwsClient } from 'aws4fetch';
import http from 'node:http';
import type { BudgetSnapshot } from '../../worker/engine/coding-budget.ts';

/** Where a download is abandoned: before any response, on its headers, after 1 KiB, part-way. */
export type AbandonAt = 'before-headers' | 'headers' | '1KiB' | 'mid-body';
export const ABANDON_POINTS: AbandonAt[] = ['before-headers', 'headers', '1KiB', 'mid-body'];

/** A presigned GET of `key` (optionally with a Range header sent alongside). */
export function presignedGet(client: S3Client, bucket: string, key: string): Promise<string> {
  return getSignedUrl(client, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn: 3600 });
}

/**
 * GETs `url` on a fresh connection and destroys the socket at `at` (`mid-body`: after
 * `midBytes`). Resolves with the bytes received; never rejects (a hang-up is the point), except
 * with `unansweredAfterMs`: when the gateway has not answered far enough to be hung up on by then
 * (a gateway that stopped answering, said at once instead of at the test's timeout).
 */
export function abandonGet(url: string, at: AbandonAt, o: { range?: string; midBytes?: number; unansweredAfterMs?: number } = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    let received = 0;
    let ended = false;
    const done = () => {
      ended = true;
      resolve(received);
    };
    const req = http.get(url, { agent: false, headers: o.range ? { range: o.range } : {} }, (res) => {
      if (at === 'headers') return (req.destroy(), done());
      const stopAt = at === '1KiB' ? 1024 : (o.midBytes ?? 1 << 20);
      res.on('data', (d: Buffer) => {
        received += d.length;
        if (received >= stopAt) req.destroy(), done();
      });
      res.on('end', done);
      res.on('error', done);
    });
    req.on('error', done);
    // Before the response: the request is sent, then the socket goes within a few ms.
    if (at === 'before-headers') setTimeout(() => (req.destroy(), done()), Math.floor(Math.random() * 15));
    const deadline = o.unansweredAfterMs;
    if (deadline !== undefined) {
      setTimeout(() => {
        if (ended) return;
        req.destroy();
        reject(new Error(`GET (${at}) not answered far enough to hang up within ${deadline / 1000} s: ${received} bytes received`));
      }, deadline).unref();
    }
  });
}

/**
 * Sends `method` to a presigned `url` (CopyObject, UploadPartCopy: their x-amz-copy-source rides
 * in the query) with no body, and destroys the socket after `afterMs`, before or as it is answered.
 */
export function abandonPresigned(url: string, method: string, afterMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const req = http.request(url, { method, agent: false, headers: { 'content-length': '0' } }, (res) => {
      res.resume();
      res.on('end', () => resolve());
    });
    req.on('error', () => resolve());
    req.end();
    setTimeout(() => (req.destroy(), resolve()), afterMs);
  });
}

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/**
 * The answering isolate's coding budget, from the status signed by an admin key: the unsigned
 * one may be a few seconds old (each isolate caches it).
 */
export async function codingBudget(endpoint: string, credentials: Credentials): Promise<BudgetSnapshot> {
  const signer = new AwsClient({ ...credentials, service: 's3', region: 'us-east-1', retries: 0 });
  const r = await signer.fetch(new URL('/_shardgate/status', endpoint).toString(), { signal: AbortSignal.timeout(30_000) });
  if (r.status !== 200) throw new Error(`status: HTTP ${r.status}: ${await r.text()}`);
  const doc = (await r.json()) as { isolate: { codingBudget: BudgetSnapshot } };
  return doc.isolate.codingBudget;
}

/**
 * The budget once it is idle: work a vanished client started (a copy) runs to its end first,
 * so this polls until nothing is held or waiting, for at most `withinMs`; then returns the last
 * reading whatever it says, for the caller to assert on.
 */
export async function settledBudget(endpoint: string, credentials: Credentials, withinMs = 60_000): Promise<BudgetSnapshot> {
  const until = Date.now() + withinMs;
  for (;;) {
    const b = await codingBudget(endpoint, credentials);
    if ((b.heldBytes === 0 && b.holders === 0 && b.waiters === 0) || Date.now() > until) return b;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Opens up to `max` GETs of `url` at once, none read, and counts those that get their response
 * headers within `headersMs` each; then hangs them all up.
 */
export async function unreadGetsAnswered(url: string, max: number, headersMs = 10_000): Promise<number> {
  const open: http.ClientRequest[] = [];
  try {
    const answered = await Promise.all(
      Array.from(
        { length: max },
        () =>
          new Promise<boolean>((resolve) => {
            const req = http.get(url, { agent: false }, (res) => {
              res.pause();
              resolve(res.statusCode === 200);
            });
            open.push(req);
            req.on('error', () => resolve(false));
            setTimeout(() => resolve(false), headersMs);
          }),
      ),
    );
    return answered.filter(Boolean).length;
  } finally {
    for (const r of open) r.destroy();
  }
}
