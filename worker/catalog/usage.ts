/**
 * What one committed manifest adds to its bucket's ledger (bucket health, issue 13): one object,
 * its bytes, and per backend the shard files it holds and their stored length; plus the units it
 * has with shards missing (a write that reached quorum without them; repair takes them off).
 * The catalog's ledger (sql-ledger.ts) counts with these functions.
 */
import type { ObjectManifest } from '../format/manifest.ts';
import { shardLayout } from '../format/layout.ts';
import { placementEntries } from './placement-counts.ts';
import { redundancyEntries } from './redundancy.ts';

/** Ledger entries a manifest accounts for: 'objects', 'bytes', 'inline-bytes', 'shards:<backend>', 'stored:<backend>',
 *  and per unit 'units:<k+m>:<missing>' and 'unit-bytes:<k+m>:<missing>' (redundancy.ts), 'placed-units:<k+m>:<backends>'
 *  and 'placed-bytes:<k+m>:<backends>' (placement-counts.ts). */
export function usageOf(manifest: ObjectManifest | null | undefined): Map<string, number> {
  const out = new Map<string, number>();
  if (!manifest) return out;
  const add = (name: string, n: number) => out.set(name, (out.get(name) ?? 0) + n);
  add('objects', 1);
  add('bytes', manifest.size);
  if (manifest.storage.kind === 'inline') {
    add('inline-bytes', manifest.size);
    return out;
  }
  for (const unit of manifest.storage.units) {
    for (const [name, n] of [...redundancyEntries(unit), ...placementEntries(unit)]) add(name, n);
    unit.placement.forEach((backend, i) => {
      if (unit.missing.includes(i)) return;
      add(`shards:${backend}`, 1);
      add(`stored:${backend}`, shardLayout(unit, i).shardFileLen()); // the file's length: format/layout.ts
    });
  }
  return out;
}

/** The change in ledger entries from `before` to `after` (either may be absent). */
export function usageDelta(before: ObjectManifest | null | undefined, after: ObjectManifest | null | undefined): Map<string, number> {
  const delta = usageOf(after);
  for (const [name, n] of usageOf(before)) delta.set(name, (delta.get(name) ?? 0) - n);
  for (const [name, n] of delta) if (n === 0) delta.delete(name);
  return delta;
}

/** Units of a manifest with shards missing. */
export function degradedUnitsOf(manifest: ObjectManifest | null | undefined): { unitId: string; missing: number[]; spare: number }[] {
  if (manifest?.storage.kind !== 'coded') return [];
  // spare: how many more shards the unit can lose (replicas: copies beyond the first).
  return manifest.storage.units.filter((u) => u.missing.length > 0).map((u) => ({ unitId: u.unitId, missing: [...u.missing], spare: u.m - u.missing.length }));
}
