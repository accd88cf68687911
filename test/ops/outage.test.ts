/**
 * Issue 13's "done when", end to end: the real gateway in workerd (six R2 backends behind fault
 * wrappers, the catalog and ops Durable Objects); an operator takes a backend down and sees it in
 * the Prometheus metrics (parsed strictly, and by the official Python client where installed) and in `shardgate status` at the
 * next read, sees the objects written meanwhile degraded, brings the backend back and watches
 * `shardgate repair` take the degraded objects to zero, in the metrics too. Along the way: who may
 * read what (unsigned status: no bucket names; unsigned metrics: refused), the scrubber and the
 * collector through the CLI, `--help` of every command.
 * The status page in Chromium at each state of the drill (healthy, one backend down, two down
 * with writes impossible, repaired): what its rendered DOM shows, and a screenshot of each in
 * test-output/drill/ (drill-page.ts); docs/OPERATING.md's runbook follows these steps.
 * Without Chromium (needs('chromium')) the page checks alone are skipped.
 */
import { main as cliMain } from '../../cli/shardgate.ts';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIALS, r2Config, removeDir, startGateway, type RunningGateway } from '../engine/harness.ts';
import { parseMetrics, shardgate, signer, valueOf, type Sample } from './helpers.ts';
import { needs } from '../support/prerequisites.ts';
import { DrillPage } from './drill-page.ts';

const DOWN = 'r2-4';
const BACKENDS = ['r2-0', 'r2-1', 'r2-2', 'r2-3', 'r2-4', 'r2-5'];

