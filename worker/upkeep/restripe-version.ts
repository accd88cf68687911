/**
 * One stored object version re-striped (issue 26): its bytes read through the normal decode path
 * (UnitStore.open: every block checked against its checksum, sealed units opened with the key
 * ring), written again through the normal writer under the bucket's policy now, and swapped in by
 * compare-and-set on the version's manifest (catalog commitRestripe). Until the swap commits the
 * old units are what every read uses; after it, the old units are queued for deletion after the
 * grace delay (reads that looked up the old manifest finish). A change to the version meanwhile (a
 * delete, an overwrite of the null version, a tag or lock change, a repair) wins: the new units
 * are queued for deletion at once and the version is tried again by a later pass.
 * A multipart object is rewritten part by part (its part boundaries, part numbers, per-part
 * checksums, ETag and partsCount stay exactly as they were: GET ?partNumber= answers the same);
 * an inline object whose size the new policy codes is coded, and the other way round. What is
 * not changed: the version id, Last-Modified (also in the new shard headers), metadata, tags,
 * lock, checksums, whether it is sealed (a sealed object is sealed again, under a fresh data key
 * wrapped by the active key; a clear one stays clear, whatever the policy says for new writes).
 * Checks before the swap: every new unit whole (all k+m shards written: the rewrite never lowers
 * redundancy, so quorum is k+m), the MD5 of what was written equal to the ETag (single PUT) or
 * the multipart ETag recomputed from the parts' MD5s, the checksums (FULL_OBJECT, and each part's
 * own) recomputed equal; any failure leaves the version as it was.
 * Not re-striped (counted 'blocked'): versions sealed under a customer's key (SSE-C), which the
 * gateway cannot open; they stay readable under the old geometry.
 */
import type { ObjectChecksum } from '../model/object-store.ts';
import { toHex } from '../model/bytes.ts';
import { multipartEtag } from '../model/multipart.ts';
import { CUSTOMER_KID, isNamedKid } from '../format/seal.ts';
import { etagFor } from '../model/sse.ts';
import type { CodedUnit, ObjectManifest } from '../format/manifest.ts';
import { withClass } from '../model/storage-class.ts';
import type { RestripeChange, VersionRecord } from '../catalog/types.ts';
import type { RestripeCatalog } from '../catalog/ports.ts';
import type { StoragePolicy, UnitStore } from '../engine/index.ts';
import type { Charge } from './pacer.ts';
import { errorMessage } from '../model/error-message.ts';

export interface RewriteDeps {
  catalog: RestripeCatalog;
  units: UnitStore;
  /** The bucket's policy now: what the version is rewritten under (unless `policyOf` says otherwise). */
  policy: StoragePolicy;
  /**
   * The policy of the version's storage class (issue 44: a class names a policy); null: its
   * class is not configured now, and it is left as it is (blocked). Absent: `policy` for all.
   */
  policyOf?: (m: ObjectManifest) => StoragePolicy | null;
  graceMs: number;
  /** How long the rewrite's units stay reserved (config writeReservationSeconds): an abandoned rewrite's shards are collected after. */
  writeReservationSeconds: number;
  now?: () => number;
}

export type RewriteOutcome =
  /** Already stored as the policy says: nothing to do. */
  | { kind: 'conforms' }
  /** Swapped: `bytes` of object data rewritten. */
  | { kind: 'rewritten'; bytes: number }
  /** The version changed or went meanwhile: a client's write won (the rewrite is garbage). */
  | { kind: 'gone' }
  /** Cannot be re-striped by the gateway (SSE-C); `units`: its units, which stay under the old geometry. */
  | { kind: 'blocked'; reason: string; units: number /** When it may become rewritable (ms), if ever by itself. */; until?: number }
  /** Not now (a backend refused, a check failed); tried again by a later pass. */
  | { kind: 'failed'; error: string }
  /** The run's pacing or deadline stopped it before anything was written. */
  | { kind: 'stopped' };

/** One piece written on its own: the whole object, or one part of a multipart object. */
interface Piece {
  storage: ObjectManifest['storage'];
  size: number;
  /** A multipart part: its number and its own checksum (kept on every unit of the part). */
  part?: { partNumber: number; checksum?: ObjectChecksum | null };
}

