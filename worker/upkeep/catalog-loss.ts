/**
 * Catalog-loss detection (issue 37): a gateway whose backends hold journal segments its catalog
 * does not know says so. Run before every journal run (the cron's, every minute), so the journal
 * of a lost instance stops before a new catalog's segments can hide the old ones.
 *
 * Cheap and bounded: the journal's shard files are listed (one list call per backend per prefix,
 * twice: once before and once for the headers; the journal holds a few segments per instance), the catalog says which journal units each
 * instance knows (its segment files and the journal units it holds for deletion) and the last
 * segment number it handed out; only units nobody knows have their header read (the newest
 * first, at most `maxHeaders` per run, 3 range reads each; a header read once is not read again
 * in this isolate). While unknown units are left unread and a loss is in view, the caller stores
 * no segment at all that run (journalHold): an instance not yet found lost must not write either.
 * An unknown unit's header names its instance and segment number:
 * - the catalog has no such bucket: the bucket's catalog is lost ('unknown'). A deleted bucket's
 *   segments being collected look the same for a moment, so it is a suspect first, confirmed when
 *   seen again at least CONFIRM_MS later, or at once when the bucket list itself is behind;
 * - its number is above the catalog's last ('behind'): a catalog that lost the instance and
 *   started again (a restored backup, a new Durable Object namespace).
 * A unit numbered at or below the catalog's last is a write that failed or is being acknowledged:
 * not a loss. What is found is added to the record (sql-catalog-loss.ts); entries leave it only
 * through `shardgate rebuild` (journal-restore.ts) or a discard (journal-discard.ts).
 */
import type { Backend } from '../../backends/types.ts';
import type { CatalogLoss, LostInstance } from '../catalog/types.ts';
import type { JournalCatalog } from '../catalog/ports.ts';
import { JOURNAL_BUCKET, BUCKET_LIST_INSTANCE, parseSegmentKey } from '../format/journal.ts';
import type { KeyRing } from '../format/seal.ts';
import { scanUnits } from './unit-scan.ts';

/** A suspect (a bucket the catalog lacks) is confirmed when seen again this much later. */
export const CONFIRM_MS = 50_000;
/** Headers of unknown journal units one run reads at most. */
export const LOSS_MAX_HEADERS = 64;

export type SegmentName = { instance: string; segment: number };

export interface LossDeps {
  catalog: JournalCatalog & { listBucketRecords(): Promise<{ name: string }[]> };
  backends: Backend[];
  ring?: KeyRing;
  /** Headers of unknown units read in earlier runs (kept by the caller across runs): unit id -> segment (null: not a segment). */
  headers?: Map<string, SegmentName | null>;
}

export interface LossReport {
  /** Journal units on the backends, and those the catalog does not know. */
  units: number;
  unknown: number;
  /** Headers read this run, and unknown units left unread (the next run reads them). */
  read: number;
  unread: number;
  /** The record after this run. */
  loss: CatalogLoss;
  /** Subrequests the look made (list calls, header reads, catalog calls): the journal run that follows has the rest. */
  calls: number;
}

