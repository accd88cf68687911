/**
 * Issue 26's re-stripe proof at reduced scale, in one Node process: the product's engine (EcStore,
 * UnitStore, sealed with the development key), catalog (CatalogObject over SQLite), collector and
 * re-stripe (upkeep/restripe.ts) over twelve real s3rver backends (four s3rver processes serving
 * three buckets each; each backend its own failure domain). A versioned bucket of 300 keys (inline,
 * single PUTs up to 300 KiB, multipart objects, keys with several versions) written 4+2 is
 * re-striped 8+3 while clients run mixed GET / PUT / overwrite / DELETE (delete markers and
 * deletes of named versions) on it. Afterwards: every version any client or the setup wrote and
 * did not delete reads back byte-identical by its version id, every key's current version is the
 * last one written (or its delete marker), no client read failed during the move, the units left
 * only ever went down to 0, every unit is 8+3, and once the grace delay has passed the collector
 * has deleted every old shard: the backends hold exactly the shard files of the units the
 * catalog references.
 * (The workerd end-to-end through the admin API and the cron is not here: see docs/OPERATING.md.)
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../backends/types.ts';
import { S3rverProcess, s3rverBackend } from '../backends/s3rver-harness.ts';
import { listAll } from '../backends/helpers.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { shardKey } from '../../worker/format/shard-key.ts';
import { S3Error } from '../../worker/model/errors.ts';
import { collectGarbage } from '../../worker/upkeep/collector.ts';
import { restripeBatch, type RestripeReport } from '../../worker/upkeep/restripe.ts';
import { restripeProgress } from '../../worker/upkeep/restripe-progress.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { prng, randomBytes } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';

const PROCESSES = 4;
const PER_PROCESS = 3;
const BUCKET = 'restripe-proof';
/**
 * Keys written before the move (proofs at two sizes, docs/TESTING.md): 120 in `npm test` (8
 * multipart objects, 14 keys with two versions: every kind the move must carry), 300 in
 * `npm run test:full`; RESTRIPE_PROOF_KEYS=1000 runs the full-size proof (several minutes).
 */
const KEYS = Number(process.env.RESTRIPE_PROOF_KEYS ?? (process.env.SHARDGATE_FULL_SIZE === '1' ? 300 : 120));
const GRACE_MS = 2000;
const KiB = 1024;

let servers: S3rverProcess[] = [];
const names = Array.from({ length: PER_PROCESS }, (_, j) => `b${j}`);
const ids = Array.from({ length: PROCESSES * PER_PROCESS }, (_, i) => `s3rver-${i}`);
const backendOf = (i: number): Backend =>
  s3rverBackend(servers[Math.floor(i / PER_PROCESS)]!, {
    id: ids[i]!,
    domain: `local/s3rver-${i}`,
    bucket: names[i % PER_PROCESS]!,
    timeoutMs: 10_000,
    retries: 1,
  });

beforeAll(async () => {
  servers = Array.from({ length: PROCESSES }, () => new S3rverProcess(names));
  await Promise.all(servers.map((s) => s.start()));
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(servers.map((s) => s.dispose()));
}, 60_000);

function configOf(policy: 'old' | 'wide') {
  return parseConfig({
    backends: ids.map((id, i) => ({ id, kind: 'memory', domain: `local/s3rver-${i}` })),
    policies: { old: { k: 4, m: 2, blockSize: 64 * KiB }, wide: { k: 8, m: 3, blockSize: 64 * KiB } },
    defaultPolicy: 'old',
    buckets: { [BUCKET]: policy },
  });
}

const body = (bytes: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(bytes), c.close()) });
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

