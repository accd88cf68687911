/**
 * What one committed manifest adds to its bucket's ledger (bucket health, issue 13): one object,
 * its bytes, and per backend the shard files it holds and their stored length; plus the units it
 * has with shards missing (a write that reached quorum without them; repair takes them off).
 * The catalog's ledger (sql-ledger.ts) counts with these functions.
 */
import type { ObjectManifest } from '../format/manifest.ts';
import { shardLayout } from '../format/layout.ts';
import type { ClassUsage } from './ledger-figures.ts';
import { placementEntries } from './placement-counts.ts';
import { redundancyEntries } from './redundancy.ts';

/** Ledger entries a manifest accounts for: 'objects', 'bytes', 'inline-bytes', 'shards:<backend>', 'stored:<backend>',
 *  and per unit 'units:<k+m>:<missing>' and 'unit-bytes:<k+m>:<missing>' (redundancy.ts), 'placed-units:<k+m>:<backends>'
 *  and 'placed-bytes:<k+m>:<backends>' (placement-counts.ts); a version of a storage class other than STANDARD also
 *  'class-objects:<class>', 'class-bytes:<class>' and 'class-stored:<class>' (STANDARD's are the rest: classEntries). */
export function usageOf(manifest: ObjectManifest | null | undefined): Map<string, number> {
  const out = new Map<string, number>();
  if (!manifest) return out;
  const add = (name: string, n: number) => out.set(name, (out.get(name) ?? 0) + n);
  add('objects', 1);
  add('bytes', manifest.size);
  const cls = manifest.metadata.storageClass;
  if (cls) {
    add(`class-objects:${cls}`, 1);
    add(`class-bytes:${cls}`, manifest.size);
  }
  if (manifest.storage.kind === 'inline') {
    add('inline-bytes', manifest.size);
    return out;
  }
  for (const unit of manifest.storage.units) {
    for (const [name, n] of [...redundancyEntries(unit), ...placementEntries(unit)]) add(name, n);
    unit.placement.forEach((backend, i) => {
      if (unit.missing.includes(i)) return;
      const len = shardLayout(unit, i).shardFileLen(); // the file's length: format/layout.ts
      add(`shards:${backend}`, 1);
      add(`stored:${backend}`, len);
      if (cls) add(`class-stored:${cls}`, len);
    });
  }
  return out;
}

/** The class entries of one manifest alone (the count of what an older release stored: schema-migrations.ts). */
export function classEntries(manifest: ObjectManifest): [string, number][] {
  return [...usageOf(manifest)].filter(([name]) => name.startsWith('class-'));
}

/**
 * Per storage class, from a bucket's ledger values: the counted classes, and STANDARD as what the
 * bucket holds besides them (versions written before classes existed are STANDARD, uncounted).
 * A class with nothing stored is left out.
 */
export function classesFromLedger(values: Map<string, number>): ClassUsage {
  const out: ClassUsage = {};
  let stored = 0;
  for (const [name, n] of values) if (name.startsWith('stored:')) stored += n;
  const standard = { objects: values.get('objects') ?? 0, bytes: values.get('bytes') ?? 0, storedBytes: stored };
  for (const [name, n] of values) {
    const m = /^class-(objects|bytes|stored):(.+)$/.exec(name);
    if (!m || n === 0) continue;
    const c = (out[m[2]!] ??= { objects: 0, bytes: 0, storedBytes: 0 });
    const field = m[1] === 'stored' ? 'storedBytes' : (m[1] as 'objects' | 'bytes');
    c[field] += n;
    standard[field] -= n;
  }
  if (standard.objects > 0) out.STANDARD = standard;
  return out;
}

/** Class usages summed (over buckets). */
export function sumClasses(all: ClassUsage[]): ClassUsage {
  const out: ClassUsage = {};
  for (const u of all)
    for (const [c, x] of Object.entries(u)) {
      const t = (out[c] ??= { objects: 0, bytes: 0, storedBytes: 0 });
      t.objects += x.objects;
      t.bytes += x.bytes;
      t.storedBytes += x.storedBytes;
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

export type { ClassUsage };
