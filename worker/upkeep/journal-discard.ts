/**
 * Ends a catalog loss (catalog-loss.ts) for one instance, the operator's explicit choice:
 * - after a rebuild (`shardgate rebuild`, journal-restore.ts), which imported the instance's
 *   journal and continued its numbering after it: the entry simply leaves the record;
 * - by a discard (`shardgate rebuild --discard BUCKET`): the backends' journal of the bucket is
 *   given up. Its segments are not deleted at once: an instance the catalog has adopts them (its
 *   numbering goes on after them, and they are deleted, like any superseded segment, once its new
 *   generation is complete); a bucket the catalog lacks has them queued for deletion after
 *   DISCARD_GRACE_MS (until then a rescue still finds them). The data's shard files are not
 *   touched: `shardgate rebuild` can still recover its objects from their headers.
 * When only the bucket list is left in the record (every bucket rebuilt or discarded), its old
 * journal is discarded the same way, and the journal of the bucket list goes on.
 */
import type { Backend } from '../../backends/types.ts';
import type { CatalogLoss } from '../catalog/types.ts';
import type { JournalCatalog } from '../catalog/ports.ts';
import { BUCKET_LIST_INSTANCE, JOURNAL_BUCKET, parseSegmentKey } from '../format/journal.ts';
import type { CodedUnit } from '../format/manifest.ts';
import type { KeyRing } from '../format/seal.ts';
import { scanUnits } from './unit-scan.ts';

/** How long discarded segments of a bucket the catalog lacks stay on the backends. */
export const DISCARD_GRACE_MS = 7 * 24 * 3600_000;

export interface DiscardReport {
  instance: string;
  /** Segments of the instance found on the backends and given up. */
  segments: number;
  /** The record after the discard. */
  loss: CatalogLoss;
}

type Deps = { catalog: JournalCatalog; backends: Backend[]; ring?: KeyRing };

/** Gives up the backends' journal of `instance` (a bucket's name, or BUCKET_LIST_INSTANCE). */
export async function discardJournal(instance: string, deps: Deps, now: number): Promise<DiscardReport> {
  const known = await deps.catalog.journalKnown(instance);
  const mine = new Set(known?.unitIds ?? []);
  const scan = await scanUnits(JOURNAL_BUCKET, deps.backends, deps.ring, (id) => mine.has(id));
  const segments = new Map<number, { units: CodedUnit[]; takenAt: number }>();
  for (const { info, unit } of scan.units) {
    const named = parseSegmentKey(info.header.key);
    if (named?.instance !== instance) continue;
    const s = segments.get(named.segment) ?? { units: [], takenAt: Date.parse(info.header.createdAt) };
    s.units.push(unit);
    segments.set(named.segment, s);
  }
  if (segments.size) {
    const files = [...segments].map(([segment, s]) => ({ segment, generation: 0, units: s.units, takenAt: s.takenAt }));
    const newest = Math.max(...segments.keys());
    if (known) await deps.catalog.journalContinueAfter(instance, { newest, generation: 0, files });
    else await deps.catalog.queueGarbage({ bucket: JOURNAL_BUCKET, units: files.flatMap((f) => f.units) }, new Date(now + DISCARD_GRACE_MS));
  }
  return { instance, segments: segments.size, loss: await resolveCatalogLoss(instance, deps, now) };
}

/** The instance leaves the loss record; the bucket list's old journal goes too once it is alone there. */
export async function resolveCatalogLoss(instance: string, deps: Deps, now: number): Promise<CatalogLoss> {
  const loss = await deps.catalog.catalogLoss();
  delete loss.lost[instance];
  delete loss.suspect[instance];
  await deps.catalog.setCatalogLoss(loss);
  const left = Object.keys(loss.lost);
  if (left.length === 1 && left[0] === BUCKET_LIST_INSTANCE) return (await discardJournal(BUCKET_LIST_INSTANCE, deps, now)).loss;
  return loss;
}
