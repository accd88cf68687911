/**
 * `shardgate verify`: the reading of `rescue`, checking only: every shard file found is read whole
 * (header, every block's XXH64, footer), missing shards are named with the backend that should
 * hold them, and every object is decoded from its good shards and checked against its footer's
 * MD5. Exit 0: every shard intact; 1: damage found, every object still recoverable; 3: some
 * object cannot be recovered.
 * Sealed units: their blocks' checksums are over the stored (sealed) bytes, so they are checked
 * with or without the key. With the key ring (--key, --keys-file, SHARDGATE_KEYS) every sealed
 * header is opened (which proves the key) and each object decrypted, record tags and MD5 checked.
 * A sealed unit whose key is not given is still checked shard by shard and decoded (its stored
 * bytes: enough k good shards), then listed with the key id it needs: its object's MD5 and tags
 * are not checked. A missing key alone does not change the exit code. SSE-KMS units open with the
 * gateway's key and the named keys' table the bucket list's journal holds (as in a rescue).
 */
import { parseArgs } from 'node:util';
import type { Command } from '../command.ts';
import { bytes, printJson } from '../format.ts';
import { Progress } from '../progress.ts';
import type { Backend } from '../../backends/types.ts';
import { shardKey } from '../../worker/format/shard-key.ts';
import { storedSize } from '../../worker/format/seal.ts';
import { openUnit, verifyShardFile } from '../../worker/engine/index.ts';
import { keyRingFrom, SOURCE_HELP, SOURCE_OPTIONS, sourcesFrom } from '../rescue/options.ts';
import { withJournalKeyTable } from '../rescue/kms-keys.ts';
import { planObjects, sealedEntry, sealedSummary, type SealedUnit } from '../rescue/plan.ts';
import { readObject } from '../rescue/read.ts';
import { scanSources, SEALED_BUCKET, ShardIndex } from '../rescue/scan.ts';
import { errorMessage } from '../../worker/model/error-message.ts';

