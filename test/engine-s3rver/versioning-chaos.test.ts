/**
 * Issue 25's chaos proof: a bucket with versioning Enabled under the faults of outage.test.ts and
 * redundancy.test.ts. The gateway in workerd over six s3rver processes, 4+2, 64 KiB blocks, its
 * state kept in a directory so that it can be killed (SIGKILL) and started again on it. One
 * writer per key (two racing on the many-stripe one) overwrites it again and again (inline-small,
 * one stripe, many stripes, and a two-part multipart upload), every body distinct, while backends are killed (one: writes still
 * succeed; two: below the write quorum, refused) and restarted, and the gateway is killed twice
 * in the middle of PUTs (once with an upload held half-sent) and started again.
 * Every version the bucket stores is announced to a webhook (at least once), nothing else is, and
 * each key's events follow its commit order by sequencer (issue 40).
 * The bucket is split into 4 catalog partitions when made, and one of them split again on line
 * while the writers write (issue 39).
 * Then, checked against what the clients saw:
 * - every acknowledged version is listed by ListObjectVersions, under the id it was given, in
 *   commit order (never newer than a version whose write began after its own was answered), and
 *   reads back byte for byte by that id;
 * - a listed version nobody acknowledged is one whose answer was lost with the gateway (never a
 *   refused write), and holds exactly the body of that attempt: no corrupted version;
 * - once the reservations of the killed writes have expired and the collector has run (no grace),
 *   the backends hold no shard file that no stored version accounts for: per backend, the shard
 *   files of the bucket are exactly as many as the catalog's ledger counts for its versions, a
 *   full scrub pass finds every one of those on its backend, and every backend holds the same
 *   units (4+2 over six: one shard of each unit on each).
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectVersionsCommand,
  PutBucketNotificationConfigurationCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { AwsClient } from 'aws4fetch';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { GatewayClient } from '../../cli/gateway-client.ts';
import type { S3rverProcess } from '../backends/s3rver-harness.ts';
import { workerdPids } from '../support/proc.ts';
import { parseShardKey } from '../../worker/format/shard-key.ts';
import { bodyBytes, bodyStream, sha256Of } from './bytes.ts';
import { DEV_CREDENTIALS, disposeServers, gatewayConfig, killHard, restart, shardKeys, startGateway, startServers, type Gateway } from './gateway-harness.ts';

const KiB = 1024;
const MiB = 1024 * KiB;
const BUCKET = 'chaos';
/** A write killed with the gateway holds its reservation this long; then the collector takes its shards. */
const RESERVATION_SECONDS = 20;
const PART = 5 * MiB; // S3's smallest part but the last

/** The keys, each with its writer, and the size of attempt n (every attempt a distinct body). */
const KEYS = {
  tiny: (n: number) => 100 + ((n * 397) % 3000), // under the 4 KiB threshold: inline in the catalog
  'one-stripe': (n: number) => 150 * KiB + n, // one stripe of 4 x 64 KiB blocks, partly filled
  'multi-stripe': (n: number) => MiB + 100 * KiB + n * 1000, // five stripes
  multipart: (n: number) => PART + 64 * KiB + n, // two parts
} as const;
type Key = keyof typeof KEYS;
const seedOf = (key: string, n: number) => `${key}@${n}`;

let servers: S3rverProcess[] = [];
let gateway: Gateway | undefined;
let s3: S3Client;
let endpoint: string;
const stateDir = mkdtempSync(join(tmpdir(), 'shardgate-versioning-chaos-'));

/** Resolves while the gateway answers; replaced by a pending one while it is down. */
let up: Promise<void> = Promise.resolve();
/** When the gateway was last killed: the reservations of the writes it cut off expire by then + RESERVATION_SECONDS. */
let lastKilledAt = 0;

/**
 * Event notifications (issue 40) under the same chaos: a webhook in this process receives every
 * event the gateway delivers (at least once: a kill mid-delivery may send one again).
 */
const received: { key: string; versionId: string; sequencer: string; eventName: string; eventId: string }[] = [];
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      Records?: { eventName: string; s3: { object: { key: string; versionId?: string; sequencer: string } } }[];
    };
    for (const r of body.Records ?? [])
      received.push({
        key: decodeURIComponent(r.s3.object.key.replace(/\+/g, ' ')),
        versionId: r.s3.object.versionId ?? '',
        sequencer: r.s3.object.sequencer,
        eventName: r.eventName,
        eventId: String(req.headers['x-shardgate-event-id'] ?? ''),
      });
    res.writeHead(200).end();
  });
});
let receiverPort = 0;

