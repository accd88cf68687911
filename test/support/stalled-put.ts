/**
 * Uploads that stall: a signed PutObject sent straight to an app's `fetch`, whose body sends its
 * first 64 KiB and then nothing until the test ends it (a client gone quiet while its request
 * holds coding budget), and a wait on the budget's gauge that turns the event loop instead of
 * sleeping.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { sdk, type SignAs } from '../auth/mutation/bases.ts';
import { toRequest } from '../auth/mutation/wire.ts';

/** What answers a Request: an app from createApp. */
export interface FetchingApp {
  fetch(request: Request): Response | Promise<Response>;
}

/** A signed PUT of `size` bytes to `bucket`/`key` as `as`; its body sends 64 KiB, then nothing until `fail()` ends it. */
export async function stalledPut(app: FetchingApp, as: SignAs, bucket: string, key: string, size: number) {
  const wire = await sdk(new PutObjectCommand({ Bucket: bucket, Key: key, Body: new Uint8Array(size) }), as);
  let fail!: (err: Error) => void;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new Uint8Array(65_536));
      fail = (err) => c.error(err);
    },
  });
  const signed = toRequest({ ...wire, body: null })!;
  const request = new Request(signed.url, { method: 'PUT', headers: signed.headers, body, duplex: 'half' } as RequestInit);
  const answered = Promise.resolve(app.fetch(request)).catch(() => null);
  return { answered, fail: () => fail(new Error('client gone')) };
}

/** Turns of the event loop until `done`, for at most 20 s (the assertions after it say what was wanted). */
export async function until(done: () => boolean): Promise<void> {
  const end = Date.now() + 20_000;
  while (!done() && Date.now() < end) await new Promise((r) => setImmediate(r));
}
