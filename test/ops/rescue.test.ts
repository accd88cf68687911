/**
 * `shardgate rescue` and `verify`: the proof that data never depends on the gateway. Objects are
 * stored through the real gateway (single PUTs of several sizes, a key with non-ASCII characters,
 * an overwritten key, a multipart upload); then the gateway is stopped, its catalog deleted and
 * m = 2 of its 6 backends deleted; the command, run as a person runs it, must write every object
 * back byte for byte from what is left. Twice: from a wrangler state directory (npm start's
 * local R2 buckets, read as files) and from S3-compatible endpoints (six s3rver processes, two of
 * them gone). `verify` reports what is missing and, once a third shard of an object is damaged,
 * that this object is lost, and rescue then refuses to write it.
 * Sealed (encrypted) units: objects written through an EcStore whose unit store has a key ring,
 * the backends copied to directories (one as nameless blobs, as miniflare keeps them), the
 * catalog dropped and 2 backends gone: with the key every object comes back byte for byte; without
 * it the sealed units are listed with the key id they need and nothing of them is written; verify
 * checks their blocks either way.
 */
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalGateway } from '../../dev/local-gateway.ts';
import { disposeServers, gatewayConfig, startGateway, startServers } from '../engine-s3rver/gateway-harness.ts';
import type { S3rverProcess } from '../backends/s3rver-harness.ts';
import { shardgate } from './helpers.ts';
import { DEV_KEY_VALUE } from '../../worker/config/key-ring.ts';
import { MemoryBackend } from '../../backends/index.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { KmsKeys } from '../../worker/engine/kms-keys.ts';
import { flushJournal } from '../../worker/upkeep/journal.ts';
import { KeyRing, SEAL_RECORD_BYTES, sealedSize } from '../../worker/format/seal.ts';
import { parseShardKey, shelfDirectory } from '../../worker/format/shard-key.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { prng, randomBytes as seeded } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';
import { oneAttemptS3Client } from '../support/s3-connections.ts';

const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
/** The local default config and the test harness seal with the development key (wrangler.toml). */
const DEV_KEY = ['--key', `dev=${DEV_KEY_VALUE}`];

/** What the tests store: key -> bytes (the newest write of each key). */
async function storeObjects(s3: S3Client, bucket: string): Promise<Map<string, Uint8Array>> {
  const stored = new Map<string, Uint8Array>();
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const put = async (key: string, body: Uint8Array) => {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    stored.set(key, body);
  };
  await put('small.bin', randomBytes(5000)); // just over the inline threshold: coded
  await put('photos/2024/\u00fc & \u4f60\u597d.jpg', randomBytes(2_500_000 + 17)); // several stripes, a short last one
  await put('over', randomBytes(300_000));
  await put('over', randomBytes(400_000)); // the old version is still on the backends: the newest must win
  const key = 'big/upload.bin';
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
  const parts = [randomBytes(5 * 1024 * 1024), randomBytes(1234)];
  const etags: string[] = [];
  for (const [i, p] of parts.entries())
    etags.push((await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: i + 1, Body: p }))).ETag!);
  await s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: bucket,
      Key: key,
      UploadId,
      MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
    }),
  );
  stored.set(key, Buffer.concat(parts));
  return stored;
}

function expectRescued(out: string, bucket: string, stored: Map<string, Uint8Array>, except: string[] = []) {
  for (const [key, bytes] of stored) {
    if (except.includes(key)) continue;
    const got = readFileSync(join(out, bucket, ...key.split('/')));
    expect(got.length, key).toBe(bytes.length);
    expect(md5(got), key).toBe(md5(bytes));
  }
}