export async function detectCatalogLoss(deps: LossDeps, now: number, maxHeaders = LOSS_MAX_HEADERS): Promise<LossReport> {
  const known = new Set<string>();
  const taken = new Map<string, number>();
  for (const instance of await deps.catalog.journalInstances()) {
    const k = await deps.catalog.journalKnown(instance);
    if (!k) continue; // deleted meanwhile
    for (const id of k.unitIds) known.add(id);
    taken.set(instance, k.taken);
  }
  // Headers read in earlier runs of this isolate: never read twice (a unit's header never changes).
  const memo = deps.headers ?? new Map<string, SegmentName | null>();
  const lists = { calls: 0 };
  const listing = deps.backends.map((b) => listingOrNothing(b, lists));
  // First the listing alone, then the headers of the newest unknown units (ids begin with their
  // write's time): the newest segments of an older catalog are what show it ahead of this one.
  const listedIds = new Set((await scanUnits(JOURNAL_BUCKET, listing, deps.ring, () => true)).skipped);
  const unknownIds = [...listedIds].filter((id) => !known.has(id));
  const toRead = new Set(
    unknownIds
      .filter((id) => !memo.has(id))
      .sort((a, b) => (idTime(b) < idTime(a) ? -1 : idTime(b) > idTime(a) ? 1 : 0))
      .slice(0, maxHeaders),
  );
  const scan = toRead.size ? await scanUnits(JOURNAL_BUCKET, listing, deps.ring, (unitId) => !toRead.has(unitId)) : null;
  for (const { info, unit } of scan?.units ?? []) memo.set(unit.unitId, parseSegmentKey(info.header.key));
  // A header that could not be read (fewer than k shards, no complete footer): not a segment we can place.
  for (const u of scan?.unrecoverable ?? []) memo.set(u.unitId, null);
  for (const id of memo.keys()) if (!listedIds.has(id)) memo.delete(id); // gone from the backends
  const unknown = unknownIds.length,
    read = toRead.size;
  const found = new Map<string, number>();
  for (const id of unknownIds) {
    const named = memo.get(id);
    if (!named) continue;
    const mine = taken.get(named.instance);
    if (mine !== undefined && named.segment <= mine) continue; // a failed write's leftover, or one being acknowledged
    found.set(named.instance, Math.max(found.get(named.instance) ?? 0, named.segment));
  }
  const before = await deps.catalog.catalogLoss();
  const loss: CatalogLoss = { lost: { ...before.lost }, suspect: {} };
  const listBehind = found.has(BUCKET_LIST_INSTANCE) || BUCKET_LIST_INSTANCE in loss.lost;
  for (const [instance, newest] of found) {
    const mine = taken.get(instance);
    const entry: LostInstance = { reason: mine === undefined ? 'unknown' : 'behind', newest, catalogSegment: mine ?? 0, foundAt: now };
    const had = loss.lost[instance] ?? before.suspect[instance];
    if (had) entry.foundAt = had.foundAt;
    if (loss.lost[instance] || entry.reason === 'behind' || listBehind || now - entry.foundAt >= CONFIRM_MS) {
      loss.lost[instance] = { ...entry, newest: Math.max(newest, loss.lost[instance]?.newest ?? 0) };
    } else loss.suspect[instance] = entry;
  }
  if (JSON.stringify(loss) !== JSON.stringify(before)) await deps.catalog.setCatalogLoss(loss);
  const instances = taken.size + 1;
  return { calls: lists.calls + 3 * read + instances + 2, units: listedIds.size, unknown, read, unread: unknownIds.filter((id) => !memo.has(id)).length, loss };
}

/** The write time a unit id begins with (a shelved id: after its shelf). */
const idTime = (unitId: string) => unitId.slice(unitId.lastIndexOf('.') + 1, unitId.lastIndexOf('.') + 17);

/** A backend whose listing failing lists nothing (a backend down must not stop the look for the others' segments). */
function listingOrNothing(b: Backend, count: { calls: number }): Backend {
  return new Proxy(b, {
    get(target, prop) {
      if (prop === 'list') return (...args: Parameters<Backend['list']>) => (count.calls++, target.list(...args).catch(() => ({ entries: [] })));
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/**
 * Why the journal run that follows a look must store nothing this time (null: it may run, lost
 * instances paused): unknown journal units are left unread while a loss is in view, so some
 * instance not yet found lost may be one, and its new segments would hide its old journal.
 */
export function journalHold(look: Pick<LossReport, 'unread' | 'loss'>): string | null {
  const inView = Object.keys(look.loss.lost).length + Object.keys(look.loss.suspect).length;
  return look.unread > 0 && inView > 0
    ? `catalog loss: ${look.unread} journal unit(s) on the backends not yet read; no segment is stored until every one is`
    : null;
}
