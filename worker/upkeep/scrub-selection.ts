/**
 * A scrub of one bucket, or of the keys under a prefix in it, on the operator's request (issue 37;
 * `POST /_shardgate/admin/scrub?bucket=B[&prefix=P]`, `shardgate scrub --bucket B --prefix P`):
 * every shard of every unit of every stored version there checked as the scrubber checks them
 * (heads: sizes; verify: every block), damage queued for repair, a page at a time with a cursor
 * (`after`, a unit id) the caller passes back until `next` is null. It leaves the cron's scrub
 * cursor and coverage alone: a targeted pass is not a pass of the bucket.
 * Known gap: the bucket's units are walked in id order and those outside the prefix skipped (the
 * unit index is keyed by id), so a prefix of a large bucket costs catalog reads for the whole
 * bucket, though backend calls only for its own shards.
 */
import type { Backend } from '../../backends/types.ts';
import type { UpkeepCatalog } from '../catalog/ports.ts';
import { MAX_OPEN_SUBREQUESTS, type RepairTask, Semaphore } from '../engine/index.ts';
import { checkShard, type ScrubOptions } from './scrubber.ts';

export interface SelectionScrubReport {
  units: number;
  shards: number;
  damaged: number;
  /** The damaged shards, by object and unit (queued for repair). */
  damage: { key: string; unitId: string; shards: number[] }[];
  /** Shards whose backend did not answer: not checked. */
  unreachable: number;
  /** Pass it back as `after` for the next page; null: the selection is done. */
  next: string | null;
}

const PAGE = 100;
/** Pages of the unit index one call reads at most (a prefix of few units in a large bucket). */
const MAX_PAGES = 50;

export async function scrubSelection(
  catalog: UpkeepCatalog,
  byId: Map<string, Backend>,
  o: { bucket: string; prefix: string; mode: ScrubOptions['mode']; headsBy?: ScrubOptions['headsBy']; after: string | null; maxCalls: number },
  enqueueRepair: (task: RepairTask) => void,
): Promise<SelectionScrubReport> {
  const report: SelectionScrubReport = { units: 0, shards: 0, damaged: 0, damage: [], unreachable: 0, next: null };
  const sem = new Semaphore(MAX_OPEN_SUBREQUESTS);
  let after = o.after;
  for (let pages = 0; ; pages++) {
    if (pages === MAX_PAGES) return { ...report, next: after };
    const page = await catalog.listUnits(o.bucket, after, PAGE);
    for (const { unit, key } of page) {
      if (!key.startsWith(o.prefix)) {
        after = unit.unitId;
        continue;
      }
      // Out of calls: stop before this unit (every page checks at least one), resume here.
      if (report.shards > 0 && report.shards + unit.placement.length > o.maxCalls) return { ...report, next: after };
      const verdicts = await Promise.all(unit.placement.map((_, i) => sem.run(() => checkShard(o.bucket, unit, i, byId, o.mode, o.headsBy))));
      const damaged = verdicts.flatMap((v, i) => (v === 'damaged' ? [i] : []));
      report.units++;
      report.shards += verdicts.length;
      report.unreachable += verdicts.filter((v) => v === 'unreachable').length;
      if (damaged.length) {
        report.damaged += damaged.length;
        report.damage.push({ key, unitId: unit.unitId, shards: damaged });
        enqueueRepair({
          bucket: o.bucket,
          key,
          unitId: unit.unitId,
          shards: damaged,
          reason: { kind: 'corrupt', by: 'scrubber', detail: `${o.mode} (operator, prefix ${JSON.stringify(o.prefix)})` },
        });
      }
      after = unit.unitId;
    }
    if (page.length < PAGE) return report;
  }
}