describe('operating through an outage: metrics, status, repair', { timeout: 240_000 }, () => {
  let g: RunningGateway;
  let cliEnv: Record<string, string>;
  let drill: DrillPage | undefined;
  /** The page, opened and signed in at its first use: one browser for the whole drill. */
  const statusPage = async () => (drill ??= await DrillPage.open(g.url, CREDENTIALS));
  /** The redundancy table's rows of policy 4+2, gateway-wide then bucket media, as the page shows them. */
  const ladderRows = (whole: string, short: string, atK = '0 | 0 B') =>
    ['all buckets', 'media'].flatMap((scope) => [
      `${scope} | 4+2 | 6 (whole) | ${whole}`,
      `${scope} | 4+2 | 5 | ${short}`,
      `${scope} | 4+2 | 4 (exactly k) | ${atK}`,
      `${scope} | 4+2 | below k (lost) | 0 | 0 B`,
    ]);

  beforeAll(async () => {
    g = await startGateway(r2Config());
    cliEnv = { SHARDGATE_ENDPOINT: g.url, AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey };
    const s3 = g.s3();
    await s3.send(new CreateBucketCommand({ Bucket: 'media' }));
    for (let i = 0; i < 3; i++) await s3.send(new PutObjectCommand({ Bucket: 'media', Key: `before-${i}`, Body: new Uint8Array(150_000).fill(i) }));
  }, 120_000);

  afterAll(async () => {
    await drill?.close();
    if (g) {
      await g.stop();
      removeDir(g.persistDir);
    }
  }, 60_000);

  async function metrics(): Promise<Sample[]> {
    const res = await signer(CREDENTIALS).fetch(`${g.url}/_shardgate/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return parseMetrics(await res.text());
  }

  it("an isolate's counts reach the shared record on their own, a few seconds after its requests", async () => {
    // No status read in between (it would flush): the flush the requests scheduled brings them.
    let puts = 0;
    for (let i = 0; i < 300 && puts < 3; i++) {
      const record = (await g.control('/__test/ops-record')) as { totals: { s3: Record<string, number> } };
      puts = record.totals.s3['PutObject 200'] ?? 0;
      if (puts < 3) await new Promise((r) => setTimeout(r, 100));
    }
    expect(puts).toBe(3);
  });

  it('healthy: the metrics parse, every backend is up, requests and bytes are counted per backend', async () => {
    const m = await metrics();
    for (const id of BACKENDS) {
      expect(valueOf(m, 'shardgate_backend_up', { backend: id }), id).toBe(1);
      expect(valueOf(m, 'shardgate_backend_requests_total', { backend: id, op: 'put' }), id).toBe(3);
      expect(valueOf(m, 'shardgate_backend_written_bytes_total', { backend: id }), id).toBeGreaterThan((3 * 150_000) / 4);
      expect(valueOf(m, 'shardgate_backend_request_duration_seconds_count', { backend: id, op: 'put' }), id).toBe(3);
      expect(valueOf(m, 'shardgate_backend_request_duration_seconds_bucket', { backend: id, op: 'put', le: '+Inf' }), id).toBe(3);
    }
    expect(valueOf(m, 'shardgate_objects')).toBe(3);
    expect(valueOf(m, 'shardgate_degraded_objects')).toBe(0);
    expect(valueOf(m, 'shardgate_s3_requests_total', { operation: 'PutObject', code: '200' })).toBe(3);
    expect(valueOf(m, 'shardgate_bucket_objects', { bucket: 'media' })).toBe(3);
    expect(valueOf(m, 'shardgate_health_status')).toBe(0);
  });

  it('healthy, on the status page: ok, no check listed, every backend up, every unit whole', needs('chromium'), async () => {
    const p = await statusPage();
    await p.refresh();
    const v = await p.view();
    expect(v.health).toBe('ok');
    expect(v.checks).toEqual({});
    expect(v.backends).toEqual(Object.fromEntries(BACKENDS.map((id) => [id, 'up'])));
    expect(v.redundancy).toEqual(ladderRows('3 | 439.5 KiB', '0 | 0 B')); // three objects of 150,000 bytes, one unit each
    expect(v.cards).toMatchObject({ objects: '3', degraded: '0', redundancy: '0', backlog: '0' });
    await p.screenshot('1-healthy');
  });

  it('refuses unsigned metrics and keeps bucket names out of an unsigned status', async () => {
    expect((await fetch(`${g.url}/_shardgate/metrics`)).status).toBe(403);
    expect((await fetch(`${g.url}/_shardgate/metrics`, { headers: { authorization: 'Bearer guess' } })).status).toBe(403);
    const wrong = await signer({ accessKeyId: CREDENTIALS.accessKeyId, secretAccessKey: 'not-the-secret' }).fetch(`${g.url}/_shardgate/metrics`);
    expect(wrong.status).toBe(403);
    const res = await fetch(`${g.url}/_shardgate/status`);
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).not.toContain('media');
    expect(JSON.parse(text)).toMatchObject({ signed: false, data: { objects: 3 } });
    expect(JSON.parse(text).buckets).toBeUndefined();
    const signed = (await (await signer(CREDENTIALS).fetch(`${g.url}/_shardgate/status`)).json()) as { signed: boolean; buckets: { bucket: string }[] };
    expect(signed.signed).toBe(true);
    expect(signed.buckets.map((b) => b.bucket)).toEqual(['media']);
  });

  it('a backend taken down shows at the next read, with the objects written meanwhile degraded', async () => {
    await g.control(`/__test/fault?backend=${DOWN}&action=offline`);
    const s3 = g.s3();
    for (let i = 0; i < 2; i++) await s3.send(new PutObjectCommand({ Bucket: 'media', Key: `during-${i}`, Body: new Uint8Array(150_000).fill(10 + i) }));
    await (await s3.send(new GetObjectCommand({ Bucket: 'media', Key: 'before-0' }))).Body!.transformToByteArray(); // decoded around it
    const m = await metrics();
    expect(valueOf(m, 'shardgate_backend_up', { backend: DOWN })).toBe(0);
    for (const id of BACKENDS.filter((b) => b !== DOWN)) expect(valueOf(m, 'shardgate_backend_up', { backend: id }), id).toBe(1);
    // The first write's call failed; for the next 2 s the gateway knows it down and does not call
    // it (a second write then misses its shard at once: engine/reachability.ts), after that it
    // asks again: one or two failed calls, never more than the writes.
    const failedPuts = valueOf(m, 'shardgate_backend_request_errors_total', { backend: DOWN, op: 'put' });
    expect(failedPuts).toBeGreaterThanOrEqual(1);
    expect(failedPuts).toBeLessThanOrEqual(2);
    expect(valueOf(m, 'shardgate_degraded_objects')).toBe(2);
    expect(valueOf(m, 'shardgate_degraded_units')).toBe(2);
    expect(valueOf(m, 'shardgate_health_status')).toBe(1);

    const status = await shardgate(['status', '--json'], cliEnv);
    expect(status.code).toBe(0);
    const doc = JSON.parse(status.stdout) as {
      health: string;
      backends: { id: string; state: string; lastError: string }[];
      data: { degradedObjects: number };
    };
    expect(doc.health).toBe('warning');
    expect(doc.backends.find((b) => b.id === DOWN)).toMatchObject({ state: 'down', lastError: expect.stringMatching(/Unavailable/) });
    expect(doc.data.degradedObjects).toBe(2);
    const table = await shardgate(['status'], cliEnv);
    expect(table.stdout).toMatch(new RegExp(`^${DOWN}\\s+zone-4\\s+down`, 'm'));
    expect(table.stdout).toMatch(/degraded objects 2 /);

    // While it is down, a repair cannot finish: the command says so and exits 1.
    const early = await shardgate(['repair', '--json'], cliEnv);
    expect(early.code).toBe(1);
    expect(JSON.parse(early.stdout)).toMatchObject({ repaired: 0, remaining: 2 });
    // The worklist shows both units with the failed attempts and why; none is stuck yet.
    const list = await shardgate(['repair', '--list', '--json'], cliEnv);
    expect(list.code).toBe(0);
    const units = (JSON.parse(list.stdout) as { units: { key: string; attempts: number; lastError?: string }[] }).units;
    expect(units.map((u) => u.key).sort()).toEqual(['during-0', 'during-1']);
    for (const u of units) {
      expect(u.attempts).toBeGreaterThanOrEqual(1);
      expect(u.lastError).toMatch(new RegExp(DOWN));
    }
    const stuck = await shardgate(['repair', '--list', '--stuck'], cliEnv);
    expect(stuck.stdout).toBe('no stuck degraded units\n');
    // Redundancy left: the shards on the down backend count as missing (issue 37), recorded or
    // not: every unit (the three written before, the two that missed it) has k+1 left, none k.
    expect(valueOf(m, 'shardgate_units_missing_shards', { missing: '1' })).toBe(5);
    expect(valueOf(m, 'shardgate_units_redundancy', { state: 'at_risk' })).toBe(0);
    // The ladder of policy 4+2: all five units with 5 of 6 shards, with their object bytes.
    expect(valueOf(m, 'shardgate_policy_units', { policy: '4+2', shards_left: '6' })).toBe(0);
    expect(valueOf(m, 'shardgate_policy_units', { policy: '4+2', shards_left: '5' })).toBe(5);
    expect(valueOf(m, 'shardgate_policy_unit_bytes', { policy: '4+2', shards_left: '5' })).toBe(750_000);
    expect(valueOf(m, 'shardgate_units_redundancy_bytes', { state: 'at_risk' })).toBe(0);
    expect(table.stdout).toMatch(/^media\s+4\+2\s+5\s+5\s+732\.4 KiB$/m);
  });

  it('one down, on the status page: warning, the backend in red, every unit one shard short', needs('chromium'), async () => {
    const p = await statusPage();
    await p.refresh();
    const v = await p.view();
    expect(v.health).toBe('warning');
    expect(v.checks).toEqual({ backends: 'warning', repairs: 'warning' });
    expect(v.backends).toEqual(Object.fromEntries(BACKENDS.map((id) => [id, id === DOWN ? 'down' : 'up'])));
    expect(v.note).toMatch(/^1 backend\(s\) down: reads decode around them; new writes miss their shards/);
    expect(v.redundancy).toEqual(ladderRows('0 | 0 B', '5 | 732.4 KiB'));
    expect(v.cards).toMatchObject({ objects: '5', degraded: '2', redundancy: '0', backlog: '2' });
    await p.screenshot('2-one-down');
  });

  it('a second backend down: writes impossible (critical), reads at risk, healthy backends not blamed', async () => {
    const SECOND = 'r2-5';
    await g.control(`/__test/fault?backend=${SECOND}&action=offline`);
    const s3 = g.s3({ maxAttempts: 1 });
    let refused = 0;
    for (let i = 0; i < 30; i++) {
      await s3
        .send(new PutObjectCommand({ Bucket: 'media', Key: `refused-${i}`, Body: new Uint8Array(150_000).fill(i) }))
        .catch((err: { $metadata?: { httpStatusCode?: number } }) => {
          expect(err.$metadata?.httpStatusCode).toBe(503);
          refused++;
        });
    }
    expect(refused).toBe(30);
    // An inline object (4 KiB and less) lives in the catalog: written even now.
    await s3.send(new PutObjectCommand({ Bucket: 'media', Key: 'inline', Body: new Uint8Array(100).fill(7) }));
    expect(await (await s3.send(new GetObjectCommand({ Bucket: 'media', Key: 'before-1' }))).Body!.transformToByteArray()).toEqual(
      new Uint8Array(150_000).fill(1),
    );
    const doc = JSON.parse((await shardgate(['status', '--json'], cliEnv)).stdout) as {
      health: string;
      checks: { name: string; state: string }[];
      backends: { id: string; state: string }[];
    };
    expect(doc.health).toBe('critical');
    const states = Object.fromEntries(doc.checks.map((c) => [c.name, c.state]));
    // Every unit has a shard on each down backend: all five at exactly k (issue 37: counted, not only said by reads:ec).
    expect(states).toMatchObject({ 'writes:ec': 'critical', 'reads:ec': 'warning', backends: 'warning', redundancy: 'warning' });
    for (const b of doc.backends) expect(b.state, b.id).toBe(b.id === DOWN || b.id === SECOND ? 'down' : 'up');
    const m = await metrics();
    expect(valueOf(m, 'shardgate_health_check', { check: 'writes:ec' })).toBe(2);
    for (const id of BACKENDS.filter((b) => b !== DOWN && b !== SECOND))
      expect(valueOf(m, 'shardgate_backend_request_errors_total', { backend: id, op: 'put' }), id).toBe(0);
    const table = await shardgate(['status'], cliEnv);
    expect(table.stdout).toMatch(/^CRITICAL writes:ec: writes of policy ec are impossible: 4 backend\(s\) reachable, its write quorum is 5$/m);
    expect(table.stdout).toMatch(/^WARNING reads:ec: reads of policy ec are at risk/m);
  });

  it('two down, on the status page: critical, writes refused, reads at risk; the refused writes stored nothing', needs('chromium'), async () => {
    const p = await statusPage();
    await p.refresh();
    const v = await p.view();
    expect(v.health).toBe('critical');
    expect(v.checks).toEqual({ 'writes:ec': 'critical', 'reads:ec': 'warning', backends: 'warning', repairs: 'warning', redundancy: 'warning' });
    expect(v.backends).toEqual(Object.fromEntries(BACKENDS.map((id) => [id, id === DOWN || id === 'r2-5' ? 'down' : 'up'])));
    expect(v.note).toBe('2 backend(s) down: reads decode around them where they can; writes of ec are refused (too few backends for the write quorum).');
    // Shards on the down backends count as missing: every unit (a shard on each) is at exactly k.
    expect(v.redundancy).toEqual(ladderRows('0 | 0 B', '0 | 0 B', '5 | 732.4 KiB'));
    expect(v.cards).toMatchObject({ objects: '6', degraded: '2', backlog: '2' }); // the inline object was written
    await p.screenshot('3-two-down');
  });

  it('back up: shardgate repair takes the degraded objects to zero, and the metrics show it', async () => {
    await g.control('/__test/fault?backend=r2-5&action=online');
    await g.control(`/__test/fault?backend=${DOWN}&action=online`);
    const run = await shardgate(['repair', '--json'], cliEnv);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ remaining: 0, failed: [] });
    const m = await metrics();
    expect(valueOf(m, 'shardgate_degraded_objects')).toBe(0);
    expect(valueOf(m, 'shardgate_backend_up', { backend: DOWN })).toBe(1);
    expect(valueOf(m, 'shardgate_repairs_total', { result: 'done' })).toBeGreaterThanOrEqual(2);
    expect(valueOf(m, 'shardgate_backend_shards', { backend: DOWN })).toBe(5); // every object has its shard there again
    expect(valueOf(m, 'shardgate_health_status')).toBeLessThanOrEqual(1); // 'warning' while the window still holds the outage's errors
    expect(valueOf(m, 'shardgate_units_redundancy', { state: 'at_risk' })).toBe(0);
    expect(valueOf(m, 'shardgate_policy_units', { policy: '4+2', shards_left: '6' })).toBe(5); // back to whole
    expect(valueOf(m, 'shardgate_policy_units', { policy: '4+2', shards_left: '5' })).toBe(0);
    // The repairs' rate over the last 5 minutes, and nothing left.
    const doc = JSON.parse((await shardgate(['status', '--json'], cliEnv)).stdout) as {
      upkeep: { rates: { repairUnitsPerMinute: number; repairSecondsLeft: number | null } };
    };
    expect(doc.upkeep.rates.repairUnitsPerMinute).toBeGreaterThan(0);
    expect(doc.upkeep.rates.repairSecondsLeft).toBe(0);
    expect((await shardgate(['status'], cliEnv)).stdout).toMatch(/^repair [\d.]+ units\/min \(nothing left\)/m);
  });

  it('repaired, on the status page: no write, read, repair or redundancy check listed, every unit whole again', needs('chromium'), async () => {
    const p = await statusPage();
    await p.refresh();
    const v = await p.view();
    expect(['ok', 'warning']).toContain(v.health); // warning while the health window still holds the outage's errors
    expect(Object.keys(v.checks).filter((c) => c !== 'backends')).toEqual([]);
    expect(v.backends[DOWN]).not.toBe('down');
    expect(v.redundancy).toEqual(ladderRows('5 | 732.4 KiB', '0 | 0 B'));
    expect(v.cards).toMatchObject({ degraded: '0', backlog: '0' });
    await p.screenshot('4-repaired');
    expect(p.errors).toEqual([]); // the page's CSP let everything run, at every state
  });

  it('scrub --all and collect --all through the CLI; the status shows the completed pass', async () => {
    const scrub = await shardgate(['scrub', '--all', '--json'], cliEnv);
    expect(scrub.code).toBe(0);
    expect(JSON.parse(scrub.stdout)).toMatchObject({ units: 5, damaged: 0 }); // five single-unit objects
    const collect = await shardgate(['collect', '--all', '--json'], cliEnv);
    expect(collect.code).toBe(0);
    expect(JSON.parse(collect.stdout)).toMatchObject({ collected: 0 });
    const doc = JSON.parse((await shardgate(['status', '--json'], cliEnv)).stdout) as {
      data: { scrub: { coverage: number; units: number; checked: number; oldestPassCompletedAt: number | null } };
      buckets: { scrub: { passes: number } }[];
    };
    expect(doc.data.scrub).toMatchObject({ coverage: 1, units: 5, checked: 5 });
    expect(doc.data.scrub.oldestPassCompletedAt).not.toBeNull();
    expect(doc.buckets[0]!.scrub.passes).toBeGreaterThanOrEqual(1);
    const m = await metrics();
    expect(valueOf(m, 'shardgate_scrub_checked_units_total')).toBe(5); // the operator's runs count like the cron's
    expect(valueOf(m, 'shardgate_scrub_units')).toBe(5);
    expect(valueOf(m, 'shardgate_bucket_scrub_coverage_ratio', { bucket: 'media' })).toBe(1);
  });

  it('rebuild through the CLI keeps what the catalog still has', async () => {
    const run = await shardgate(['rebuild', '--bucket', 'media', '--json'], cliEnv);
    expect(run.code).toBe(0);
    const r = JSON.parse(run.stdout) as { restored: string[]; kept: string[] };
    expect(r.restored).toEqual([]);
    expect(r.kept.sort()).toEqual(['before-0', 'before-1', 'before-2', 'during-0', 'during-1']);
    expect((await shardgate(['rebuild'], cliEnv)).stderr).toMatch(/one of --bucket NAME, --lost or --discard NAME is required/);
  });

  /** cli/shardgate.ts main() with its standard output captured. */
  async function inProcess(argv: string[]): Promise<{ code: number; stdout: string }> {
    const chunks: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: unknown) => (chunks.push(String(chunk)), true)) as typeof process.stdout.write;
    try {
      return { code: await cliMain(argv), stdout: chunks.join('') };
    } finally {
      process.stdout.write = write;
    }
  }

  it('every command has --help; a wrong option or a missing key is a usage error', async () => {
    const top = await shardgate(['--help']);
    expect(top.code).toBe(0);
    const names = [...top.stdout.matchAll(/^ {2}([\w-]+) {2}/gm)].map((m) => m[1]);
    expect(names).toEqual(expect.arrayContaining(['status', 'scrub', 'repair', 'collect', 'rebuild', 'rescue', 'verify', 'check-deploy']));
    // A command is loaded by its file's name alone (cli/shardgate.ts findCommand): each file in
    // cli/commands is named for the command it exports, or that command could not be run.
    const files = readdirSync(join(import.meta.dirname, '../../cli/commands')).filter((f) => f.endsWith('.ts'));
    expect(names.map((n) => `${n}.ts`).sort()).toEqual(files.sort());
    // Each command's help through the same entry point in this process (a process per command
    // cost 40 s of tsx start-ups); the binary itself is run above and below.
    for (const name of names) {
      const help = await inProcess([name!, '--help']);
      expect(help.code, name).toBe(0);
      expect(help.stdout, name).toMatch(new RegExp(`^usage: shardgate ${name}`));
    }
    const bad = await shardgate(['repair', '--no-such-option'], cliEnv);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/no-such-option/);
    const nokey = await shardgate(['collect'], { SHARDGATE_ENDPOINT: g.url });
    expect(nokey.code).toBe(2);
    expect(nokey.stderr).toMatch(/AWS_ACCESS_KEY_ID/);
  });
});