describe('re-striping a bucket 4+2 -> 8+3 over twelve s3rver backends', () => {
  it(
    'rewrites every version while clients read and write; every version reads back byte-identical, the old shards are collected after the grace delay',
    async () => {
      const catalog = localCatalog({ garbageGraceMs: GRACE_MS });
      const units = new UnitStore(
        ids.map((_, i) => backendOf(i)),
        () => {},
        { keyRing: DEV_KEY_RING },
      );
      const storeOf = (policy: 'old' | 'wide') => new EcStore({ catalog, units, settings: { ...engineSettings(configOf(policy)), minPartSize: 100 * KiB } });
      const rand = prng(2626);
      const before = storeOf('old');
      await before.createBucket(BUCKET, { region: 'us-east-1' });
      await before.config.putBucketVersioning(BUCKET, 'Enabled');
      // Every version written and not deleted, by key: version id -> MD5, oldest first; `current`: the key's last write (null: a delete marker).
      const versions = new Map<string, Map<string, string>>();
      const current = new Map<string, string | null>();
      const wrote = (key: string, versionId: string, sum: string) => {
        (versions.get(key) ?? versions.set(key, new Map()).get(key)!).set(versionId, sum);
        current.set(key, sum);
      };
      const putOne = async (store: EcStore, key: string, r: () => number) => {
        // About 8% inline (4 KiB or less), the rest from 5 to 300 KiB, log-uniform.
        const size = r() < 0.08 ? Math.floor(r() * 4000) : Math.floor(5 * KiB * Math.exp(r() * Math.log(60)));
        const data = randomBytes(r, size);
        const res = await store.putObject(BUCKET, key, body(data), { contentLength: size, metadata: { user: {} }, checksum: null, conditions: {} });
        wrote(key, res.versionId!, md5(data));
      };
      for (let i = 0; i < KEYS; i++) {
        const key = `obj-${String(i).padStart(3, '0')}`;
        if (i % 15 === 7) {
          const up = await before.createMultipartUpload(BUCKET, key, { metadata: { user: {} }, checksum: null });
          const pieces = [randomBytes(rand, 100 * KiB + i), randomBytes(rand, 120 * KiB), randomBytes(rand, 30 * KiB)];
          const parts = [];
          for (const [n, piece] of pieces.entries())
            parts.push({
              partNumber: n + 1,
              etag: (await before.uploadPart(BUCKET, key, up.uploadId, n + 1, body(piece), { contentLength: piece.length, checksum: null })).etag,
            });
          const done = await before.completeMultipartUpload(BUCKET, key, up.uploadId, parts, { conditions: {} });
          wrote(key, done.versionId!, md5(Buffer.concat(pieces)));
        } else {
          await putOne(before, key, rand);
          if (i % 9 === 0) await putOne(before, key, rand); // a second version
        }
      }
      const start = (await restripeProgress(catalog, engineSettings(configOf('wide'))))[0]!;
      expect(start.left.units).toBeGreaterThan(KEYS * 0.85);

      // The operator moves the bucket to 8+3 (a redeploy: a new store over the same catalog).
      const store = storeOf('wide');
      let stop = false;
      const failedReads: string[] = [];
      const counts = { reads: 0, writes: 0, markers: 0, versionDeletes: 0 };
      const busy = new Set<string>();
      const client = async (seed: number) => {
        const r = prng(seed);
        let n = 0;
        while (!stop) {
          const keys = [...current.keys()];
          const roll = r();
          const key = roll < 0.15 ? `new-${seed}-${n++}` : keys[Math.floor(r() * keys.length)]!;
          if (busy.has(key)) continue;
          busy.add(key);
          try {
            if (roll < 0.25) {
              await putOne(store, key, r); // a new key, or an overwrite (a new version)
              counts.writes++;
            } else if (roll < 0.29) {
              const res = await store.deleteObject(BUCKET, key); // a delete marker on top
              if (res.deleteMarker) current.set(key, null);
              counts.markers++;
            } else if (roll < 0.32) {
              // A named version deleted for good (the re-stripe may be rewriting it right now).
              const own = versions.get(key);
              const victim = own && [...own.keys()][Math.floor(r() * own.size)];
              if (victim) {
                await store.deleteObject(BUCKET, key, { versionId: victim });
                own.delete(victim);
                counts.versionDeletes++;
                const newest = await catalog.getVersion(BUCKET, key, null);
                current.set(key, newest.kind === 'object' ? (own.get(newest.manifest.versionId) ?? null) : null);
              }
            } else if (current.get(key)) {
              try {
                const got = await store.getObject(BUCKET, key, { conditions: {} });
                if (md5(await readBytes(got.body)) !== current.get(key)) failedReads.push(`${key}: MD5 differs`);
              } catch (err) {
                failedReads.push(`${key}: ${(err as Error).message}`);
              }
              counts.reads++;
            }
          } finally {
            busy.delete(key);
          }
        }
      };
      const clients = [client(1), client(2), client(3)];

      // The re-stripe, run by run as the cron runs it, with the collector between runs.
      const deps = { catalog, units, settings: engineSettings(configOf('wide')), graceMs: GRACE_MS, writeReservationSeconds: 3600, fleet: [] };
      const byId = new Map<string, Backend>(ids.map((id, i) => [id, backendOf(i)]));
      const lefts = [start.left.units];
      const reports: RestripeReport[] = [];
      for (let run = 0; run < 20 + KEYS; run++) {
        const r = await restripeBatch(deps, { maxVersions: 25, maxRequests: 2000, deadline: Date.now() + 60_000 });
        reports.push(r);
        await collectGarbage(catalog, byId);
        const [p] = await restripeProgress(catalog, deps.settings);
        lefts.push(p?.left.units ?? 0);
        if (p?.done && !r.stopped) break;
      }
      stop = true;
      await Promise.all(clients);
      const total = reports.reduce(
        (t, r) => ({ rewritten: t.rewritten + r.rewritten, conflicts: t.conflicts + r.conflicts, failed: t.failed + r.failed, blocked: t.blocked + r.blocked }),
        { rewritten: 0, conflicts: 0, failed: 0, blocked: 0 },
      );
      console.log(
        `restripe: ${reports.length} runs, ${total.rewritten} versions rewritten, ${total.conflicts} lost to clients, ${total.failed} failed, ${total.blocked} blocked; ` +
          `left ${lefts.join(' ')}; clients ${counts.reads} reads, ${counts.writes} writes, ${counts.markers} delete markers, ${counts.versionDeletes} versions deleted`,
      );

      // Left only went down, to 0; no client read failed while the versions moved.
      for (let i = 1; i < lefts.length; i++) expect(lefts[i], `left ${lefts.join(' ')}`).toBeLessThanOrEqual(lefts[i - 1]!);
      expect(lefts.at(-1)).toBe(0);
      expect(failedReads).toEqual([]);
      expect(total.rewritten).toBeGreaterThan(KEYS * 0.85);
      expect(total.blocked).toBe(0);
      expect(counts.reads).toBeGreaterThan(50);
      expect(counts.writes + counts.markers + counts.versionDeletes).toBeGreaterThan(10);

      // Every unit is 8+3 (objects of 4 KiB or less are inline: no unit).
      const referenced = new Map<string, Set<string>>(ids.map((id) => [id, new Set()]));
      for (let after: string | null = null; ; ) {
        const page = await catalog.listUnits(BUCKET, after, 500);
        if (!page.length) break;
        for (const r of page) {
          expect(`${r.unit.k}+${r.unit.m}`, `${r.key}@${r.versionId}`).toBe('8+3');
          r.unit.placement.forEach((id, i) => referenced.get(id)!.add(shardKey(BUCKET, r.unitId, i)));
        }
        after = page.at(-1)!.unitId;
      }
      // Every version left reads back byte-identical by its id; each key's current version is its last write.
      for (const [key, own] of versions) {
        for (const [versionId, sum] of own) {
          const got = await store.getObject(BUCKET, key, { conditions: {}, versionId });
          expect(md5(await readBytes(got.body)), `${key}@${versionId}`).toBe(sum);
        }
        const want = current.get(key);
        if (want) expect(md5(await readBytes((await store.getObject(BUCKET, key, { conditions: {} })).body)), key).toBe(want);
        else await expect(store.getObject(BUCKET, key, { conditions: {} })).rejects.toBeInstanceOf(S3Error);
      }

      // After the grace delay the collector deletes every old shard: each backend holds exactly the
      // shard files of the units the catalog references.
      await new Promise((r) => setTimeout(r, GRACE_MS + 200));
      await collectGarbage(catalog, byId);
      for (const [i, id] of ids.entries()) expect((await listAll(backendOf(i), '')).sort(), id).toEqual([...referenced.get(id)!].sort());
    },
    600_000 + KEYS * 1500,
  );
});
