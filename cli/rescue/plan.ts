/**
 * From shard headers and footers to objects, without a catalog (the way worker/upkeep/rebuild.ts
 * recovers manifests, plus multipart uploads): shards group into units (by unit id); units into
 * writes (a single PUT cut into segments shares a write id); writes into objects, newest first
 * per key (superseded versions the collector has not deleted yet lose). A multipart upload's
 * parts (every part found for an upload id, by part number; the newest upload of a part number)
 * make one object, since the list of parts chosen at completion lives only in the catalog.
 * MD5 checks per write: a unit's footer holds the MD5 of its bytes; a body cut into column
 * segments has the whole body's MD5 in its last segment's footer.
 * Sealed units (opened by scan.ts) are planned as the rebuild plans them: `seal` kept and `size`
 * the plaintext size (so the layout is the stored one), header lengths those of the stored
 * headers, and the footer's MD5 unmasked with the unit's key (it is the plaintext's MD5).
 * Sealed units whose key was not given are grouped apart (SealedUnit): what they are cannot be
 * known, only their stored geometry, which is enough to check their blocks.
 */
import { toHex } from '../../worker/model/bytes.ts';
import type { CodedUnit } from '../../worker/format/manifest.ts';
import { shardKey } from '../../worker/format/shard-key.ts';
import { readShardFile, type ShardFileInfo } from '../../worker/engine/index.ts';
import { encodeHeader } from '../../worker/format/shard-file.ts';
import { maskFooterDigests, type KeyRing } from '../../worker/format/seal.ts';
import { unitSealOf, type OpenedHeader } from '../../worker/format/sealed-header.ts';
import { SEALED_BUCKET, type FoundShard, type LockedShard, type ShardIndex } from './scan.ts';
import { errorMessage } from '../../worker/model/error-message.ts';

export interface PlannedUnit {
  unit: CodedUnit;
  /** The unit's header, opened (a sealed one: identity and plaintext size restored). */
  header: OpenedHeader;
  /** Shard index -> where it was found (absent: no source has it). */
  found: Map<number, FoundShard>;
}

/** One write: a whole single PUT, or one multipart part (either possibly cut into segments). */
export interface PlannedWrite {
  id: string;
  units: PlannedUnit[];
  size: number;
  createdAt: string;
  /** MD5 checks: bytes [from, to) of the write must hash to md5 (hex). */
  md5Checks: { from: number; to: number; md5: string }[];
  partNumber?: number;
}

export interface PlannedObject {
  bucket: string;
  key: string;
  size: number;
  createdAt: string;
  metadata: unknown;
  /** The write, or a multipart upload's parts in order. */
  writes: PlannedWrite[];
  multipart?: { uploadId: string; parts: number };
}

/**
 * A sealed unit whose key was not given: nothing of its object can be read. `unit` is its stored
 * geometry (size the stored size, no seal: its bytes as they lie, ciphertext), read from the
 * shards under SEALED_BUCKET; null when no shard with a complete footer was found.
 */
export interface SealedUnit {
  unitId: string;
  /** The key id it needs. */
  kid: string;
  /** The bucket its shards' file names say, null when they say nothing. */
  bucket: string | null;
  reason: string;
  unit: CodedUnit | null;
  found: Map<number, LockedShard>;
}

/** One sealed unit that could not be opened, as reported. */
export function sealedEntry(u: SealedUnit): { unitId: string; bucket: string | null; kid: string; shards: number; reason: string } {
  return { unitId: u.unitId, bucket: u.bucket, kid: u.kid, shards: u.found.size, reason: u.reason };
}

/** The closing line about sealed units whose key was not given. */
export function sealedSummary(units: number, kids: string[]): string {
  return `${units} sealed unit(s) could not be opened: they need key(s) ${kids.map((k) => `"${k}"`).join(', ')}; give them with --key ID=BASE64, --keys-file or SHARDGATE_KEYS (their objects' buckets, keys and bytes are sealed)`;
}

export interface Unplannable {
  bucket: string;
  key: string;
  unitId: string;
  reason: string;
}

