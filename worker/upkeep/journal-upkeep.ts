/**
 * The journal's upkeep (issue 37): its segments are coded units like any object's, in
 * JOURNAL_BUCKET, and get what data gets, by the same parts:
 * - scrub: every shard of every segment file checked (the scrubber's checkShard: 'heads' asks
 *   each backend for the shard's size, 'verify' reads it whole), damage recorded on the segment
 *   file's units (`missing`), so the status counts what is at risk;
 * - repair: damaged or missing shards rebuilt from k good ones (the engine's rebuildShards, as
 *   repair.ts does for data) onto the backends that held them;
 * - drain and re-stripe: a segment with a shard on a backend that takes no new shards (draining
 *   or retired), or written at a narrower code than its policy's while backends were down
 *   (journal.ts narrowerCode), is rewritten whole at the policy's code over the placeable
 *   backends (a segment is at most a few MiB), and the old units go to the garbage. A rewrite
 *   that fails (backends still down) leaves the segment as it is, for the next run.
 * Shards whose backend does not answer are left alone (the reads and writes that meet it say so).
 * A run makes at most `maxCalls` backend calls (checks, repairs, rewrites), from a random
 * instance; the journal of an instance recorded lost (catalog-loss.ts) is not touched.
 */
import type { Backend } from '../../backends/types.ts';
import type { JournalCatalog } from '../catalog/ports.ts';
import { JOURNAL_BUCKET, segmentKey } from '../format/journal.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { MAX_OPEN_SUBREQUESTS, rebuildShards, Semaphore, type StoragePolicy, type UnitStore } from '../engine/index.ts';
import { storeAt } from './journal.ts';
import { checkShard, type ScrubOptions } from './scrubber.ts';
import { errorMessage } from '../model/error-message.ts';

export interface JournalUpkeepDeps {
  catalog: JournalCatalog;
  units: UnitStore;
  /** The journal's policy (the config's default). */
  policy: StoragePolicy;
}

export interface JournalUpkeepReport {
  segments: number;
  units: number;
  shards: number;
  damaged: number;
  repaired: number;
  /** Segments rewritten: off a leaving backend, or from a narrower code to the policy's. */
  moved: number;
  restriped: number;
  /** Repairs or rewrites that could not be done this run (tried again next run). */
  failed: { instance: string; segment: number; error: string }[];
  unfinished: boolean;
}

/** Backend calls one run makes at most. */
export const JOURNAL_UPKEEP_MAX_CALLS = 120;

export async function journalUpkeep(
  deps: JournalUpkeepDeps,
  options: { mode: ScrubOptions['mode']; headsBy?: ScrubOptions['headsBy']; maxCalls?: number },
): Promise<JournalUpkeepReport> {
  const report: JournalUpkeepReport = { segments: 0, units: 0, shards: 0, damaged: 0, repaired: 0, moved: 0, restriped: 0, failed: [], unfinished: false };
  const maxCalls = options.maxCalls ?? JOURNAL_UPKEEP_MAX_CALLS;
  let calls = 0;
  const lost = (await deps.catalog.catalogLoss()).lost;
  const all = (await deps.catalog.journalInstances()).filter((i) => !(i in lost));
  const first = Math.floor(Math.random() * all.length);
  const placeable = new Set(deps.units.placeable.map((b) => b.id));
  const byId = deps.units.byId;
  const slots = new Semaphore(MAX_OPEN_SUBREQUESTS);
  for (const instance of [...all.slice(first), ...all.slice(0, first)]) {
    for (const file of await deps.catalog.journalFiles(instance)) {
      const shards = file.units.reduce((n, u) => n + u.k + u.m, 0);
      if (calls > 0 && calls + shards > maxCalls) {
        report.unfinished = true;
        return report;
      }
      report.segments++;
      const before = file.units.map((u) => u.unitId);
      try {
        const size = file.units.reduce((n, u) => n + u.size, 0);
        const want = deps.units.plan(size, deps.policy, true);
        const leaving = file.units.some((u) => u.placement.some((id, i) => !placeable.has(id) && !u.missing.includes(i)));
        const narrow = file.units.some((u) => u.k !== want.k || u.m !== want.m);
        if (leaving || narrow) {
          calls += shards * 2;
          const key = segmentKey(instance, file.segment);
          const bytes = await readAll(deps.units, key, file.units, size);
          const units = await storeAt(deps, key, bytes, deps.policy);
          if (await deps.catalog.journalReplaceUnits(instance, file.segment, before, units, new Date())) {
            if (narrow) report.restriped++;
            else report.moved++;
          } else await deps.catalog.queueGarbage({ bucket: JOURNAL_BUCKET, units }, new Date()); // superseded meanwhile
          continue;
        }
        const after: CodedUnit[] = [];
        let changed = false;
        for (const unit of file.units) {
          report.units++;
          report.shards += unit.k + unit.m;
          calls += unit.k + unit.m;
          // As the data's scrub checks (scrub.headsBy): without it every 'heads' check was a HEAD,
          // which the local R2 emulator answers from its metadata, so the operator drill's wiped
          // disk (test/ops/operator-drill.test.ts) left the journal's shards there unseen, 0 damaged.
          const verdicts = await Promise.all(
            unit.placement.map((_, i) => slots.run(() => checkShard(JOURNAL_BUCKET, unit, i, byId, options.mode, options.headsBy))),
          );
          const damaged = verdicts.flatMap((v, i) => (v === 'damaged' ? [i] : []));
          report.damaged += damaged.filter((i) => !unit.missing.includes(i)).length;
          let missing = [...new Set([...unit.missing.filter((i) => verdicts[i] !== 'ok'), ...damaged])].sort((a, b) => a - b);
          if (damaged.length) {
            calls += unit.k + damaged.length;
            const result = await rebuildShards(JOURNAL_BUCKET, { ...unit, missing }, damaged, byId);
            report.repaired += result.repaired.length;
            missing = missing.filter((i) => !result.repaired.includes(i));
            for (const f of result.failed)
              report.failed.push({ instance, segment: file.segment, error: `shard ${f.shard} on ${unit.placement[f.shard]}: ${f.error}` });
          }
          if (JSON.stringify(missing) !== JSON.stringify(unit.missing)) changed = true;
          after.push({ ...unit, missing });
        }
        if (changed) await deps.catalog.journalReplaceUnits(instance, file.segment, before, after, new Date());
      } catch (err) {
        report.failed.push({ instance, segment: file.segment, error: errorMessage(err) });
      }
    }
  }
  return report;
}

async function readAll(units: UnitStore, key: string, list: CodedUnit[], size: number): Promise<Uint8Array> {
  const stream = await units.open(JOURNAL_BUCKET, key, { kind: 'coded', units: list }, 0, size - 1);
  const out = new Uint8Array(size);
  let at = 0;
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
    out.set(chunk, at);
    at += chunk.length;
  }
  if (at !== size) throw new Error(`segment ${key}: read ${at} of ${size} bytes`);
  return out;
}
