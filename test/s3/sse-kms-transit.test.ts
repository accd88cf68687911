/**
 * SSE-KMS with a key backed by a Vault / OpenBao transit key (issue 43): the gateway built from a
 * config naming the key (`encryption.kmsKeys: [{ id, transit }]`, worker/gateway.ts as a deployed
 * isolate builds it), over a double of Vault's transit API (test/support/transit-server.ts: the
 * documented requests and answers, not Vault). Writes and reads on every path, one Vault decrypt
 * per isolate and key version (counted at the double), a Vault rotation and the rewrap with no
 * backend write, Vault refusing (400 KMS.KMSInvalidStateException) and not answering (503 with
 * Retry-After, nothing stored, no byte served), and the review's probe naming a wrong token and a
 * missing transit key on the status page. A "fresh isolate" is the same config built again
 * (another SHARDGATE_CONFIG text builds another gateway): its own caches, the same catalog and
 * the same memory backends (backends/index.ts keeps memory backends by id).
 */
import { AwsClient } from 'aws4fetch';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Hono } from 'hono';
import { appFor, gatewayFor, type Env } from '../../worker/gateway.ts';
import { parseConfig } from '../../worker/config/config.ts';
import { reviewDeployment } from '../../worker/config/deployment.ts';
import { TransitClient, TransitError } from '../../worker/engine/index.ts';
import { KmsKeys } from '../../worker/engine/kms-keys.ts';
import { command as keysCommand } from '../../cli/commands/keys.ts';
import { render } from '../../cli/commands/status.ts';
import { checkTransit } from '../../dev/vault-transit-check.ts';
import type { StatusLike } from '../../cli/gateway-client.ts';
import { DEV_KEY_RING } from '../support/memory-store.ts';
import { LocalCatalogNamespace, localCatalog } from '../support/local-catalog.ts';
import { startTransitServer, type TransitDouble } from '../support/transit-server.ts';

const TOKEN = 'hvs.test-token-never-shown-0123456789';
const ACCESS = 'transit-test-key';
const SECRET = 'transit-test-secret-0123456789';
const GATEWAY_KEY = Buffer.alloc(32, 9).toString('base64');
const B = 'vaulted-bucket';
const ARN = 'arn:aws:kms:us-east-1:000000000000:key/vaulted';
const SMALL = 'a secret kept by vault';
const LARGE = 'v'.repeat(300_000);

let vault: TransitDouble;
const catalog = new LocalCatalogNamespace();
const logged: string[] = [];

function configOf(transit: Record<string, unknown>, extra = '', top: Record<string, unknown> = {}) {
  return (
    JSON.stringify({
      ...top,
      backends: Array.from({ length: 6 }, (_, i) => ({ id: `transit-m${i}`, kind: 'memory', domain: `local/transit-${i}` })),
      policies: { ec: { k: 4, m: 2, blockSize: 4096 } },
      defaultPolicy: 'ec',
      credentials: [{ accessKeyId: ACCESS, secretAccessKey: SECRET }],
      encryption: {
        keys: [{ id: 'g1', secret: 'SG_KEY' }],
        active: 'g1',
        kmsKeys: ['plain-key', { id: 'vaulted', transit: { address: vault.address, key: 'shardgate', tokenSecret: 'VAULT_TOKEN', ...transit } }],
      },
    }) + extra
  );
}