describe('rescue from a wrangler state directory: no gateway, no catalog, 2 of 6 backends gone', { timeout: 300_000 }, () => {
  let dir: string;
  let state: string;
  let stored: Map<string, Uint8Array>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shardgate-rescue-'));
    state = join(dir, 'state');
    const g = await startLocalGateway({ port: 0, hosts: ['127.0.0.1'], stateDir: state, cronSeconds: 0 });
    try {
      const s3 = oneAttemptS3Client(g.url.toString(), { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' });
      stored = await storeObjects(s3, 'vault');
    } finally {
      await g.close();
    }
    rmSync(join(state, 'v3', 'do'), { recursive: true, force: true }); // the catalog
    for (const gone of ['shardgate-local-1', 'shardgate-local-4']) rmSync(join(state, 'v3', 'r2', gone), { recursive: true, force: true });
  }, 240_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('writes every object back byte for byte', async () => {
    const out = join(dir, 'out');
    const run = await shardgate(['rescue', ...DEV_KEY, '--wrangler-state', state, '--out', out, '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as {
      summary: { objects: number; rescued: number };
      objects: { key: string; status: string; decodedAround: unknown[]; multipart?: unknown }[];
    };
    expect(report.summary).toMatchObject({ objects: stored.size, rescued: stored.size });
    expect(report.objects.every((o) => o.status === 'ok' && o.decodedAround.length > 0)).toBe(true); // every object lost shards
    expect(report.objects.find((o) => o.key === 'big/upload.bin')?.multipart).toMatchObject({ parts: 2 });
    expectRescued(out, 'vault', stored);
  });

  it('verify names the missing shards, then a third damaged shard of one object makes it lost', async () => {
    const before = await shardgate(['verify', ...DEV_KEY, '--wrangler-state', state, '--json']);
    expect(before.code).toBe(1); // damage, all recoverable
    const r1 = JSON.parse(before.stdout) as { summary: { degraded: number; lost: number }; problems: { backend: string; problem: string }[] };
    expect(r1.summary).toMatchObject({ degraded: stored.size, lost: 0 });
    expect(new Set(r1.problems.map((p) => p.backend))).toEqual(new Set(['local-1', 'local-4']));
    expect(r1.problems.every((p) => p.problem === 'missing')).toBe(true);

    // Flip one byte inside a block of the current 'over' shard on local-0 (not its header). Its
    // header is sealed (no key in it): the one unit of 400,000 bytes is known by its stored size.
    const blobs = join(state, 'v3', 'r2', 'shardgate-local-0', 'blobs');
    const file = readdirSync(blobs)
      .map((f) => join(blobs, f))
      .find((f) => {
        const head = readFileSync(f).subarray(0, 2048).toString('latin1');
        return head.includes(`"size":${sealedSize(400_000, SEAL_RECORD_BYTES)},`) && !head.includes('"segment"');
      })!;
    expect(file, "the 'over' shard on local-0").toBeDefined();
    const bytes = readFileSync(file);
    bytes[bytes.length - 5000]! ^= 0x40;
    writeFileSync(file, bytes);

    const after = await shardgate(['verify', ...DEV_KEY, '--wrangler-state', state]);
    expect(after.code).toBe(3);
    expect(after.stdout).toMatch(/^LOST vault\/over: /m);
    expect(after.stdout).toMatch(/vault\/over unit [\w.]+ shard \d+ on local-0: .*checksum/);
    const out = join(dir, 'out-2');
    const rescue = await shardgate(['rescue', ...DEV_KEY, '--wrangler-state', state, '--out', out]);
    expect(rescue.code).toBe(1);
    expect(rescue.stdout).toMatch(/^FAILED {2}vault\/over: /m);
    expect(() => readFileSync(join(out, 'vault', 'over'))).toThrow(); // never written with wrong bytes
    expectRescued(out, 'vault', stored, ['over']);
  });
});

describe('rescue from S3-compatible backends: 2 of 6 s3rver processes gone', { timeout: 300_000 }, () => {
  let servers: S3rverProcess[];
  let dir: string;
  let stored: Map<string, Uint8Array>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shardgate-rescue-s3-'));
    servers = await startServers(6);
    const g = await startGateway(gatewayConfig(servers, { blockSize: 65536 }));
    try {
      stored = await storeObjects(g.client(), 'vault');
    } finally {
      await g.dispose(); // the catalog goes with the gateway's state directory
    }
    await disposeServers([servers[0]!, servers[3]!]);
  }, 240_000);

  afterAll(async () => {
    if (servers) await disposeServers(servers);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('writes every object back byte for byte, reading the four endpoints left', async () => {
    const out = join(dir, 'out');
    const from = [1, 2, 4, 5].flatMap((i) => ['--from', `${servers[i]!.endpoint.replace('http://', 'http://S3RVER:S3RVER@')}/b`]);
    const run = await shardgate(['rescue', ...DEV_KEY, ...from, '--bucket', 'vault', '--out', out, '--json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).summary).toMatchObject({ objects: stored.size, rescued: stored.size });
    expectRescued(out, 'vault', stored);
    const only = await shardgate(['rescue', ...DEV_KEY, ...from, '--prefix', 'photos/', '--out', join(dir, 'only'), '--json']);
    expect(JSON.parse(only.stdout).objects.map((o: { key: string }) => o.key)).toEqual(['photos/2024/\u00fc & \u4f60\u597d.jpg']);
  });
});

describe('rescue and verify of sealed units: with the key, without it, with another key under its id', { timeout: 300_000 }, () => {
  const KEY_A = btoa(String.fromCharCode(...Array.from({ length: 32 }, (_, i) => i + 1)));
  const KEY_OTHER = btoa(String.fromCharCode(...Array.from({ length: 32 }, (_, i) => 200 - i)));
  const GONE = ['m1', 'm6'];
  let dir: string;
  let from: string[];
  /** bucket -> key -> bytes. */
  const stored = new Map<string, Map<string, Uint8Array>>();
  /** Sealed units on the backends (every bucket but 'clear'). */
  const sealedUnits = new Set<string>();
  let objectCount = 0;

  const rescued = (out: string, bucket: string, key: string) => join(out, bucket, ...key.split('/'));
  const expectAll = (out: string, buckets = [...stored.keys()]) => {
    for (const b of buckets) {
      for (const [key, bytes] of stored.get(b)!) {
        const got = readFileSync(rescued(out, b, key));
        expect(got.length, `${b}/${key}`).toBe(bytes.length);
        expect(md5(got), `${b}/${key}`).toBe(md5(bytes));
      }
    }
  };
  const expectNoneSealed = (out: string) => {
    for (const b of ['vault', 'wide']) for (const key of stored.get(b)!.keys()) expect(existsSync(rescued(out, b, key)), `${b}/${key} written`).toBe(false);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shardgate-rescue-sealed-'));
    const rand = prng(2424);
    const backends = Array.from({ length: 11 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` }));
    const config = parseConfig({
      backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { main: { k: 4, m: 2, blockSize: 16384 }, wide: { k: 8, m: 3, blockSize: 16384 }, clear: { k: 4, m: 2, blockSize: 16384, encrypt: false } },
      defaultPolicy: 'main',
      buckets: { wide: 'wide', clear: 'clear' },
    });
    const ring = KeyRing.fromBase64({ a: KEY_A }, 'a');
    // 8+3 column units of 8 x 128 KiB: a 3 MB object is several segments.
    const units = new UnitStore(backends, () => {}, { keyRing: ring, columnParityBytes: 3 * 8 * 16384 });
    const store = new EcStore({ catalog: localCatalog({ garbageGraceMs: 0 }), units, settings: { ...engineSettings(config), minPartSize: 5000 } });
    const body = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });
    const put = async (bucket: string, key: string, size: number) => {
      const data = seeded(rand, size);
      await store.putObject(bucket, key, body(data), {
        contentLength: size,
        metadata: { user: {}, contentType: 'application/octet-stream' },
        checksum: null,
        conditions: {},
      });
      stored.get(bucket)!.set(key, data);
    };
    for (const b of ['vault', 'wide', 'clear']) {
      await store.createBucket(b, { region: 'us-east-1' });
      stored.set(b, new Map());
    }
    await put('vault', 'small.bin', 5000); // over the inline threshold: coded
    await put('vault', 'records/edge', SEAL_RECORD_BYTES + 1);
    await put('vault', 'photos/\u00fc & \u4f60\u597d.jpg', 1_000_000 + 17);
    await put('wide', 'segmented.bin', 3_000_000); // several column segments
    await put('clear', 'plain.txt', 70_000); // a policy with encrypt: false, beside the sealed ones
    const parts = [seeded(rand, 6000), seeded(rand, 70_001)];
    const up = await store.createMultipartUpload('vault', 'multi/part.bin', { metadata: { user: {} }, checksum: null });
    const infos = [];
    for (const [i, p] of parts.entries())
      infos.push(await store.uploadPart('vault', 'multi/part.bin', up.uploadId, i + 1, body(p), { contentLength: p.length, checksum: null }));
    await store.completeMultipartUpload(
      'vault',
      'multi/part.bin',
      up.uploadId,
      infos.map((p) => ({ partNumber: p.partNumber, etag: p.etag })),
      { conditions: {} },
    );
    stored.get('vault')!.set('multi/part.bin', Buffer.concat(parts));
    objectCount = [...stored.values()].reduce((n, m) => n + m.size, 0);

    // The backends as directories (the catalog is not kept): named copies, and m3 as nameless
    // blobs (a wrangler R2 directory); m1 and m6 are gone.
    from = [];
    const clearDirectories = [shelfDirectory(await ring.shelf('clear')), 'clear']; // the clear policy's units: shelved, not sealed
    for (const b of backends) {
      const root = join(dir, b.id);
      for (let cursor: string | undefined, first = true; first || cursor; first = false) {
        const page = await b.list('', cursor);
        for (const e of page.entries) {
          const named = parseShardKey(e.key);
          if (named && !clearDirectories.includes(named.directory)) sealedUnits.add(named.unitId);
          if (GONE.includes(b.id)) continue;
          const path = b.id === 'm3' ? join(root, 'blobs', md5(new TextEncoder().encode(e.key))) : join(root, e.key);
          mkdirSync(dirname(path), { recursive: true });
          writeFileSync(path, await readBytes((await b.get(e.key)).body));
        }
        cursor = page.cursor;
      }
      if (!GONE.includes(b.id)) from.push('--from', root);
    }
  }, 240_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('with the key (--key) writes every object back byte for byte, sealed and clear', async () => {
    const out = join(dir, 'out-key');
    const run = await shardgate(['rescue', ...from, '--key', `a=${KEY_A}`, '--out', out, '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as {
      summary: Record<string, unknown>;
      objects: { bucket: string; key: string; status: string; sealedUnder?: string[]; multipart?: unknown; decodedAround: unknown[] }[];
    };
    expect(report.summary).toMatchObject({ objects: objectCount, rescued: objectCount, failed: 0, sealedUnread: 0, keysNeeded: [] });
    for (const o of report.objects) expect(o.sealedUnder, `${o.bucket}/${o.key}`).toEqual(o.bucket === 'clear' ? undefined : ['a']);
    expect(report.objects.find((o) => o.key === 'multi/part.bin')?.multipart).toMatchObject({ parts: 2 });
    expect(report.objects.every((o) => o.decodedAround.length > 0)).toBe(true); // every unit lost shards
    expectAll(out);
  });

  it('without the key, names the sealed units and the key id, restores none of them (the clear object still comes back)', async () => {
    const out = join(dir, 'out-nokey');
    const run = await shardgate(['rescue', ...from, '--out', out, '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout) as {
      summary: Record<string, unknown>;
      objects: { bucket: string; status: string }[];
      sealed: { unitId: string; kid: string; bucket: string | null; shards: number; reason: string }[];
    };
    expect(report.summary).toMatchObject({ objects: 1, rescued: 1, sealedUnread: sealedUnits.size, keysNeeded: ['a'] });
    expect(report.objects.map((o) => o.bucket)).toEqual(['clear']);
    expect(new Set(report.sealed.map((u) => u.unitId))).toEqual(sealedUnits);
    for (const u of report.sealed) {
      expect(u.kid).toBe('a');
      expect(u.reason).toMatch(/key "a"/);
      expect(u.bucket, "a shelved unit's file name names no bucket").toBeNull();
    }
    expectNoneSealed(out);
    expectAll(out, ['clear']);

    const text = await shardgate(['rescue', ...from, '--out', join(dir, 'out-nokey-text')]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^SEALED {2}unit \S+ \(\d+ shard\(s\)\): sealed under key "a", which was not given; not read, nothing written$/m);
    expect(text.stdout).toContain(`${sealedUnits.size} sealed unit(s) could not be opened: they need key(s) "a"; give them with --key`);
  });

  it('another key under the same id (--keys-file) opens nothing and says so', async () => {
    const file = join(dir, 'other-keys.json');
    writeFileSync(file, JSON.stringify({ a: KEY_OTHER }));
    const out = join(dir, 'out-other');
    const run = await shardgate(['rescue', ...from, '--keys-file', file, '--out', out, '--json']);
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout) as { summary: Record<string, unknown>; sealed: { reason: string }[] };
    expect(report.summary).toMatchObject({ rescued: 1, sealedUnread: sealedUnits.size, keysNeeded: ['a'] });
    expect(report.sealed.every((u) => /does not open with the key given for it/.test(u.reason))).toBe(true);
    expectNoneSealed(out);
    expect(run.stdout).not.toContain(KEY_OTHER);
    const bad = await shardgate(['rescue', ...from, '--key', 'a=bm90IDMyIGJ5dGVz', '--out', out]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/key "a" \(--key\) is not base64 of 32 bytes/);
  });

  it('verify: with the key (SHARDGATE_KEYS) decrypts and checks every object; without it checks the sealed units block by block and names the key', async () => {
    const keyed = await shardgate(['verify', ...from, '--json'], { SHARDGATE_KEYS: JSON.stringify({ a: KEY_A }) });
    expect(keyed.code).toBe(1); // shards missing, all recoverable
    const r1 = JSON.parse(keyed.stdout) as { summary: Record<string, unknown>; problems: { backend: string; problem: string }[] };
    expect(r1.summary).toMatchObject({ objects: objectCount, degraded: objectCount, lost: 0, sealedUnread: 0 });
    expect(new Set(r1.problems.map((p) => p.backend))).toEqual(new Set(GONE));

    const bare = await shardgate(['verify', ...from, '--json']);
    expect(bare.code).toBe(1);
    const r2 = JSON.parse(bare.stdout) as {
      summary: Record<string, unknown>;
      problems: { unitId: string; backend: string; problem: string }[];
      sealed: { unitId: string; kid: string; state: string }[];
    };
    expect(r2.summary).toMatchObject({ objects: 1, lost: 0, sealedUnread: sealedUnits.size, sealedLost: 0, keysNeeded: ['a'] });
    expect(r2.sealed.every((u) => u.kid === 'a' && u.state === 'degraded')).toBe(true);
    expect(r2.problems.every((p) => GONE.includes(p.backend) && p.problem === 'missing')).toBe(true);

    // A flipped byte inside a block of a sealed wide shard: found without the key; the object still comes back with it.
    const wideShelf = await KeyRing.fromBase64({ a: KEY_A }, 'a').shelf('wide');
    const wide = join(dir, 'm0', 'sg1', shelfDirectory(wideShelf));
    const files = readdirSync(wide).flatMap((u) => readdirSync(join(wide, u)).map((i) => join(wide, u, i)));
    const file = files.sort((a, b) => statSync(b).size - statSync(a).size)[0]!;
    const bytes = readFileSync(file);
    bytes[Math.floor(bytes.length / 2)]! ^= 0x40;
    writeFileSync(file, bytes);
    const damagedUnit = `${wideShelf}.${basename(dirname(file))}`.replace('.', '\\.');
    const damaged = await shardgate(['verify', ...from]);
    expect(damaged.code).toBe(1);
    expect(damaged.stdout).toMatch(new RegExp(`^\\(bucket unknown\\)/\\(sealed: key "a"\\) unit ${damagedUnit} shard \\d+ on m0: .*checksum`, 'm'));
    expect(damaged.stdout).toMatch(
      new RegExp(`^SEALED unit ${damagedUnit}: sealed under key "a", which was not given; shards checked block by block: degraded \\(recoverable\\)`, 'm'),
    );
    const out = join(dir, 'out-damaged');
    const run = await shardgate(['rescue', ...from, '--key', `a=${KEY_A}`, '--out', out]);
    expect(run.code).toBe(0);
    expectAll(out);
  });
});

describe('rescue of SSE-KMS objects (issue 43): the named keys from the bucket list journal', { timeout: 300_000 }, () => {
  it('with the gateway key, every SSE-KMS object comes back byte for byte, under either version of its key; without the journal the shards stay locked, naming the key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardgate-rescue-kms-'));
    try {
      const KEY_A = btoa(String.fromCharCode(...Array.from({ length: 32 }, (_, i) => i + 7)));
      const rand = prng(43);
      const backends = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `k${i}`, domain: `zone-${i}` }));
      const config = parseConfig({
        backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
        policies: { main: { k: 4, m: 2, blockSize: 16384, small: { threshold: 1024, mode: 'inline' } } },
        defaultPolicy: 'main',
      });
      const catalog = localCatalog({ garbageGraceMs: 0 });
      const kms = new KmsKeys({ catalog, ring: KeyRing.fromBase64({ a: KEY_A }, 'a'), region: 'us-east-1' });
      const units = new UnitStore(backends, () => {}, { keyRing: kms.ring });
      const store = new EcStore({ catalog, units, settings: engineSettings(config), kms });
      const body = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });
      const stored = new Map<string, Uint8Array>();
      const put = async (key: string, size: number) => {
        const data = seeded(rand, size);
        await store.putObject('kms', key, body(data), {
          contentLength: size,
          metadata: { user: {} },
          checksum: null,
          conditions: {},
          sse: { kind: 'kms', keyId: 'rescued-key' },
        });
        stored.set(key, data);
      };
      await kms.create('rescued-key');
      await store.createBucket('kms', { region: 'us-east-1' });
      await put('v1/coded.bin', 40_000);
      await kms.rotate('rescued-key'); // new writes under version 2; the first object's header stays under version 1
      await put('v2/coded.bin', 70_000);
      await put('v2/inline.txt', 300); // inline: in the journal only
      const copyOut = async (to: string) => {
        const from: string[] = [];
        for (const b of backends) {
          const root = join(to, b.id);
          for (let cursor: string | undefined, first = true; first || cursor; first = false) {
            const page = await b.list('', cursor);
            for (const e of page.entries) {
              mkdirSync(dirname(join(root, e.key)), { recursive: true });
              writeFileSync(join(root, e.key), await readBytes((await b.get(e.key)).body));
            }
            cursor = page.cursor;
          }
          from.push('--from', root);
        }
        return from;
      };
      const noJournal = await copyOut(join(dir, 'before-journal')); // before any journal segment is stored
      expect((await flushJournal({ catalog, units, policy: config.policies.main! }, { deadline: Date.now() + 60_000 })).failed).toEqual([]);
      const from = await copyOut(join(dir, 'backends'));

      const out = join(dir, 'out');
      const run = await shardgate(['rescue', ...from, '--key', `a=${KEY_A}`, '--out', out, '--json']);
      expect(run.stderr).toBe('');
      expect(run.code, run.stdout.slice(0, 2000)).toBe(0);
      for (const [key, bytes] of stored) expect(md5(readFileSync(join(out, 'kms', ...key.split('/')))), key).toBe(md5(bytes));

      // verify opens them the same way: every SSE-KMS object decrypted and checked (its MD5, its records' tags), none left sealed.
      const verified = await shardgate(['verify', ...from, '--key', `a=${KEY_A}`, '--json']);
      expect(verified.code, verified.stdout.slice(0, 2000)).toBe(0);
      const checked = JSON.parse(verified.stdout) as {
        summary: { sealedUnread: number; keysNeeded: string[]; lost: number };
        objects: { bucket: string; key: string; state: string }[];
      };
      expect(checked.summary).toMatchObject({ sealedUnread: 0, keysNeeded: [], lost: 0 });
      const kmsKeys = [...stored.keys()].filter((k) => k !== 'v2/inline.txt'); // the inline one has no shards
      expect(
        checked.objects
          .filter((o) => o.bucket === 'kms')
          .map((o) => [o.key, o.state])
          .sort(),
      ).toEqual(kmsKeys.sort().map((k) => [k, 'intact']));

      // Without the journal (its shard files not given) the key table is unknown: the SSE-KMS shards stay locked, naming the key version.
      const locked = await shardgate(['rescue', ...noJournal, '--key', `a=${KEY_A}`, '--out', join(dir, 'out-locked'), '--json']);
      const report = JSON.parse(locked.stdout) as { summary: { keysNeeded: string[]; rescued: number } };
      expect(report.summary.rescued).toBe(0);
      expect(report.summary.keysNeeded).toEqual(['~kms/rescued-key/1', '~kms/rescued-key/2']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
