/**
 * `shardgate verify`: the reading of `rescue`, checking only: every shard file found is read whole
 * (header, every block's XXH64, footer), missing shards are named with the backend that should
 * hold them, and every object is decoded from its good shards and checked against its footer's
 * MD5. Exit 0: every shard intact; 1: damage found, every object still recoverable; 3: some
 * object cannot be recovered.
 */
import { parseArgs } from 'node:util';
import type { Command } from '../command.ts';
import { bytes, printJson } from '../format.ts';
import { Progress } from '../progress.ts';
import { shardKey } from '../../worker/format/shard-key.ts';
import { verifyShardFile } from '../../worker/engine/index.ts';
import { SOURCE_HELP, SOURCE_OPTIONS, sourcesFrom } from '../rescue/options.ts';
import { planObjects } from '../rescue/plan.ts';
import { readObject } from '../rescue/read.ts';
import { scanSources, ShardIndex } from '../rescue/scan.ts';

const HELP = `usage: shardgate verify (--from DIR|URL ... | --wrangler-state DIR) [options]

Checks what the backends hold, with no gateway: reads every shard file whole and checks each
block, lists missing and damaged shards with the backend that should hold them, and decodes every
object from its good shards to check its MD5. Reads every stored byte (egress on paid backends).
Exit code 0: all intact; 1: damage found, every object recoverable; 3: some object is lost.

${SOURCE_HELP}`;

interface ShardProblem {
  bucket: string;
  key: string;
  unitId: string;
  shard: number;
  backend: string;
  problem: string;
  source?: string;
}

export const command: Command = {
  name: 'verify',
  summary: 'check every shard and object on the backends (no gateway), report damage',
  help: HELP,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: SOURCE_OPTIONS, strict: true });
    const sources = sourcesFrom(values);
    const tty = !values.json && Boolean(process.stderr.isTTY);
    const scan = await scanSources(sources, values.bucket);
    const index = new ShardIndex(scan.shards);
    const { objects, unplannable } = await planObjects(scan.shards, index, values.prefix ?? '');
    const problems: ShardProblem[] = [];
    const verdicts: { bucket: string; key: string; size: number; state: 'intact' | 'degraded' | 'lost'; error?: string }[] = [];
    const progress = new Progress('verify', tty);
    const total = objects.reduce((n, o) => n + o.writes.reduce((m, w) => m + w.units.reduce((x, u) => x + u.unit.size * (u.unit.k + u.unit.m) / u.unit.k, 0), 0), 0);
    let done = 0;
    for (const o of objects) {
      let damaged = 0;
      for (const w of o.writes) {
        for (const u of w.units) {
          for (let i = 0; i < u.unit.k + u.unit.m; i++) {
            const key = shardKey(o.bucket, u.unit.unitId, i);
            const where = { bucket: o.bucket, key: o.key, unitId: u.unit.unitId, shard: i, backend: u.unit.placement[i]! };
            const found = u.found.get(i);
            if (!found) {
              problems.push({ ...where, problem: 'missing' });
              damaged++;
              continue;
            }
            try {
              await verifyShardFile(index, key, u.unit, i);
            } catch (err) {
              problems.push({ ...where, source: `${found.source.name}: ${found.sourceKey}`, problem: String((err as Error)?.message ?? err) });
              index.forget(key); // decode the object around it below
              u.unit.missing = [...new Set([...u.unit.missing, i])];
              damaged++;
            }
            done += u.unit.size / u.unit.k;
            progress.update(done, total, bytes(done));
          }
        }
      }
      try {
        const report = await readObject(index, o, () => {});
        if (report.md5Mismatches.length) throw new Error(`MD5 differs from the footer's`);
        verdicts.push({ bucket: o.bucket, key: o.key, size: o.size, state: damaged ? 'degraded' : 'intact' });
      } catch (err) {
        verdicts.push({ bucket: o.bucket, key: o.key, size: o.size, state: 'lost', error: String((err as Error)?.message ?? err) });
      }
    }
    progress.end();
    const lost = verdicts.filter((v) => v.state === 'lost').length + unplannable.length;
    const degraded = verdicts.filter((v) => v.state === 'degraded').length;
    const summary = { objects: objects.length, intact: objects.length - degraded - (lost - unplannable.length), degraded, lost, damagedShards: problems.length, badFiles: scan.bad.length };
    if (values.json) printJson({ summary, problems, objects: verdicts, unplannable, badFiles: scan.bad });
    else {
      for (const p of problems) process.stdout.write(`${p.bucket}/${p.key} unit ${p.unitId} shard ${p.shard} on ${p.backend}: ${p.problem}${p.source ? ` (${p.source})` : ''}\n`);
      for (const v of verdicts) if (v.state === 'lost') process.stdout.write(`LOST ${v.bucket}/${v.key}: ${v.error}\n`);
      for (const u of unplannable) process.stdout.write(`LOST ${u.bucket}/${u.key} (unit ${u.unitId}): ${u.reason}\n`);
      for (const b of scan.bad) process.stdout.write(`bad file ${b.source}: ${b.key}: ${b.problem}\n`);
      process.stdout.write(`${summary.objects} object(s): ${summary.intact} intact, ${degraded} degraded (recoverable), ${lost} lost; ${problems.length} missing or damaged shard(s)\n`);
    }
    return lost ? 3 : problems.length || scan.bad.length ? 1 : 0;
  },
};