/** The object's pieces: itself, or its parts (consecutive units with one part number: a part of a wide code spans several). */
export function piecesOf(m: ObjectManifest): Piece[] {
  if (m.storage.kind === 'inline' || !m.partsCount) return [{ storage: m.storage, size: m.size }];
  const pieces: (Piece & { units: CodedUnit[] })[] = [];
  m.storage.units.forEach((u, i) => {
    const number = u.partNumber ?? i + 1;
    const last = pieces[pieces.length - 1];
    if (last && last.part!.partNumber === number) {
      last.units.push(u);
      last.size += u.size;
    } else {
      const units = [u];
      pieces.push({
        storage: { kind: 'coded', units },
        units,
        size: u.size,
        part: { partNumber: number, ...(u.checksum !== undefined ? { checksum: u.checksum } : {}) },
      });
    }
  });
  return pieces.map(({ units: _u, ...p }) => p);
}

/**
 * Whether the piece is stored as `policy` would store it now: inline or not, each unit's codec and
 * k+m, and, for a policy with a pool of backends (config `backends`), every present shard in it.
 */
function pieceConforms(p: Piece, policy: StoragePolicy, units: UnitStore): boolean {
  const plan = units.plan(p.size, policy, !!p.part);
  if (plan.mode === 'inline') return p.storage.kind === 'inline';
  const pool = policy.backends;
  const inPool = (u: CodedUnit) => !pool || u.placement.every((id, i) => u.missing.includes(i) || pool.includes(id));
  return p.storage.kind === 'coded' && p.storage.units.every((u) => u.codec === plan.codec && u.k === plan.k && u.m === plan.m && inPool(u));
}

const sealsOf = (s: ObjectManifest['storage']) => (s.kind === 'inline' ? (s.seal ? [s.seal] : []) : s.units.flatMap((u) => (u.seal ? [u.seal] : [])));

/** A planned piece: how it will be written and what it will ask of each backend. */
interface Planned {
  piece: Piece;
  plan: ReturnType<UnitStore['plan']>;
  policy: StoragePolicy;
}

/**
 * What rewriting the planned pieces asks of each backend, roughly: reading k shards of each old
 * unit (its data shards' backends, a GET each) and writing every shard of each new one (a PUT
 * each); bytes are the unit's bytes over k per shard.
 */
export function chargesOf(bucket: string, key: string, planned: Planned[], units: UnitStore): Map<string, Charge> {
  const charges = new Map<string, Charge>();
  const add = (id: string, bytes: number) => {
    const c = charges.get(id) ?? { bytes: 0, requests: 0 };
    charges.set(id, { bytes: c.bytes + bytes, requests: c.requests + 1 });
  };
  for (const { piece, plan, policy } of planned) {
    if (piece.storage.kind === 'coded') for (const u of piece.storage.units) for (const id of u.placement.slice(0, u.k)) add(id, Math.ceil(u.size / u.k));
    if (plan.mode === 'inline') continue;
    const perUnit = piece.size / plan.unitIds.length;
    for (let n = 0; n < plan.unitIds.length; n++)
      for (const b of units.placementOf(bucket, key, plan.k, plan.m, policy)) add(b.id, Math.ceil(perUnit / plan.k));
  }
  return charges;
}

/** Backend requests the charges add up to (a Worker invocation has a subrequest limit). */
export const requestsOf = (charges: Map<string, Charge>): number => [...charges.values()].reduce((n, c) => n + c.requests, 0);

/**
 * The version's plan: null when it conforms; 'blocked' when it cannot be rewritten; else its
 * pieces, each planned under the policy (sealed exactly when it was), with the backends' charges.
 */