/** A gateway isolate: its app, and signed S3 and admin calls through it. */
function isolate(n: number, transit: Record<string, unknown> = {}, token = TOKEN, top: Record<string, unknown> = {}) {
  const env = {
    SHARDGATE_CONFIG: configOf(transit, ' '.repeat(n), top),
    SHARDGATE_LOCAL_DEV: '1',
    CATALOG: catalog,
    SG_KEY: GATEWAY_KEY,
    VAULT_TOKEN: token,
  } as unknown as Env;
  const app: Hono = appFor(env) as unknown as Hono;
  const gateway = gatewayFor(env);
  const signer = new AwsClient({ accessKeyId: ACCESS, secretAccessKey: SECRET, service: 's3', region: 'us-east-1', retries: 0 });
  const send = async (method: string, path: string, o: { body?: string; headers?: Record<string, string> } = {}) => {
    const headers = { ...o.headers, ...(method === 'PUT' || method === 'POST' ? { 'content-length': String(Buffer.byteLength(o.body ?? '')) } : {}) };
    const req = await signer.sign(`http://localhost/${path}`, { method, body: o.body, headers });
    const res = await app.fetch(req, env);
    const text = method === 'HEAD' ? '' : await res.text();
    return {
      status: res.status,
      text,
      headers: res.headers,
      code: /<Code>([^<]+)<\/Code>/.exec(text)?.[1],
      sse: [res.headers.get('x-amz-server-side-encryption'), res.headers.get('x-amz-server-side-encryption-aws-kms-key-id')],
    };
  };
  const admin = async (route: string) => {
    const res = await app.fetch(await signer.sign(`http://localhost/_shardgate/admin/${route}`, { method: 'POST' }), env);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  return { env, app, gateway, send, admin };
}

/**
 * `shardgate keys ...` (cli/commands/keys.ts) against isolate `g`: the CLI's requests to the
 * gateway go to its app (no socket), those to Vault to the double; its --json answer.
 */
async function shardgateKeys(g: ReturnType<typeof isolate>, args: string[]): Promise<{ code: number; json: Record<string, unknown> }> {
  const real = globalThis.fetch;
  const out: string[] = [];
  const route = vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    return req.url.startsWith(vault.address) ? real(req) : g.app.fetch(req, g.env);
  });
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    out.push(String(chunk));
    return true;
  });
  try {
    const code = await keysCommand.run([...args, '--endpoint', 'http://localhost', '--access-key-id', ACCESS, '--secret-access-key', SECRET, '--json']);
    return { code, json: JSON.parse(out.join('')) as Record<string, unknown> };
  } finally {
    route.mockRestore();
    write.mockRestore();
  }
}

const kms = { 'x-amz-server-side-encryption': 'aws:kms', 'x-amz-server-side-encryption-aws-kms-key-id': 'vaulted' };
let first: ReturnType<typeof isolate>;
let puts = 0;

beforeAll(async () => {
  vault = await startTransitServer({ token: TOKEN });
  vault.createKey('shardgate');
  // Every log line the gateways write, to check the token is in none of them.
  for (const level of ['log', 'warn', 'error'] as const)
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(' ')));
  first = isolate(0);
  // Writes to the backends, counted on the memory backends every isolate shares.
  for (const b of first.gateway.backends) {
    const put = b.put.bind(b);
    b.put = (...a: Parameters<typeof put>) => {
      puts++;
      return put(...a);
    };
  }
  expect((await first.send('PUT', B)).status).toBe(200);
});

afterAll(async () => {
  vi.restoreAllMocks();
  await vault?.close();
});

