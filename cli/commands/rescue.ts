/**
 * `shardgate rescue`: objects back from the shard files alone, with no gateway and no catalog
 * (docs/FORMAT.md "Decoding an object without the gateway"): scan the sources, plan objects from
 * the headers and footers, read each with the gateway's own readers (every block verified, up to
 * m missing or damaged shards per unit decoded around) and write it under --out once its MD5
 * matches the footer's. Sealed units are read with the key ring of --key / --keys-file /
 * SHARDGATE_KEYS; those whose key is not given are listed (unit, bucket if known, key id) and
 * nothing of them is written. Exit 1 when some object could not be rescued or some sealed unit
 * could not be opened.
 */
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { bytes, printJson } from '../format.ts';
import { Progress } from '../progress.ts';
import { keyRingFrom, SOURCE_HELP, SOURCE_OPTIONS, sourcesFrom } from '../rescue/options.ts';
import { outputPath, type Layout } from '../rescue/output.ts';
import { planObjects, sealedEntry, sealedSummary } from '../rescue/plan.ts';
import { readObject } from '../rescue/read.ts';
import { scanSources, ShardIndex } from '../rescue/scan.ts';

const HELP = `usage: shardgate rescue (--from DIR|URL ... | --wrangler-state DIR) --out DIR [options]

Recovers objects straight from the backends' shard files: no gateway, no catalog. Every block is
checked against its XXH64 and every object against the MD5 in its shards' footer; an object is
written only when it checks out. Objects are written as OUT/<bucket>/<key>. Sealed (encrypted)
objects are decrypted with the keys given (--key, --keys-file, SHARDGATE_KEYS: below), every
record's authentication tag checked; sealed units whose key is not given are listed with the key
id they need and not written (exit 1).

  --out DIR                  where to write the objects (created)
  --layout tree|flat         tree (default): a key's '/' make folders; flat: one file per key,
                             its name the key percent-encoded (for keys that cannot be paths)

${SOURCE_HELP}

Limits: objects stored inline in the catalog (small objects under the 'inline' policy) are not
on the backends and cannot be rescued. A multipart object is assembled from every part found for
its upload, by part number (the parts chosen at completion are recorded only in the catalog).
Versions the gateway superseded or deleted but has not collected yet may be found too: the
newest write of each key wins.`;

export const command: Command = {
  name: 'rescue',
  summary: 'recover objects from the backends alone (no gateway, no catalog), verified',
  help: HELP,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { ...SOURCE_OPTIONS, out: { type: 'string' }, layout: { type: 'string' } }, strict: true });
    if (!values.out) throw new CliError('--out DIR is required');
    const layout = (values.layout ?? 'tree') as Layout;
    if (layout !== 'tree' && layout !== 'flat') throw new CliError('--layout is tree or flat');
    const sources = sourcesFrom(values);
    const ring = keyRingFrom(values);
    const tty = !values.json && Boolean(process.stderr.isTTY);
    const scanning = new Progress('scan', tty);
    const scan = await scanSources(sources, values.bucket, ring, (n) => scanning.update(n, n, `${n} files`));
    scanning.end();
    const index = new ShardIndex(scan.shards, scan.locked);
    const { objects, unplannable, sealed } = await planObjects(scan.shards, index, values.prefix ?? '', ring, scan.locked);
    const total = objects.reduce((n, o) => n + o.size, 0);
    const progress = new Progress('rescue', tty);
    let done = 0;
    const results: Record<string, unknown>[] = [];
    for (const o of objects) {
      const path = outputPath(values.out, o.bucket, o.key, layout);
      const temp = `${path}.shardgate-rescue-${process.pid}`;
      const keys = [...new Set(o.writes.flatMap((w) => w.units.flatMap((u) => (u.unit.seal ? [u.unit.seal.kid] : []))))];
      const base = { bucket: o.bucket, key: o.key, size: o.size, path, ...(o.multipart ? { multipart: o.multipart } : {}), ...(keys.length ? { sealedUnder: keys } : {}) };
      try {
        mkdirSync(dirname(path), { recursive: true });
        const file = await open(temp, 'w');
        let report;
        try {
          report = await readObject(index, o, ring, async (chunk) => void (await file.write(chunk)), (n) => progress.update((done += n), total, `${bytes(done)} of ${bytes(total)}`));
        } finally {
          await file.close();
        }
        if (report.md5Mismatches.length) throw new Error(`MD5 differs from the footer's: ${JSON.stringify(report.md5Mismatches)}`);
        renameSync(temp, path);
        // Shards no source had, then shards the readers found damaged: all decoded around.
        const missing = o.writes.flatMap((w) => w.units.flatMap((u) => u.unit.missing.map((i) => ({ unitId: u.unit.unitId, shard: i, backend: u.unit.placement[i]!, reason: 'missing' }))));
        results.push({ ...base, status: 'ok', decodedAround: [...missing, ...report.unhealthy] });
      } catch (err) {
        rmSync(temp, { force: true });
        const message = String((err as Error)?.message ?? err);
        results.push({ ...base, status: 'failed', error: /EEXIST|ENOTDIR|EISDIR/.test(message) ? `${message} (a key that is also a folder of another key: try --layout flat)` : message });
      }
    }
    progress.end();
    const failed = results.filter((r) => r.status !== 'ok');
    const keysNeeded = [...new Set(sealed.map((u) => u.kid))].sort();
    const sealedReport = sealed.map(sealedEntry);
    const summary = {
      objects: objects.length, rescued: results.length - failed.length, failed: failed.length, bytes: total, filesScanned: scan.files, shardsFound: scan.shards.length + scan.locked.length,
      badFiles: scan.bad, unplannable, sealedUnread: sealed.length, keysNeeded,
    };
    if (values.json) printJson({ summary, objects: results, sealed: sealedReport });
    else {
      for (const r of results) {
        const around = (r.decodedAround as unknown[] | undefined)?.length ? ` (decoded around ${(r.decodedAround as unknown[]).length} missing or damaged shard(s))` : '';
        process.stdout.write(r.status === 'ok' ? `ok      ${r.bucket}/${r.key}  ${bytes(r.size as number)}${r.multipart ? '  [multipart: every part found]' : ''}${around}\n` : `FAILED  ${r.bucket}/${r.key}: ${r.error}\n`);
      }
      for (const u of unplannable) process.stdout.write(`FAILED  ${u.bucket}/${u.key} (unit ${u.unitId}): ${u.reason}\n`);
      for (const u of sealedReport) process.stdout.write(`SEALED  unit ${u.unitId}${u.bucket ? ` in bucket ${u.bucket}` : ''} (${u.shards} shard(s)): ${u.reason}; not read, nothing written\n`);
      for (const b of scan.bad) process.stdout.write(`skipped ${b.source}: ${b.key}: ${b.problem}\n`);
      process.stdout.write(`rescued ${summary.rescued} of ${summary.objects} object(s), ${bytes(total)}, into ${values.out} (${summary.shardsFound} shards in ${scan.files} files)\n`);
      if (sealed.length) process.stdout.write(`${sealedSummary(sealed.length, keysNeeded)}\n`);
    }
    return failed.length || unplannable.length || sealed.length ? 1 : 0;
  },
};

