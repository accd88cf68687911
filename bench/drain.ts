/**
 * What draining a backend costs (issue 26): requests, bytes and time per GiB of shard files moved,
 * measured against the mover's own estimate made before anything moved, and what a drain of 1 TiB
 * would cost on each priced provider. In one process: the product's engine (sealed with the
 * development key, as `npm start` writes), catalog (SQLite in process) and mover
 * (worker/upkeep/drain.ts) over seven s3rver processes on loopback, 4+2, each its own failure
 * domain; one of them is drained. No client traffic: test/upkeep/drain-s3rver.test.ts proves the
 * drain under load; this measures it alone.
 *   usage: npm run bench:drain [-- --mib N (object bytes written, default 1024) --quick (64)]
 */
import { parseArgs } from 'node:util';
import { cpus, loadavg } from 'node:os';
import type { Backend } from '../backends/types.ts';
import { CountedBackend } from '../test/support/counted-backend.ts';
import { engineSettings, parseConfig } from '../worker/config/config.ts';
import { PRICE_PRESETS } from '../worker/config/price-list.ts';
import { EcStore } from '../worker/engine/ec-store.ts';
import { UnitStore } from '../worker/engine/unit-store.ts';
import { collectGarbage } from '../worker/upkeep/collector.ts';
import { drainBatch, type FleetBackend } from '../worker/upkeep/drain.ts';
import { estimateDrain } from '../worker/upkeep/drain-estimate.ts';
import { drainProgress } from '../worker/upkeep/drain-progress.ts';
import { S3rverProcess, s3rverBackend } from '../test/backends/s3rver-harness.ts';
import { DEV_KEY_RING } from '../test/support/dev-encryption.ts';
import { localCatalog } from '../test/support/local-catalog.ts';
import { prng, randomBytes } from '../test/support/random.ts';

const { values } = parseArgs({ options: { mib: { type: 'string' }, quick: { type: 'boolean' } } });
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const TOTAL = (values.quick ? 64 : Number(values.mib ?? 1024)) * MiB;
const OBJECT = values.quick ? 4 * MiB : 16 * MiB;
const N = 7;
const DRAINED = 's3rver-3';
const BUCKET = 'drain-bench';
const GRACE_MS = 500;

const ids = Array.from({ length: N }, (_, i) => `s3rver-${i}`);
const servers = ids.map(() => new S3rverProcess());
const fmt = (n: number, d = 2) => n.toFixed(d);

