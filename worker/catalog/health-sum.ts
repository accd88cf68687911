/**
 * A split bucket's health (the `sum` scope, docs/PARTITIONS.md): each partition counts what it
 * holds, the client adds them up. Counts add; the oldest of "oldest" figures is taken; a scrub
 * pass of the bucket is as far as its slowest partition's; bytes per storage class add; the root's own records (lifecycle,
 * journal, re-stripe: upkeep state that stays in the root until upkeep runs per partition) are the
 * root's.
 */
import type { BucketHealth, ScrubProgress } from './types.ts';
import { sumEventStatus } from './sql-outbox.ts';
import type { PlacementCount } from './ledger-figures.ts';
import type { PolicyRedundancy } from './ledger-figures.ts';

function addRecords<T>(a: Record<string, T>, b: Record<string, T>, add: (x: T, y: T) => T): Record<string, T> {
  const out = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = k in out ? add(out[k]!, v) : v;
  return out;
}

function addNumbers<T extends Record<string, unknown>>(a: T, b: T): T {
  const out = { ...a } as Record<string, unknown>;
  for (const [k, v] of Object.entries(b)) {
    const x = out[k];
    if (typeof v === 'number' && typeof x === 'number') out[k] = x + v;
    else if (v && typeof v === 'object' && !Array.isArray(v)) out[k] = addNumbers((x ?? {}) as Record<string, unknown>, v as Record<string, unknown>);
    else if (x === undefined) out[k] = v;
  }
  return out as T;
}

/** One policy's ladder from two partitions: the same rungs (by shards left), units and bytes added. */
function sumPolicy(a: PolicyRedundancy, b: PolicyRedundancy): PolicyRedundancy {
  const rungs = new Map(a.byShardsLeft.map((r) => [r.shardsLeft, { ...r }]));
  for (const r of b.byShardsLeft) {
    const same = rungs.get(r.shardsLeft);
    if (same) [same.units, same.bytes] = [same.units + r.units, same.bytes + r.bytes];
    else rungs.set(r.shardsLeft, { ...r });
  }
  return {
    k: a.k,
    m: a.m,
    byShardsLeft: [...rungs.values()].sort((x, y) => y.shardsLeft - x.shardsLeft),
    belowK: { units: a.belowK.units + b.belowK.units, bytes: a.belowK.bytes + b.belowK.bytes },
  };
}

function sumRedundancy(a: BucketHealth['redundancy'], b: BucketHealth['redundancy']): BucketHealth['redundancy'] {
  return {
    atRisk: a.atRisk + b.atRisk,
    lost: a.lost + b.lost,
    atRiskBytes: a.atRiskBytes + b.atRiskBytes,
    lostBytes: a.lostBytes + b.lostBytes,
    byMissing: addRecords(a.byMissing, b.byMissing, (x, y) => x + y),
    byPolicy: addRecords(a.byPolicy, b.byPolicy, sumPolicy),
  };
}

function minOf(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.min(a, b);
}

function sumScrub(a: ScrubProgress, b: ScrubProgress): ScrubProgress {
  const older =
    a.oldestUnchecked === null
      ? b.oldestUnchecked
      : b.oldestUnchecked === null || a.oldestUnchecked.since <= b.oldestUnchecked.since
        ? a.oldestUnchecked
        : b.oldestUnchecked;
  return {
    units: a.units + b.units,
    checked: a.checked + b.checked,
    oldestUnchecked: older,
    passStartedAt: minOf(a.passStartedAt, b.passStartedAt),
    lastPassStartedAt: minOf(a.lastPassStartedAt, b.lastPassStartedAt),
    lastPassCompletedAt: minOf(a.lastPassCompletedAt, b.lastPassCompletedAt),
    passes: Math.min(a.passes, b.passes),
  };
}

function samePlacement(a: PlacementCount, b: PlacementCount): boolean {
  return a.k === b.k && a.m === b.m && a.on.length === b.on.length && a.on.every((x, i) => x === b.on[i]);
}

function sumPlacements(a: PlacementCount[] | undefined, b: PlacementCount[] | undefined): PlacementCount[] | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  const out = a.map((p) => ({ ...p }));
  for (const p of b) {
    const same = out.find((q) => samePlacement(q, p));
    if (same) [same.units, same.bytes] = [same.units + p.units, same.bytes + p.bytes];
    else out.push({ ...p });
  }
  return out;
}

/** The bucket's health from its partitions', the root's first. */
export function sumHealth([root, ...rest]: [BucketHealth, ...BucketHealth[]]): BucketHealth {
  let out = root;
  for (const h of rest) {
    out = {
      ...out,
      objects: out.objects + h.objects,
      bytes: out.bytes + h.bytes,
      inlineBytes: out.inlineBytes + h.inlineBytes,
      backends: addRecords(out.backends, h.backends, (x, y) => ({ shards: x.shards + y.shards, bytes: x.bytes + y.bytes })),
      degradedObjects: out.degradedObjects + h.degradedObjects,
      degradedUnits: out.degradedUnits + h.degradedUnits,
      missingShards: out.missingShards + h.missingShards,
      redundancy: sumRedundancy(out.redundancy, h.redundancy),
      placements: sumPlacements(out.placements, h.placements),
      oldestDegradedAt: minOf(out.oldestDegradedAt, h.oldestDegradedAt),
      repairStuck: out.repairStuck + h.repairStuck,
      uploads: out.uploads + h.uploads,
      reservations: addNumbers(out.reservations, h.reservations),
      garbage: addNumbers(out.garbage, h.garbage),
      scrub: sumScrub(out.scrub, h.scrub),
      ...(out.partitions || h.partitions ? { partitions: [...(out.partitions ?? []), ...(h.partitions ?? [])] } : {}),
      ...sumQuotaUsage(out, h),
      ...(out.events || h.events ? { events: sumEventStatus([out.events ?? [], h.events ?? []]) } : {}),
      ...(out.classes || h.classes
        ? {
            classes: addRecords(out.classes ?? {}, h.classes ?? {}, (x, y) => ({
              objects: x.objects + y.objects,
              bytes: x.bytes + y.bytes,
              storedBytes: x.storedBytes + y.storedBytes,
            })),
          }
        : {}),
    };
  }
  return out;
}

/** Versions, markers and parts in flight add; the quota is the root's, what it counts adds. */
function sumQuotaUsage(a: BucketHealth, b: BucketHealth): Pick<BucketHealth, 'versions' | 'deleteMarkers' | 'multipartBytes' | 'quota'> {
  const add = (x: number | undefined, y: number | undefined) => (x === undefined && y === undefined ? undefined : (x ?? 0) + (y ?? 0));
  const out: Pick<BucketHealth, 'versions' | 'deleteMarkers' | 'multipartBytes' | 'quota'> = {};
  for (const k of ['versions', 'deleteMarkers', 'multipartBytes'] as const) {
    const v = add(a[k], b[k]);
    if (v !== undefined) out[k] = v;
  }
  if (a.quota)
    out.quota = { ...a.quota, usedBytes: a.quota.usedBytes + (b.quota?.usedBytes ?? 0), usedObjects: a.quota.usedObjects + (b.quota?.usedObjects ?? 0) };
  return out;
}