async function boot(): Promise<void> {
  const config = gatewayConfig(servers, { blockSize: 64 * KiB, timeoutMs: 3000 });
  const notifications = { destinations: { chaos: { webhook: `http://127.0.0.1:${receiverPort}/events`, secretValue: 'chaos-secret' } } };
  gateway = await startGateway({ ...config, notifications, garbageGraceSeconds: 0, writeReservationSeconds: RESERVATION_SECONDS }, { stateDir });
  endpoint = (await gateway.directUrl()).origin;
  s3 = gateway.client({ endpoint });
}

/** SIGKILL of every workerd of the gateway (no shutdown), then a new one on the same state. */
async function killGateway(): Promise<void> {
  let back!: () => void;
  up = new Promise<void>((r) => (back = r));
  for (const pid of workerdPids()) process.kill(pid, 'SIGKILL');
  lastKilledAt = Date.now();
  await gateway!.dispose().catch(() => {});
  await boot();
  back();
}

beforeAll(async () => {
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  receiverPort = (receiver.address() as AddressInfo).port;
  servers = await startServers(6);
  await boot();
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  await s3.send(new PutBucketVersioningCommand({ Bucket: BUCKET, VersioningConfiguration: { Status: 'Enabled' } }));
  await s3.send(
    new PutBucketNotificationConfigurationCommand({
      Bucket: BUCKET,
      NotificationConfiguration: { QueueConfigurations: [{ Id: 'all', QueueArn: 'arn:shardgate:sqs:::chaos', Events: ['s3:ObjectCreated:*'] }] },
    }),
  );
  // The bucket over 4 catalog partitions (issue 39), the keys spread over them; one more is split
  // off on line in the middle of the chaos (below).
  const split = (await operator().admin('partitions', { bucket: BUCKET, at: JSON.stringify(['multi', 'one', 'tiny']) })) as { ranges: unknown[] };
  expect(split.ranges).toHaveLength(4);
}, 180_000);

const operator = () => new GatewayClient({ endpoint, 'access-key-id': DEV_CREDENTIALS.accessKeyId, 'secret-access-key': DEV_CREDENTIALS.secretAccessKey }, {});

afterAll(async () => {
  receiver.close();
  await gateway?.dispose().catch(() => {});
  await disposeServers(servers);
  rmSync(stateDir, { recursive: true, force: true });
}, 120_000);

/** One write as its client saw it: acknowledged with a version id, or failed (with the HTTP status, if one came). */
/** `sentAt`..`doneAt`: from the request sent to the answer (or the failure) seen; a commit happens in between. */
type Attempt = { key: Key; n: number; sentAt: number; doneAt: number } & (
  | { acked: true; versionId: string }
  | { acked: false; status: number | undefined; error: string }
);

const attempts: Attempt[] = [];
/** The next attempt number of each key, shared by the key's writers: every attempt's body is distinct. */
const nextAttempt = new Map<Key, number>();

function failed(err: unknown): { acked: false; status: number | undefined; error: string } {
  const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  return { acked: false, status: e.$metadata?.httpStatusCode, error: `${e.name}: ${e.message}` };
}

async function putOnce(client: S3Client, key: Key, n: number): Promise<string | undefined> {
  const size = KEYS[key](n);
  const body = bodyBytes(seedOf(key, n), size);
  if (key !== 'multipart') return (await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }))).VersionId;
  const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }));
  const Parts = [];
  for (let at = 0, PartNumber = 1; at < size; at += PART, PartNumber++) {
    const part = await client.send(new UploadPartCommand({ Bucket: BUCKET, Key: key, UploadId, PartNumber, Body: body.subarray(at, at + PART) }));
    Parts.push({ ETag: part.ETag!, PartNumber });
  }
  return (await client.send(new CompleteMultipartUploadCommand({ Bucket: BUCKET, Key: key, UploadId, MultipartUpload: { Parts } }))).VersionId;
}

/** A writer of `key`: overwrites until stopped, one write at a time, waiting out the gateway's restarts. */
async function writer(key: Key, stop: () => boolean): Promise<void> {
  while (!stop()) {
    await up;
    const n = nextAttempt.get(key) ?? 0;
    nextAttempt.set(key, n + 1);
    const sentAt = performance.now();
    try {
      const versionId = await putOnce(s3, key, n);
      if (!versionId) throw new Error('acknowledged without a version id');
      attempts.push({ key, n, sentAt, doneAt: performance.now(), acked: true, versionId });
    } catch (err) {
      attempts.push({ key, n, sentAt, doneAt: performance.now(), ...failed(err) });
      await new Promise((r) => setTimeout(r, 100)); // no hot loop against a gateway that is down
    }
  }
}