function unitOf(
  unitId: string,
  shards: Map<number, FoundShard | LockedShard>,
  info: ShardFileInfo,
  h: { size: number },
  footer: ShardFileInfo['footer'],
  sealed: boolean,
): CodedUnit {
  const raw = info.header;
  const n = raw.k + raw.m;
  const seal = sealed ? unitSealOf(raw) : undefined;
  return {
    unitId,
    codec: raw.codec,
    size: h.size,
    ...(seal ? { seal } : {}),
    k: raw.k,
    m: raw.m,
    blockSize: raw.blockSize,
    ...(raw.layout === 'column' ? { layout: raw.layout } : {}),
    placement: raw.placement,
    // Found shards: their own (stored) header length; others are never read (they are missing).
    headerLens: Array.from({ length: n }, (_, j) => shards.get(j)?.headerLen ?? encodeHeader({ ...raw, shardIndex: j }).length),
    shardDigests: footer.shardDigests.map((d) => d.toString(16).padStart(16, '0')),
    missing: [...Array(n).keys()].filter((j) => !shards.has(j)),
    md5: toHex(footer.md5),
    checksum: null,
  };
}

/** A complete footer of a unit: any shard of a striped unit; of a column unit the last data shard or a parity shard. */
async function completeFooter(index: ShardIndex, bucket: string, unitId: string, found: Map<number, unknown>): Promise<ShardFileInfo | null> {
  for (const i of [...found.keys()].sort((a, b) => b - a)) {
    const read = await readShardFile(index, shardKey(bucket, unitId, i)).catch(() => null);
    if (read && !read.footer.partial) return read;
  }
  return null;
}

/** Sealed units whose key was not given, by unit, with their stored geometry. */
async function sealedUnits(locked: LockedShard[], index: ShardIndex): Promise<SealedUnit[]> {
  const byUnit = new Map<string, Map<number, LockedShard>>();
  for (const s of locked) {
    const m = byUnit.get(s.raw.unitId) ?? new Map<number, LockedShard>();
    if (!m.has(s.raw.shardIndex)) m.set(s.raw.shardIndex, s);
    byUnit.set(s.raw.unitId, m);
  }
  const out: SealedUnit[] = [];
  for (const [unitId, found] of byUnit) {
    const any = [...found.values()];
    const info = await completeFooter(index, SEALED_BUCKET, unitId, found);
    out.push({
      unitId,
      kid: any[0]!.raw.seal.kid,
      bucket: any.find((s) => s.bucket !== null)?.bucket ?? null,
      reason: any[0]!.reason,
      found,
      unit: info ? unitOf(unitId, found, info, info.header, info.footer, false) : null,
    });
  }
  return out.sort((a, b) => (a.unitId < b.unitId ? -1 : 1));
}

/**
 * Reads one complete footer per unit and groups everything into objects (`ring` unmasks sealed
 * footers). `everyWrite`: every write of a key, not only the newest (the journal's segments: two
 * under one key are two catalogs' journals, which the replay must see to say so).
 */