describe('SSE-KMS under a transit-backed key', () => {
  it('PUT, GET, HEAD, a range, CopyObject and a multipart upload: aws:kms with the ARN, the bytes back; one Vault encrypt (the version) and one decrypt in all', async () => {
    for (const [key, body] of [
      ['small', SMALL],
      ['large', LARGE],
    ] as const) {
      const put = await first.send('PUT', `${B}/${key}`, { body, headers: kms });
      expect([put.status, ...put.sse], put.text).toEqual([200, 'aws:kms', ARN]);
      const got = await first.send('GET', `${B}/${key}`);
      expect([got.status, got.text === body, ...got.sse]).toEqual([200, true, 'aws:kms', ARN]);
      expect((await first.send('HEAD', `${B}/${key}`)).sse).toEqual(['aws:kms', ARN]);
      expect((await first.send('GET', `${B}/${key}`, { headers: { range: 'bytes=5-20' } })).text).toBe(body.slice(5, 21));
    }
    // Copy from a plain object into the transit key, and from the transit key into SSE-S3.
    await first.send('PUT', `${B}/plain`, { body: LARGE });
    const copy = await first.send('PUT', `${B}/copied`, { headers: { ...kms, 'x-amz-copy-source': `/${B}/plain` } });
    expect([copy.status, ...copy.sse], copy.text).toEqual([200, 'aws:kms', ARN]);
    expect((await first.send('GET', `${B}/copied`)).text).toBe(LARGE);
    const out = await first.send('PUT', `${B}/out`, { headers: { 'x-amz-server-side-encryption': 'AES256', 'x-amz-copy-source': `/${B}/large` } });
    expect([out.status, out.sse[0]]).toEqual([200, 'AES256']);
    expect((await first.send('GET', `${B}/out`)).text).toBe(LARGE);
    // Multipart: the upload's key, its part sealed under it.
    const created = await first.send('POST', `${B}/mpu?uploads`, { headers: kms });
    expect(created.sse).toEqual(['aws:kms', ARN]);
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created.text)![1]!;
    const part = await first.send('PUT', `${B}/mpu?partNumber=1&uploadId=${encodeURIComponent(uploadId)}`, { body: LARGE });
    expect([part.status, ...part.sse]).toEqual([200, 'aws:kms', ARN]);
    const etag = part.headers.get('etag')!;
    const done = await first.send('POST', `${B}/mpu?uploadId=${encodeURIComponent(uploadId)}`, {
      body: `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${etag}</ETag></Part></CompleteMultipartUpload>`,
    });
    expect(done.status, done.text).toBe(200);
    const got = await first.send('GET', `${B}/mpu`);
    expect([got.text === LARGE, ...got.sse]).toEqual([true, 'aws:kms', ARN]);
    expect([vault.calls.encrypt, vault.calls.decrypt]).toEqual([1, 1]);
    // The key table holds Vault's ciphertext, not material the gateway's own key opens.
    const { body } = await first.admin('kms-keys');
    const shown = (body.keys as { id: string; transit?: boolean; versions: { wrappedUnder: string; transitVersion?: number }[] }[]).find(
      (k) => k.id === 'vaulted',
    )!;
    expect(shown).toMatchObject({ transit: true, versions: [{ wrappedUnder: 'transit:transit/shardgate', transitVersion: 1 }] });
    // A key of the same config without transit stays the gateway's own.
    expect((await first.send('PUT', `${B}/own`, { body: SMALL, headers: { ...kms, 'x-amz-server-side-encryption-aws-kms-key-id': 'plain-key' } })).status).toBe(
      200,
    );
    expect(vault.calls.encrypt).toBe(1);
  });

  it('a fresh isolate reads every object with one Vault decrypt for the key version; the token went only to Vault', async () => {
    const before = vault.calls.decrypt ?? 0;
    const fresh = isolate(1);
    for (const [key, body] of [
      ['small', SMALL],
      ['large', LARGE],
      ['copied', LARGE],
      ['mpu', LARGE],
    ]) {
      const got = await fresh.send('GET', `${B}/${key}`);
      expect([got.status, got.text === body], key).toEqual([200, true]);
    }
    expect(vault.calls.decrypt - before).toBe(1);
    expect(new Set(vault.seen.map((s) => s.token))).toEqual(new Set([TOKEN]));
  });

  it('Vault rotates the transit key; the rewrap moves every version to it with no backend write; a new shardgate version is wrapped by Vault too', async () => {
    vault.rotate('shardgate');
    const before = puts;
    // `shardgate keys rewrap`: Vault re-wraps the one version; the admin route's answer says so.
    expect(await shardgateKeys(first, ['rewrap', 'vaulted'])).toMatchObject({ code: 0, json: { transitRewrapped: 1, rewrap: { done: true } } });
    expect(vault.calls.rewrap).toBe(1);
    const again = await first.admin('kms-keys/rewrap?id=vaulted');
    expect(again).toMatchObject({ status: 200, body: { id: 'vaulted', transitRewrapped: 0, done: true } });
    // `shardgate keys rotate`: the shardgate key's version 2, wrapped by Vault's latest; the data keys move to it.
    expect(await shardgateKeys(first, ['rotate', 'vaulted'])).toMatchObject({ code: 0, json: { key: { version: 2, transit: true }, rewrap: { done: true } } });
    expect(puts - before).toBe(0);
    const { body } = await first.admin('kms-keys');
    const shown = (body.keys as { id: string; versions: { transitVersion?: number }[] }[]).find((k) => k.id === 'vaulted')!;
    expect(shown.versions.map((v) => v.transitVersion)).toEqual([2, 2]);
    // Vault no longer decrypts its version 1: everything still opens, in a fresh isolate too.
    vault.setMinDecryptionVersion('shardgate', 2);
    const fresh = isolate(2);
    for (const [key, body] of [
      ['small', SMALL],
      ['large', LARGE],
      ['mpu', LARGE],
    ])
      expect((await fresh.send('GET', `${B}/${key}`)).text, key).toBe(body);
    expect((await fresh.send('PUT', `${B}/after-rotation`, { body: LARGE, headers: kms })).status).toBe(200);
    expect((await isolate(3).send('GET', `${B}/after-rotation`)).text).toBe(LARGE);
  });

  it('Vault refusing (token denied, transit key deleted) refuses writes and reads with KMS.KMSInvalidStateException; a Vault that does not answer gives 503 with Retry-After and stores nothing', async () => {
    const listed = async (g: ReturnType<typeof isolate>) => (await g.send('GET', `${B}?list-type=2`)).text.match(/<Key>[^<]+<\/Key>/g) ?? [];
    const keysBefore = await listed(first);
    vault.mode = 'deny';
    const denied = isolate(4);
    const refused = await denied.send('GET', `${B}/large`);
    expect(refused).toMatchObject({ status: 400, code: 'KMS.KMSInvalidStateException' });
    // The client learns the key cannot be used, not where Vault is; the operator's log says what Vault answered.
    expect(refused.text).not.toContain(vault.address);
    expect(logged.filter((l) => l.includes('transit call failed') && l.includes('"kind":"Denied"') && l.includes('permission denied'))).not.toEqual([]);
    expect(await denied.send('HEAD', `${B}/large`)).toMatchObject({ status: 400 });
    expect(await denied.send('PUT', `${B}/refused`, { body: SMALL, headers: kms })).toMatchObject({ status: 400, code: 'KMS.KMSInvalidStateException' });
    expect(await denied.send('PUT', `${B}/refused-copy`, { headers: { 'x-amz-copy-source': `/${B}/large` } })).toMatchObject({
      status: 400,
      code: 'KMS.KMSInvalidStateException',
    });
    // An object of the gateway's own keys is not the transit key's business.
    expect((await denied.send('GET', `${B}/plain`)).text).toBe(LARGE);
    vault.mode = 'refuse';
    const cut = isolate(5);
    const unreachable = await cut.send('GET', `${B}/large`);
    expect([unreachable.status, unreachable.code, unreachable.headers.get('retry-after')]).toEqual([503, 'ServiceUnavailable', '5']);
    expect(unreachable.text).not.toContain('vvvv');
    expect(await cut.send('PUT', `${B}/never`, { body: LARGE, headers: kms })).toMatchObject({ status: 503, code: 'ServiceUnavailable' });
    // A Vault that stalls: each call is bounded by the request's deadline (here backendWaitMs of 1 ms,
    // so no test waits for time): 503, where an unbounded call would hang the request.
    vault.mode = 'stall';
    const hurried = isolate(13, {}, TOKEN, { backendWaitMs: 1 });
    expect(await hurried.send('GET', `${B}/large`)).toMatchObject({ status: 503, code: 'ServiceUnavailable' });
    expect(await hurried.send('PUT', `${B}/never`, { body: SMALL, headers: kms })).toMatchObject({ status: 503, code: 'ServiceUnavailable' });
    vault.release();
    vault.mode = 'sealed';
    expect(await cut.send('GET', `${B}/small`)).toMatchObject({ status: 503, code: 'ServiceUnavailable' });
    vault.mode = 'throttle';
    const slow = await cut.send('GET', `${B}/small`);
    expect([slow.status, slow.code, slow.headers.get('retry-after')]).toEqual([503, 'SlowDown', '5']);
    vault.mode = 'normal';
    vault.deleteKey('shardgate');
    expect(await isolate(6).send('GET', `${B}/small`)).toMatchObject({ status: 400, code: 'KMS.KMSInvalidStateException' });
    expect(await listed(first)).toEqual(keysBefore);
    // Within its cache period, an isolate that holds the material keeps serving (docs/OPERATING.md): `first` does.
    expect((await first.send('GET', `${B}/small`)).text).toBe(SMALL);
    vault.createKey('shardgate'); // a new key of the name: not the one that wrapped the material
    expect(await isolate(7).send('GET', `${B}/small`)).toMatchObject({ status: 400, code: 'KMS.KMSInvalidStateException' });
  });

  it('the deployment review: a token secret not set is refused; the probe names a wrong token and a missing transit key on the status page, never the token', async () => {
    const review = reviewDeployment(parseConfig(configOf({})), { SG_KEY: GATEWAY_KEY });
    expect(review.refusals).toContainEqual(expect.stringMatching(/KMS key "vaulted" .*token secret VAULT_TOKEN, which is not set/));
    expect(review.warnings).toContainEqual(expect.stringMatching(/KMS key "vaulted" .*without TLS/));
    vault.createKey('shardgate-ok');
    const warningsOf = async (g: ReturnType<typeof isolate>) =>
      ((await g.gateway.ops.status({ signed: true, hours: 0.1, probe: true })).doc.deployment.warnings ?? []).filter((w) => w.includes('transit'));
    expect(await warningsOf(isolate(8, { key: 'shardgate-ok' }))).toEqual([]);
    const wrongToken = await warningsOf(isolate(9, { key: 'shardgate-ok' }, 'hvs.wrong-token-also-secret'));
    expect(wrongToken).toEqual([expect.stringMatching(/KMS key "vaulted" .*refuses the token/)]);
    expect(await warningsOf(isolate(10, { key: 'no-such-transit-key' }))).toEqual([expect.stringMatching(/KMS key "vaulted" .*has no such transit key/)]);
    vault.mode = 'refuse';
    expect(await warningsOf(isolate(11, { key: 'shardgate-ok' }))).toEqual([expect.stringMatching(/is not reachable/)]);
    vault.mode = 'normal';
    // Through the operator route as `shardgate status` reads it, too.
    const g = isolate(12, { key: 'no-such-transit-key' });
    const signer = new AwsClient({ accessKeyId: ACCESS, secretAccessKey: SECRET, service: 's3', region: 'us-east-1', retries: 0 });
    const res = await g.app.fetch(await signer.sign('http://localhost/_shardgate/status', { method: 'GET' }), g.env);
    const text = await res.text();
    expect(text).toContain('has no such transit key');
    // `shardgate status` prints it (signed); unsigned, only that there are warnings.
    const doc = JSON.parse(text) as StatusLike;
    expect(render(doc)).toMatch(/WARNING deployment: the Vault\/OpenBao transit key of KMS key "vaulted" .*has no such transit key/);
    const unsigned = (await (await g.app.fetch(new Request('http://localhost/_shardgate/status'), g.env)).json()) as StatusLike;
    expect(render(unsigned)).not.toContain('Vault');
    expect(render(unsigned)).toMatch(/deployment warning\(s\): give a key to see them/);
    for (const secret of [TOKEN, 'hvs.wrong-token-also-secret']) {
      expect(text).not.toContain(secret);
      expect(logged.filter((l) => l.includes(secret))).toEqual([]);
    }
  });
});