export async function planRewrite(
  bucket: string,
  m: ObjectManifest,
  deps: Pick<RewriteDeps, 'policy' | 'policyOf' | 'units' | 'now'>,
): Promise<null | { blocked: string; units: number; until?: number } | { planned: Planned[]; charges: Map<string, Charge> }> {
  const pieces = piecesOf(m);
  const oldUnits = m.storage.kind === 'coded' ? m.storage.units : [];
  const target = deps.policyOf ? deps.policyOf(m) : deps.policy;
  if (target === null)
    return { blocked: `its storage class ${m.metadata.storageClass} is not configured (storageClasses): left as it is`, units: oldUnits.length };
  if (pieces.every((p) => pieceConforms(p, target, deps.units))) return null;
  if (sealsOf(m.storage).some((s) => s.kid === CUSTOMER_KID))
    return { blocked: "sealed under the client's key (SSE-C): the gateway cannot open it", units: oldUnits.length };
  const lock = m.metadata.objectLock;
  const retaining = oldUnits.flatMap((u) => u.placement).find((id) => deps.units.byId.get(id)?.retain);
  if (lock?.mode === 'COMPLIANCE' && lock.retainUntil && Date.parse(lock.retainUntil) > (deps.now ?? Date.now)() && retaining) {
    // Its shards on a backend that enforces retention could not be deleted until it ends: the
    // collector would retry them for as long. Re-striped once the retention is over.
    return {
      blocked: `COMPLIANCE-retained until ${lock.retainUntil} on backend ${retaining}, which enforces it: re-striped once the retention ends`,
      units: oldUnits.length,
      until: Date.parse(lock.retainUntil),
    };
  }
  const shelf = await deps.units.shelfOf(bucket);
  const planned = pieces.map((piece) => {
    const sealed = sealsOf(piece.storage).length > 0;
    // A clear object stays clear: the policy's own sealing is for new writes.
    const policy = sealed ? target : { ...target, encrypt: false };
    const base = deps.units.plan(piece.size, policy, !!piece.part, sealed, shelf);
    // Every shard or nothing: a rewrite never stores a version with less redundancy than asked.
    return { piece, policy, plan: { ...base, quorum: base.k + base.m } };
  });
  return { planned, charges: chargesOf(bucket, m.key, planned, deps.units) };
}

/**
 * Rewrites the version read as `record` (its manifest JSON) under `deps.policy`. `admit` is asked
 * once the version is planned, with what it will ask of each backend: false stops it before
 * anything is written.
 */
export async function restripeVersion(
  bucket: string,
  record: VersionRecord,
  deps: RewriteDeps,
  admit: (charges: Map<string, Charge>) => Promise<boolean> = async () => true,
  change?: RestripeChange,
): Promise<RewriteOutcome> {
  const stored = JSON.parse(record.json) as ObjectManifest;
  // A change of class (a lifecycle transition): planned, written (the shard headers' metadata) and committed with the new class.
  const m: ObjectManifest = change ? { ...stored, metadata: withClass(stored.metadata, change.storageClass) } : stored;
  const planning = await planRewrite(bucket, m, deps);
  if (planning === null) {
    if (!change || (stored.metadata.storageClass ?? null) === change.storageClass) return { kind: 'conforms' };
    // Stored as the new class's policy stores it already (two classes, one policy): only the class changes.
    const outcome = await deps.catalog.commitRestripe(
      bucket,
      record.at,
      record.json,
      stored.storage,
      new Date((deps.now ?? Date.now)() + deps.graceMs),
      change,
    );
    return outcome === 'rewritten' ? { kind: 'rewritten', bytes: 0 } : { kind: 'gone' };
  }
  if ('blocked' in planning)
    return { kind: 'blocked', reason: planning.blocked, units: planning.units, ...(planning.until !== undefined ? { until: planning.until } : {}) };
  if (!(await admit(planning.charges))) return { kind: 'stopped' };
  const now = deps.now ?? Date.now;
  const lifetime = deps.writeReservationSeconds * 1000;
  const started = now();
  // As a client's write: committed well before the reservation ends and the collector may take its shards.
  const commitBy = started + lifetime - Math.min(lifetime / 10, 10 * 60_000);
  const unitIds = planning.planned.flatMap((p) => p.plan.unitIds);
  if (unitIds.length) await deps.catalog.reserveUnits(bucket, unitIds, new Date(started + lifetime), record.at.key);
  const written: CodedUnit[] = [];
  let storage: ObjectManifest['storage'] = { kind: 'coded', units: written };
  try {
    const md5s: string[] = [];
    for (const { piece, plan, policy } of planning.planned) {
      const stored = await writePiece(bucket, m, piece, plan, policy, deps.units);
      if (stored.storage.kind === 'coded') written.push(...stored.storage.units);
      md5s.push(toHex(stored.md5));
      // A whole object may become inline (the parts of a multipart object are always coded).
      if (!piece.part) storage = stored.storage;
    }
    checkEtag(m, md5s);
    if (written.some((u) => u.missing.length)) throw new Error('a shard of the rewrite was not written');
    const first = m.storage.kind === 'coded' ? m.storage.units[0] : undefined;
    if (first?.tagRecord && !m.partsCount && storage.kind === 'coded') {
      // The tags as last set, beside the new first unit too (a rebuild from the backends prefers them to the header's).
      await deps.units.writeTagRecord(bucket, m.key, storage.units[0]!, m.metadata.tags ?? []);
      storage.units[0]!.tagRecord = true;
    }
    const lock = m.metadata.objectLock;
    if (lock?.mode === 'COMPLIANCE' && lock.retainUntil && Date.parse(lock.retainUntil) > now() && written.length) {
      // Mirrored onto the new shards before the old may go (backends without retention are skipped).
      const failed = await deps.units.retain(bucket, written, new Date(lock.retainUntil));
      if (failed) throw new Error(`${failed} shard(s) of the rewrite could not be given the version's COMPLIANCE retention`);
    }
    if (now() > commitBy) throw new Error('the rewrite took longer than writeReservationSeconds allows');
  } catch (err) {
    // Nothing references the new units: deleted now; what a delete misses, the reservation brings the collector back for.
    await deps.units.discard(bucket, written);
    return { kind: 'failed', error: errorMessage(err) };
  }
  // A failed call here may have committed: the units are left to the reservation (released by a commit).
  const outcome = await deps.catalog.commitRestripe(bucket, record.at, record.json, storage, new Date(now() + deps.graceMs), change);
  return outcome === 'rewritten' ? { kind: 'rewritten', bytes: m.size } : { kind: 'gone' };
}