async function main(): Promise<void> {
  await Promise.all(servers.map((s) => s.start()));
  try {
    const backendOf = (i: number) => s3rverBackend(servers[i]!, { id: ids[i]!, domain: `local/s3rver-${i}`, timeoutMs: 30_000 });
    const configOf = (state: 'active' | 'draining') =>
      parseConfig({
        backends: ids.map((id, i) => ({ id, kind: 'memory', domain: `local/s3rver-${i}`, ...(id === DRAINED ? { state } : {}) })),
        policies: { main: { k: 4, m: 2 } },
        defaultPolicy: 'main',
      });
    const catalog = localCatalog({ garbageGraceMs: GRACE_MS });
    const before = configOf('active');
    const store = new EcStore({
      catalog,
      units: new UnitStore(
        ids.map((_, i) => backendOf(i)),
        () => {},
        { keyRing: DEV_KEY_RING, placeOn: ids },
      ),
      settings: engineSettings(before),
    });
    await store.createBucket(BUCKET, { region: 'us-east-1' });
    const rand = prng(26);
    const data = randomBytes(rand, OBJECT);
    const t0 = Date.now();
    for (let at = 0, i = 0; at < TOTAL; at += OBJECT, i++) {
      data[0] = i & 0xff; // a distinct object each time, without a fresh buffer per object
      const body = new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(data), c.close()) });
      await store.putObject(BUCKET, `obj-${String(i).padStart(5, '0')}`, body, {
        contentLength: OBJECT,
        metadata: { user: {} },
        checksum: null,
        conditions: {},
      });
    }
    const writeSeconds = (Date.now() - t0) / 1000;

    const fleet: FleetBackend[] = configOf('draining').backends.map((b) => ({ id: b.id, domain: b.domain, state: b.state }));
    const leaving = fleet.filter((b) => b.state !== 'active');
    const prices = Object.fromEntries(ids.map((id) => [id, PRICE_PRESETS['aws-s3-standard']]));
    const estimate = await estimateDrain(catalog, DRAINED, fleet, prices);
    const counted = new Map(ids.map((id, i) => [id, new CountedBackend(backendOf(i))]));
    const deps = { catalog, backends: new Map<string, Backend>(counted), graceMs: GRACE_MS, fleet };
    const t1 = process.hrtime.bigint();
    const cpu1 = process.cpuUsage();
    let moved = 0,
      bytes = 0,
      runs = 0;
    for (;;) {
      const r = await drainBatch(deps, { maxMoves: 10_000, deadline: Date.now() + 3_600_000 });
      moved += r.copied + r.rebuilt;
      bytes += r.bytes;
      runs++;
      const left = (await drainProgress(catalog, leaving))[0]!.left.shards;
      if (left === 0) break;
      if (runs > 20) throw new Error(`the drain did not finish: ${left} shards left after ${runs} runs (${r.waiting} waiting: ${r.waits[0]?.error ?? ''})`);
    }
    const seconds = Number(process.hrtime.bigint() - t1) / 1e9;
    const cpu = process.cpuUsage(cpu1);
    await new Promise((r) => setTimeout(r, GRACE_MS + 100));
    await collectGarbage(catalog, new Map<string, Backend>(counted));

    const sum = (f: (c: CountedBackend) => number) => [...counted.values()].reduce((n, c) => n + f(c), 0);
    const gets = sum((c) => c.gets),
      puts = sum((c) => c.puts),
      deletes = sum((c) => c.deletes),
      egress = sum((c) => c.bytesOut);
    const gib = bytes / GiB;
    const per = (n: number) => n / gib;
    let filesLeft = 0;
    for (let cursor: string | undefined; ; ) {
      const page = await backendOf(3).list('', cursor);
      filesLeft += page.entries.length;
      if (!(cursor = page.cursor)) break;
    }

    console.log(
      `drain bench: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    console.log(
      `wrote ${TOTAL / MiB} MiB in ${TOTAL / OBJECT} objects of ${OBJECT / MiB} MiB (4+2, sealed, 7 s3rver backends) in ${fmt(writeSeconds, 1)} s; drained ${DRAINED}: ${filesLeft} files left on it after the collector`,
    );
    console.log('');
    console.log('| measure | estimated before | measured | ratio |');
    console.log('|---|---|---|---|');
    console.log(`| shards moved | ${estimate.shards} | ${moved} | ${fmt(moved / estimate.shards)} |`);
    console.log(`| shard-file bytes moved | ${estimate.bytes} | ${bytes} | ${fmt(bytes / estimate.bytes)} |`);
    console.log(`| backend GETs | ${estimate.total.gets} | ${gets} | ${fmt(gets / estimate.total.gets)} |`);
    console.log(`| backend PUTs | ${estimate.total.puts} | ${puts} | ${fmt(puts / estimate.total.puts)} |`);
    console.log(`| backend DELETEs (after the grace delay) | ${estimate.total.deletes} | ${deletes} | ${fmt(deletes / Math.max(1, estimate.total.deletes))} |`);
    console.log(`| egress bytes (read from backends) | ${estimate.total.egressBytes} | ${egress} | ${fmt(egress / estimate.total.egressBytes)} |`);
    console.log('');
    console.log(
      `per GiB of shard files moved: ${fmt(per(gets), 0)} GETs, ${fmt(per(puts), 0)} PUTs, ${fmt(per(deletes), 0)} DELETEs, ${fmt(per(egress) / GiB, 3)} GiB read; ` +
        `${fmt(seconds / gib, 1)} s (${fmt(bytes / MiB / seconds, 1)} MiB/s, ${runs} mover run(s), one move at a time), gateway CPU ${fmt((cpu.user + cpu.system) / 1e6 / gib, 1)} s`,
    );
    console.log('');
    // 1 TiB of shard files off a backend priced as X, onto backends priced as Y: the source pays
    // egress and GETs (DELETEs are free on every listed provider), the targets pay PUTs.
    const TiB = 1024;
    console.log(
      `draining 1 TiB of shard files (at the per-GiB figures above; list prices of ${Object.keys(PRICE_PRESETS).length} presets, worker/config/price-list.ts):`,
    );
    console.log('');
    console.log('| provider | paid as the drained backend (egress + GETs) | paid as a target (PUTs) |');
    console.log('|---|---|---|');
    for (const [name, p] of Object.entries(PRICE_PRESETS)) {
      const source = TiB * (per(egress) / GiB) * p.egressPerGB + ((TiB * per(gets)) / 1000) * p.getPer1000;
      const target = ((TiB * per(puts)) / 1000) * p.putPer1000;
      console.log(`| ${name} | $${fmt(source)} | $${fmt(target)} |`);
    }
  } finally {
    await Promise.allSettled(servers.map((s) => s.dispose()));
  }
}

await main();