const HELP = `usage: shardgate verify (--from DIR|URL ... | --wrangler-state DIR) [options]

Checks what the backends hold, with no gateway: reads every shard file whole and checks each
block, lists missing and damaged shards with the backend that should hold them, and decodes every
object from its good shards to check its MD5. Reads every stored byte (egress on paid backends).
Exit code 0: all intact; 1: damage found, every object recoverable; 3: some object is lost.
Sealed (encrypted) units are checked block by block with or without their key (the checksums
are over the stored bytes); with the key (--key, --keys-file, SHARDGATE_KEYS) their headers are
opened and their objects decrypted and checked against their MD5 too. Sealed units whose key is
not given are listed with the key id they need (that alone does not change the exit code).

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
    const given = keyRingFrom(values);
    const tty = !values.json && Boolean(process.stderr.isTTY);
    const scan = await scanSources(sources, values.bucket, given);
    let index = new ShardIndex(scan.shards, scan.locked);
    // SSE-KMS units open with the named keys' table of the bucket list's journal (rescue/kms-keys.ts).
    let ring = given;
    if (given) ({ ring, index } = await withJournalKeyTable(scan, index, given, values.bucket));
    const { objects, unplannable, sealed } = await planObjects(scan.shards, index, values.prefix ?? '', ring, scan.locked);
    const problems: ShardProblem[] = [];
    const verdicts: { bucket: string; key: string; size: number; state: 'intact' | 'degraded' | 'lost'; error?: string }[] = [];
    const progress = new Progress('verify', tty);
    const stored = (u: { size: number; k: number; m: number; seal?: Parameters<typeof storedSize>[0]['seal'] }) => (storedSize(u) * (u.k + u.m)) / u.k;
    const total =
      objects.reduce((n, o) => n + o.writes.reduce((m, w) => m + w.units.reduce((x, u) => x + stored(u.unit), 0), 0), 0) +
      sealed.reduce((n, u) => n + (u.unit ? stored(u.unit) : 0), 0);
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
              problems.push({ ...where, source: `${found.source.name}: ${found.sourceKey}`, problem: errorMessage(err) });
              index.forget(key); // decode the object around it below
              u.unit.missing = [...new Set([...u.unit.missing, i])];
              damaged++;
            }
            done += storedSize(u.unit) / u.unit.k;
            progress.update(done, total, bytes(done));
          }
        }
      }
      try {
        const report = await readObject(index, o, ring, () => {});
        if (report.md5Mismatches.length) throw new Error(`MD5 differs from the footer's`);
        verdicts.push({ bucket: o.bucket, key: o.key, size: o.size, state: damaged ? 'degraded' : 'intact' });
      } catch (err) {
        verdicts.push({ bucket: o.bucket, key: o.key, size: o.size, state: 'lost', error: errorMessage(err) });
      }
    }
    // Sealed units whose key was not given: their shards and their decoding, over the stored bytes.
    const sealedVerdicts: (ReturnType<typeof sealedEntry> & { state: 'intact' | 'degraded' | 'lost'; error?: string })[] = [];
    for (const s of sealed) {
      const entry = sealedEntry(s);
      const where = { bucket: s.bucket ?? '(bucket unknown)', key: `(sealed: key "${s.kid}")`, unitId: s.unitId };
      if (!s.unit) {
        sealedVerdicts.push({ ...entry, state: 'lost', error: `no readable shard with a complete footer among ${s.found.size} found` });
        continue;
      }
      const unit = s.unit;
      let damaged = 0;
      for (let i = 0; i < unit.k + unit.m; i++) {
        const found = s.found.get(i);
        if (!found) {
          problems.push({ ...where, shard: i, backend: unit.placement[i]!, problem: 'missing' });
          damaged++;
          continue;
        }
        const key = shardKey(SEALED_BUCKET, unit.unitId, i);
        try {
          await verifyShardFile(index, key, unit, i);
        } catch (err) {
          problems.push({ ...where, shard: i, backend: unit.placement[i]!, source: `${found.source.name}: ${found.sourceKey}`, problem: errorMessage(err) });
          index.forget(key);
          unit.missing = [...new Set([...unit.missing, i])];
          damaged++;
        }
        done += unit.size / unit.k;
        progress.update(done, total, bytes(done));
      }
      try {
        await decodeStored(index, s);
        sealedVerdicts.push({ ...entry, state: damaged ? 'degraded' : 'intact' });
      } catch (err) {
        sealedVerdicts.push({ ...entry, state: 'lost', error: errorMessage(err) });
      }
    }
    progress.end();
    const sealedLost = sealedVerdicts.filter((v) => v.state === 'lost').length;
    const keysNeeded = [...new Set(sealed.map((u) => u.kid))].sort();
    const lost = verdicts.filter((v) => v.state === 'lost').length + unplannable.length;
    const degraded = verdicts.filter((v) => v.state === 'degraded').length;
    const summary = {
      objects: objects.length,
      intact: objects.length - degraded - (lost - unplannable.length),
      degraded,
      lost,
      damagedShards: problems.length,
      badFiles: scan.bad.length,
      sealedUnread: sealed.length,
      sealedLost,
      keysNeeded,
    };
    if (values.json) printJson({ summary, problems, objects: verdicts, unplannable, sealed: sealedVerdicts, badFiles: scan.bad });
    else {
      for (const p of problems)
        process.stdout.write(`${p.bucket}/${p.key} unit ${p.unitId} shard ${p.shard} on ${p.backend}: ${p.problem}${p.source ? ` (${p.source})` : ''}\n`);
      for (const v of verdicts) if (v.state === 'lost') process.stdout.write(`LOST ${v.bucket}/${v.key}: ${v.error}\n`);
      for (const u of unplannable) process.stdout.write(`LOST ${u.bucket}/${u.key} (unit ${u.unitId}): ${u.reason}\n`);
      for (const v of sealedVerdicts) {
        const state = v.state === 'lost' ? `LOST (${v.error})` : v.state === 'degraded' ? 'degraded (recoverable)' : 'intact';
        process.stdout.write(
          `SEALED unit ${v.unitId}${v.bucket ? ` in bucket ${v.bucket}` : ''}: ${v.reason}; shards checked block by block: ${state}; its object's MD5 not checked\n`,
        );
      }
      for (const b of scan.bad) process.stdout.write(`bad file ${b.source}: ${b.key}: ${b.problem}\n`);
      process.stdout.write(
        `${summary.objects} object(s): ${summary.intact} intact, ${degraded} degraded (recoverable), ${lost} lost; ${problems.length} missing or damaged shard(s)\n`,
      );
      if (sealed.length) process.stdout.write(`${sealedSummary(sealed.length, keysNeeded)}\n`);
    }
    return lost || sealedLost ? 3 : problems.length || scan.bad.length ? 1 : 0;
  },
};

/** A locked sealed unit decoded from its good shards (its stored bytes, not opened): throws when fewer than k per stripe are good. */
async function decodeStored(index: ShardIndex, s: SealedUnit): Promise<void> {
  const unit = s.unit!;
  if (unit.size === 0) return;
  const backends = new Map<string, Backend>(unit.placement.map((id) => [id, index]));
  const stream = await openUnit({ bucket: SEALED_BUCKET, unit, backends, start: 0, end: unit.size - 1, onUnhealthy: () => {} });
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) void chunk;
}