/** One piece through the normal writer; the units of a part keep its number and its own checksum. */
async function writePiece(bucket: string, m: ObjectManifest, piece: Piece, plan: Planned['plan'], policy: StoragePolicy, units: UnitStore) {
  const body = await units.open(bucket, m.key, piece.storage, 0, piece.size - 1);
  // The checksum the piece was stored with, recomputed and compared (a part's own; the object's when whole).
  const known = piece.part ? piece.part.checksum : m.checksum?.type === 'FULL_OBJECT' ? m.checksum : null;
  try {
    const stored = await units.storeBody({
      bucket,
      key: m.key,
      body,
      size: piece.size,
      policy,
      plan,
      checksum: known ? { algorithm: known.algorithm, expected: known.value } : null,
      // A part's header names an upload; the original's id is not kept, the version's stands in.
      ...(piece.part ? { part: { uploadId: m.versionId, partNumber: piece.part.partNumber } } : { metadata: m.metadata }),
      createdAt: m.lastModified,
      // An SSE-KMS piece stays under its named key (the version it was under: a rotation moves it on), never the gateway's.
      kmsKid: sealsOf(piece.storage).find((s) => isNamedKid(s.kid))?.kid,
    });
    if (piece.part && stored.storage.kind === 'coded' && piece.part.checksum !== undefined) {
      for (const u of stored.storage.units) u.checksum = piece.part.checksum;
    }
    return stored;
  } finally {
    await body.cancel().catch(() => {}); // a no-op once read to its end
  }
}

/** The MD5s of what was written against the ETag: a single PUT's own, a multipart object's from its parts'. */
function checkEtag(m: ObjectManifest, md5s: string[]): void {
  if (!m.partsCount) {
    // An SSE-KMS object's ETag is not its MD5 but etagFor of it (model/sse.ts); etagFor of any other is the MD5.
    if (/^"[0-9a-f]{32}"$/.test(m.etag) && m.etag !== etagFor(md5s[0]!, m.metadata.sse)) throw new Error(`the bytes read do not match the ETag ${m.etag}`);
    return;
  }
  if (/^"[0-9a-f]{32}-\d+"$/.test(m.etag) && multipartEtag(md5s.map((h) => etagFor(h, m.metadata.sse))) !== m.etag)
    throw new Error(`the parts read do not match the ETag ${m.etag}`);
}