/**
 * Listed versions (newest first, as attempts) out of commit order: a version listed as newer than
 * one whose write began only after its own write was answered. With one writer per key that is
 * any inversion; with two racing on a key, only what their clients saw in sequence is ordered.
 */
function reordered(listed: Attempt[]): string[] {
  const out: string[] = [];
  listed.forEach((newer, i) => {
    for (const older of listed.slice(i + 1)) {
      if (newer.doneAt < older.sentAt)
        out.push(`attempt ${newer.n} (answered at ${newer.doneAt}) listed newer than attempt ${older.n} (sent at ${older.sentAt})`);
    }
  });
  return out;
}

/** Waits until every key has `more` acknowledged writes beyond the count now. */
async function acksPerKey(more: number): Promise<void> {
  const count = (k: Key) => attempts.filter((a) => a.key === k && a.acked).length;
  const target = new Map((Object.keys(KEYS) as Key[]).map((k) => [k, count(k) + more]));
  const started = Date.now();
  while ([...target].some(([k, t]) => count(k) < t)) {
    if (Date.now() - started > 60_000) throw new Error(`writers stalled: ${JSON.stringify(Object.fromEntries([...target].map(([k]) => [k, count(k)])))}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A signed GET of the status page: the bucket's health as the catalog's ledger has it. */
async function bucketHealth(): Promise<{
  backends: Record<string, { shards: number }>;
  degradedUnits: number;
  reservations: { held: number };
  garbage: { queued: number };
  uploads: number;
}> {
  const signer = new AwsClient({ ...DEV_CREDENTIALS, service: 's3', region: 'us-east-1', retries: 0 });
  const res = await signer.fetch(new URL('/_shardgate/status', endpoint).toString(), { headers: { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } });
  expect(res.status).toBe(200);
  const doc = (await res.json()) as { buckets?: { bucket: string }[] };
  const mine = doc.buckets?.find((b) => b.bucket === BUCKET);
  if (!mine) throw new Error(`no health of bucket ${BUCKET} in the signed status`);
  return mine as never;
}

async function sha256OfVersion(key: string, versionId: string): Promise<string> {
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, VersionId: versionId }));
  const h = createHash('sha256');
  for await (const chunk of got.Body as AsyncIterable<Uint8Array>) h.update(chunk);
  return h.digest('hex');
}

async function listedVersions(): Promise<{ key: string; versionId: string; size: number }[]> {
  const out: { key: string; versionId: string; size: number }[] = [];
  let KeyMarker: string | undefined, VersionIdMarker: string | undefined;
  do {
    const page = await s3.send(new ListObjectVersionsCommand({ Bucket: BUCKET, KeyMarker, VersionIdMarker, MaxKeys: 7 })); // small pages: the paging is under test too
    expect(page.DeleteMarkers ?? [], 'nobody deleted anything').toEqual([]);
    for (const v of page.Versions ?? []) out.push({ key: v.Key!, versionId: v.VersionId!, size: v.Size! });
    [KeyMarker, VersionIdMarker] = page.IsTruncated ? [page.NextKeyMarker, page.NextVersionIdMarker] : [undefined, undefined];
  } while (KeyMarker);
  return out;
}

test('versioned overwrites under backend kills and gateway kills: no version lost, none reordered, none corrupted, no orphan shard', async () => {
  let stopping = false;
  // Two writers race on multi-stripe: commit order is then the catalog's to decide.
  const writers = [...(Object.keys(KEYS) as Key[]), 'multi-stripe' as const].map((k) => writer(k, () => stopping));

  await acksPerKey(2);
  // One backend down: writes reach 5 of 6 and are acknowledged.
  await killHard(servers[1]!);
  await acksPerKey(2);
  // Two down: below the write quorum (5), every write is refused; then both come back.
  await killHard(servers[4]!);
  const refusedFrom = attempts.length;
  while (attempts.slice(refusedFrom).filter((a) => !a.acked).length < 4) await new Promise((r) => setTimeout(r, 50));
  await restart(servers[1]!);
  await restart(servers[4]!);
  await acksPerKey(1);

  // A multipart upload with a part stored and no completion: the gateway dies under it, and its
  // client aborts it at the end (its part's shards must then go).
  const { UploadId: heldUpload } = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 'held-multipart' }));
  await s3.send(
    new UploadPartCommand({ Bucket: BUCKET, Key: 'held-multipart', UploadId: heldUpload, PartNumber: 1, Body: bodyBytes('held-multipart@0', PART) }),
  );
  // The gateway killed while an upload is half sent (and whatever the writers have in flight).
  let reached!: () => void;
  const atGate = new Promise<void>((r) => (reached = r));
  const held = bodyStream('held@0', MiB, { pauseAt: MiB / 2, reached, resume: new Promise<void>(() => {}) });
  const heldPut = s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'held', Body: held.stream, ContentLength: MiB })).then(
    () => 'acknowledged',
    (e: Error) => e.name,
  );
  await atGate;
  // An on-line split while the writers write and an upload is half sent: 'multi-stripe' and
  // 'multipart' go to partitions of their own.
  const online = (await operator().admin('partitions', { bucket: BUCKET, split: 'multipart', splitAt: 'multipart' })) as { partitions: { low: string }[] };
  expect(online.partitions.map((p) => p.low)).toEqual(['', 'multi', 'multipart', 'one', 'tiny']);
  await new Promise((r) => setTimeout(r, 200)); // the first half's shards on their way to the backends
  await killGateway();
  expect(await heldPut, 'the held PUT cannot have been acknowledged').not.toBe('acknowledged');
  await acksPerKey(1);
  // Killed again at whatever point the writers are at (the multipart writer is mostly mid-part).
  await killGateway();
  await acksPerKey(2);
  stopping = true;
  await Promise.all(writers);

  // What a client does with uploads it gave up on: aborts them (their parts become garbage).
  for (const u of (await s3.send(new ListMultipartUploadsCommand({ Bucket: BUCKET }))).Uploads ?? []) {
    await s3.send(new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: u.Key, UploadId: u.UploadId }));
  }

  // Every listed version, identified by its bytes: which attempt of its key wrote it.
  const listed = await listedVersions();
  expect(
    listed.filter((v) => v.key.startsWith('held')),
    'the half-sent PUT and the aborted upload left no version',
  ).toEqual([]);
  const problems: string[] = [];
  const lostAnswers: string[] = [];
  for (const key of Object.keys(KEYS) as Key[]) {
    const mine = attempts.filter((a) => a.key === key);
    const bySha = new Map(mine.map((a) => [sha256Of(seedOf(key, a.n), KEYS[key](a.n)), a]));
    const order: Attempt[] = []; // the listed versions' attempts, newest first
    for (const v of listed.filter((l) => l.key === key)) {
      const a = bySha.get(await sha256OfVersion(key, v.versionId));
      if (!a) problems.push(`${key} ${v.versionId}: bytes of no attempt (corrupted)`);
      else if (a.acked && a.versionId !== v.versionId) problems.push(`${key} ${v.versionId}: the bytes of attempt ${a.n}, acknowledged as ${a.versionId}`);
      else if (!a.acked && a.status !== undefined) problems.push(`${key} ${v.versionId}: attempt ${a.n}, refused with HTTP ${a.status}, is stored`);
      else if (!a.acked) lostAnswers.push(`${key} attempt ${a.n} (${a.error})`);
      if (a && KEYS[key](a.n) !== v.size) problems.push(`${key} ${v.versionId}: listed with size ${v.size}, attempt ${a.n} wrote ${KEYS[key](a.n)}`);
      if (a) order.push(a);
    }
    const acked = mine.filter((a) => a.acked).map((a) => a.n);
    const missing = acked.filter((n) => !order.some((a) => a.n === n));
    if (missing.length) problems.push(`${key}: acknowledged attempts ${missing.join(', ')} not listed`);
    for (const r of reordered(order)) problems.push(`${key}: ${r}`);
    expect(acked.length, `acknowledged overwrites of ${key}`).toBeGreaterThanOrEqual(8);
  }
  expect(problems).toEqual([]);

  // Every stored version announced, nothing else: each listed version has an ObjectCreated event
  // with its version id (at least once), no event names a version that is not stored (a refused
  // or lost write), and each key's distinct events, by sequencer, follow its versions' commit order.
  const listedIds = new Set(listed.map((v) => `${v.key} ${v.versionId}`));
  const announced = () => new Set(received.filter((e) => e.eventName.startsWith('ObjectCreated')).map((e) => `${e.key} ${e.versionId}`));
  for (let i = 0; i < 240 && [...listedIds].some((id) => !announced().has(id)); i++) await new Promise((r) => setTimeout(r, 250));
  const events = received.filter((e) => e.eventName.startsWith('ObjectCreated') && e.key !== 'held-multipart');
  expect(
    [...listedIds].filter((id) => !announced().has(id)),
    'stored versions never announced',
  ).toEqual([]);
  expect(
    events.filter((e) => !listedIds.has(`${e.key} ${e.versionId}`)).map((e) => `${e.key} ${e.versionId}`),
    'events of versions not stored',
  ).toEqual([]);
  for (const key of Object.keys(KEYS)) {
    const newestFirst = listed.filter((v) => v.key === key).map((v) => v.versionId);
    const bySequencer = [...new Map(events.filter((e) => e.key === key).map((e) => [e.versionId, e.sequencer])).entries()].sort((a, b) =>
      a[1] < b[1] ? -1 : 1,
    );
    expect(
      bySequencer.map(([v]) => v),
      `${key}: events in sequencer order are its versions in commit order`,
    ).toEqual([...newestFirst].reverse());
  }
  expect(
    attempts.some((a) => !a.acked && a.status === 503),
    'writes were refused below quorum',
  ).toBe(true);
  expect(
    attempts.some((a) => !a.acked && a.status === undefined),
    'writes were cut off by a gateway kill',
  ).toBe(true);

  // No orphan: wait out the killed writes' reservations and the repairs of the shards the killed
  // backends missed, then collect until nothing is left to collect.
  await new Promise((r) => setTimeout(r, Math.max(0, lastKilledAt + RESERVATION_SECONDS * 1000 + 1000 - Date.now())));
  const admin = new GatewayClient({ endpoint, 'access-key-id': DEV_CREDENTIALS.accessKeyId, 'secret-access-key': DEV_CREDENTIALS.secretAccessKey }, {});
  const shardFiles = async () =>
    Promise.all(servers.map(async (s) => (await shardKeys(s, BUCKET)).map((k) => parseShardKey(k)?.unitId ?? `not a shard: ${k}`)));
  let health = await bucketHealth();
  const beforeCollect = (await shardFiles()).map((units, i) => units.length - (health.backends[`s3rver-${i}`]?.shards ?? 0));
  // The aborted upload's part is still on every backend: the count below sees what no version accounts for.
  expect(
    beforeCollect.every((n) => n >= 1),
    `shard files beyond the ledger before collection: ${beforeCollect}`,
  ).toBe(true);
  for (let i = 0; i < 120 && (health.degradedUnits > 0 || health.reservations.held > 0 || health.garbage.queued > 0); i++) {
    await admin.admin('collect', {});
    await new Promise((r) => setTimeout(r, 500));
    health = await bucketHealth();
  }
  expect({ degraded: health.degradedUnits, reservations: health.reservations.held, garbage: health.garbage.queued, uploads: health.uploads }).toEqual({
    degraded: 0,
    reservations: 0,
    garbage: 0,
    uploads: 0,
  });
  const onDisk = await shardFiles();
  // Every shard of every stored unit is on its backend (a full scrub pass, shard sizes asked of
  // the backends, finds none missing), so equal counts below mean no file that no version accounts for.
  for (let checked = 0; checked < onDisk[0]!.length; ) {
    const r = (await admin.admin('scrub', { mode: 'heads' })) as { units: number; damaged: number };
    expect(r.damaged, 'shards of stored versions the scrubber found missing or damaged').toBe(0);
    expect(r.units, 'a scrub run checks some units').toBeGreaterThan(0);
    checked += r.units;
  }
  expect(
    onDisk.map((units) => units.length),
    'shard files per backend: as many as the ledger counts for the stored versions',
  ).toEqual(servers.map((_, i) => health.backends[`s3rver-${i}`]?.shards ?? 0));
  for (const units of onDisk.slice(1)) expect(new Set(units), 'every backend holds a shard of the same units').toEqual(new Set(onDisk[0]));
  console.log(
    'versioning chaos',
    JSON.stringify({
      attempts: attempts.length,
      acknowledged: attempts.filter((a) => a.acked).length,
      refused: attempts.filter((a) => !a.acked && a.status !== undefined).length,
      cutOff: attempts.filter((a) => !a.acked && a.status === undefined).length,
      storedUnacknowledged: lostAnswers,
      events: received.length,
      redelivered: received.length - new Set(received.map((e) => e.eventId)).size,
      units: onDisk[0]!.length,
      shardFilesBeyondTheLedgerBeforeCollection: beforeCollect,
    }),
  );
}, 240_000);