export async function planObjects(
  shards: FoundShard[],
  index: ShardIndex,
  prefix = '',
  ring?: KeyRing,
  locked: LockedShard[] = [],
  options: { everyWrite?: boolean } = {},
): Promise<{ objects: PlannedObject[]; unplannable: Unplannable[]; sealed: SealedUnit[] }> {
  const byUnit = new Map<string, Map<number, FoundShard>>();
  for (const s of shards) {
    if (!s.header.key.startsWith(prefix)) continue;
    const m = byUnit.get(s.header.unitId) ?? new Map<number, FoundShard>();
    if (!m.has(s.header.shardIndex)) m.set(s.header.shardIndex, s);
    byUnit.set(s.header.unitId, m);
  }
  const unplannable: Unplannable[] = [];
  const units: PlannedUnit[] = [];
  for (const [unitId, found] of byUnit) {
    const any = found.values().next().value!.header;
    const info = await completeFooter(index, any.bucket, unitId, found);
    if (!info) {
      unplannable.push({ bucket: any.bucket, key: any.key, unitId, reason: `no readable shard with a complete footer among ${found.size} found` });
      continue;
    }
    // The header of the shard the footer came from, opened (scan.ts opened every found shard's).
    const header = found.get(info.header.shardIndex)!.header;
    let footer = info.footer;
    if (info.header.seal) {
      try {
        footer = maskFooterDigests(footer, await (await ring!.open(info.header.seal)).footerMask());
      } catch (err) {
        unplannable.push({ bucket: any.bucket, key: any.key, unitId, reason: errorMessage(err) });
        continue;
      }
    }
    units.push({ unit: unitOf(unitId, found, info, header, footer, Boolean(info.header.seal)), header, found });
  }

  // Units -> writes.
  const writes = new Map<string, PlannedUnit[]>();
  for (const u of units) {
    const id = u.header.segment?.writeId ?? u.unit.unitId;
    writes.set(id, [...(writes.get(id) ?? []), u]);
  }
  const planned: (PlannedWrite & { header: OpenedHeader })[] = [];
  for (const [id, list] of writes) {
    const h = list[0]!.header;
    if (h.segment) {
      list.sort((a, b) => a.header.segment!.index - b.header.segment!.index);
      if (list.length !== h.segment.count || list.some((u, i) => u.header.segment!.index !== i)) {
        unplannable.push({ bucket: h.bucket, key: h.key, unitId: id, reason: `a write cut into ${h.segment.count} segments: ${list.length} found` });
        continue;
      }
    }
    const size = list.reduce((n, u) => n + u.unit.size, 0);
    // One unit's footer holds its write's MD5; a write cut into (column) segments has it in its last one.
    const md5Checks = [{ from: 0, to: size, md5: list.at(-1)!.unit.md5 }];
    planned.push({ id, units: list, size, createdAt: list.at(-1)!.header.createdAt, md5Checks, partNumber: h.partNumber, header: h });
  }

  // Writes -> objects, the newest per key.
  const candidates: PlannedObject[] = [];
  const uploads = new Map<string, (PlannedWrite & { header: OpenedHeader })[]>();
  for (const w of planned) {
    if (w.header.uploadId) uploads.set(`${w.header.bucket}\n${w.header.uploadId}`, [...(uploads.get(`${w.header.bucket}\n${w.header.uploadId}`) ?? []), w]);
    else
      candidates.push({ bucket: w.header.bucket, key: w.header.key, size: w.size, createdAt: w.createdAt, metadata: w.header.metadata ?? null, writes: [w] });
  }
  for (const parts of uploads.values()) {
    const byNumber = new Map<number, PlannedWrite & { header: OpenedHeader }>();
    for (const p of parts) {
      const prev = byNumber.get(p.partNumber!);
      if (!prev || `${prev.createdAt} ${prev.id}` < `${p.createdAt} ${p.id}`) byNumber.set(p.partNumber!, p);
    }
    const ordered = [...byNumber.values()].sort((a, b) => a.partNumber! - b.partNumber!);
    const h = ordered[0]!.header;
    candidates.push({
      bucket: h.bucket,
      key: h.key,
      size: ordered.reduce((n, p) => n + p.size, 0),
      createdAt: ordered
        .map((p) => p.createdAt)
        .sort()
        .at(-1)!,
      metadata: null,
      writes: ordered,
      multipart: { uploadId: h.uploadId!, parts: ordered.length },
    });
  }
  const newest = new Map<string, PlannedObject>();
  const age = (o: PlannedObject) => `${o.createdAt} ${o.writes.at(-1)!.id}`;
  for (const c of candidates) {
    const k = `${c.bucket}\n${c.key}${options.everyWrite ? `\n${c.writes.at(-1)!.id}` : ''}`;
    const prev = newest.get(k);
    if (!prev || age(prev) < age(c)) newest.set(k, c);
  }
  const objects = [...newest.values()].sort((a, b) => (a.bucket === b.bucket ? (a.key < b.key ? -1 : 1) : a.bucket < b.bucket ? -1 : 1));
  return { objects, unplannable, sealed: await sealedUnits(locked, index) };
}