describe('the transit client', () => {
  it("a Vault that stalls is cut off at the request's bound (Timeout), and a bound already spent makes no call", async () => {
    const stall = await startTransitServer({ token: TOKEN });
    stall.createKey('k');
    const deadline = new AbortController();
    let ms = 60_000;
    const client = new TransitClient({ address: stall.address, mount: 'transit', key: 'k', token: TOKEN }, () => ({ ms, signal: deadline.signal }));
    const ct = await client.encrypt(new Uint8Array(32).fill(3));
    expect(ct).toMatch(/^vault:v1:/);
    stall.mode = 'stall';
    const pending = client.decrypt(ct);
    // The request's deadline passes (the test drives it: no wait for time).
    while (!stall.seen.some((s) => s.path.includes('decrypt'))) await new Promise((r) => setTimeout(r, 1));
    deadline.abort();
    const err = await pending.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransitError);
    expect((err as TransitError).kind).toBe('Timeout');
    expect((err as Error).message).not.toContain(TOKEN);
    const calls = stall.seen.length;
    ms = 0;
    await expect(new TransitClient(client.settings, () => ({ ms })).decrypt(ct)).rejects.toMatchObject({ kind: 'Timeout' });
    expect(stall.seen.length).toBe(calls);
    await stall.close();
  });
});

