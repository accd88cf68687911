/**
 * Uploads that stall: a signed PutObject sent straight to an app's `fetch`, whose body sends its
 * first 64 KiB and then nothing until the test ends it (a client gone quiet while its request
 * holds coding budget), and a wait on the budget's gauge that turns the event loop instead of
 * sleeping.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { createApp } from '../../worker/app/app.ts';
import { makeAuthenticate } from '../../worker/app/auth-gate.ts';
import type { BackgroundWork } from '../../worker/app/background.ts';
import type { EcStore } from '../../worker/engine/ec-store.ts';
import { sdk, type SignAs } from '../auth/mutation/bases.ts';
import { toRequest } from '../auth/mutation/wire.ts';
import { testS3Settings } from './memory-store.ts';

/**
 * The real front door over `store`, with the gateway's own wiring of the budget's holder
 * (BackgroundWork, RequestScope): `keys` may write to every bucket.
 */
export function writersApp(store: EcStore, background: BackgroundWork, keys: readonly { accessKeyId: string; secret: string }[], maxObjectSize: number) {
  const authenticate = makeAuthenticate(
    {
      credentials: keys.map((k) => ({ accessKeyId: k.accessKeyId, secretAccessKey: k.secret, scope: { buckets: ['*'], actions: ['write'] as const } })),
      allowAnonymous: false,
      region: 'us-east-1',
    },
    {},
  );
  return createApp({
    store,
    config: store.config,
    authenticate,
    settings: testS3Settings({ maxObjectSize }),
    around: (c, next) => background.run(c.var.scope, next),
  });
}

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