describe('dev/vault-transit-check.ts (the check to run against a real Vault or OpenBao)', () => {
  it('passes against the double and fails a missing key, never printing the token', async () => {
    const v = await startTransitServer({ token: TOKEN });
    v.createKey('shardgate');
    const good = await checkTransit({ address: v.address, token: TOKEN, key: 'shardgate' });
    expect(good.lines.map((l) => l.split(':')[0])).toEqual([
      'ok    read key',
      'ok    encrypt',
      'ok    decrypt',
      'ok    rewrap, decrypt',
      'ok    a wrong token is refused',
    ]);
    expect(good.ok).toBe(true);
    const missing = await checkTransit({ address: v.address, token: TOKEN, key: 'nope' });
    expect([missing.ok, missing.lines[0]]).toEqual([false, expect.stringMatching(/^FAIL {2}read key: .*404/)]);
    expect([...good.lines, ...missing.lines].join('\n')).not.toContain(TOKEN);
    await v.close();
  });
});

describe('the material a transit-backed key keeps', () => {
  it('is kept cacheMs (the test drives the clock), then asked of Vault again: a revocation refuses from then on; a ciphertext moved to another key does not open', async () => {
    const v = await startTransitServer({ token: TOKEN });
    v.createKey('k');
    const catalog = localCatalog();
    let now = 1_000_000;
    const backing = () =>
      new Map([
        ...['t', 't2'].map(
          (id) => [id, { client: new TransitClient({ address: v.address, mount: 'transit', key: 'k', token: TOKEN }), cacheMs: 60_000 }] as const,
        ),
      ]);
    const keys = new KmsKeys({ catalog, ring: DEV_KEY_RING, region: 'us-east-1', transit: backing(), now: () => now });
    expect((await keys.forWrite('t')).kid).toBe('~kms/t/1');
    expect([v.calls.encrypt, v.calls.decrypt]).toEqual([1, 1]);
    now += 59_999;
    await keys.checkReadable('t');
    expect(v.calls.decrypt).toBe(1);
    v.mode = 'deny';
    await keys.checkReadable('t'); // within the period: kept
    now += 1;
    await expect(keys.checkReadable('t')).rejects.toMatchObject({ code: 'KMS.KMSInvalidStateException' });
    await expect(keys.forWrite('t')).rejects.toMatchObject({ code: 'KMS.KMSInvalidStateException' });
    v.mode = 'normal';
    await keys.checkReadable('t');
    expect(v.calls.decrypt).toBe(2);
    // Key t2's row given t's ciphertext (a catalog edit): Vault opens it, the binding to "t2/1" does not.
    await keys.forWrite('t2');
    const t = (await keys.get('t'))!;
    const before = JSON.stringify(await keys.get('t2'));
    const moved = { ...JSON.parse(before), versions: [{ ...JSON.parse(before).versions[0], wrapped: t.versions[0]!.wrapped }] };
    expect(await catalog.replaceKmsKey('t2', before, JSON.stringify(moved))).toBe(true);
    const other = new KmsKeys({ catalog, ring: DEV_KEY_RING, region: 'us-east-1', transit: backing() });
    await expect(other.checkReadable('t2')).rejects.toMatchObject({
      code: 'KMS.KMSInvalidStateException',
      message: expect.stringMatching(/not this key version's material/),
    });
    await other.checkReadable('t');
    // The gateway's own key rotation leaves Vault-wrapped versions to Vault.
    expect(await other.rewrapMaterials()).toBe(0);
    expect((await other.get('t'))!.versions.map((x) => x.kid)).toEqual(['transit:transit/k']);
    await v.close();
  });
});
