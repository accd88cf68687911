/**
 * Key rotation (format/seal.ts): every wrapped data key in every bucket's catalog is re-wrapped
 * under key `to`, in passes of bounded batches, touching the catalog only: the sealed bytes on the
 * backends never change (the data keys do not), so rotation costs no shard read or write.
 *
 * Progress lives in each bucket's catalog (state 'key-rotation': the target, a cursor, counts),
 * so a run cut short (a deadline, a crash) goes on where it stopped. A record changed between
 * its read and its replacement (a tag change, a part re-uploaded) is not overwritten: the pass
 * counts it and the bucket gets another pass. A bucket is done when a whole pass meets no such
 * record; then nothing in it is wrapped under any key but `to`, and older keys may leave the ring.
 * `to` must be the ring's active key, so writes during the rotation are wrapped under it too.
 *
 * The same passes rotate a named KMS key (rotateNamedKey, engine/kms-keys.ts): the data keys
 * wrapped under its older versions are re-wrapped under its current one, and nothing else is
 * touched. The gateway's rotation leaves SSE-KMS data keys alone (the named key's material is what
 * the gateway's keys wrap: KmsKeys.rewrapMaterials) and SSE-C ones (the client's key).
 * Both keep their progress in the one rotation record per bucket: a rotation started while
 * another is unfinished starts that bucket's record afresh (nothing is lost, a pass is repeated).
 */
import { CUSTOMER_KID, isNamedKid, SealError, type KeyRing, type UnitSeal } from '../format/seal.ts';
import { namedKid } from '../model/kms-key.ts';
import type { SealRecordCursor } from '../catalog/types.ts';
import type { KeyCatalog } from '../catalog/ports.ts';
import { forEachBucket } from './each-bucket.ts';

export interface BucketRotation {
  bucket: string;
  to: string;
  /** Records read in the current pass, and re-wrapped, since the rotation to `to` began. */
  scanned: number;
  rewrapped: number;
  /** Records found changed when replaced (retried by another pass). */
  conflicts: number;
  /** Records sealed under a key not in the ring: they cannot be re-wrapped (the key is needed). */
  unopenable: number;
  passes: number;
  cursor: SealRecordCursor | null;
  done: boolean;
}

export interface RotationReport {
  to: string;
  done: boolean;
  buckets: BucketRotation[];
}

function isSeal(v: unknown): v is UnitSeal {
  const o = v as Partial<UnitSeal> | null;
  return !!o && typeof o === 'object' && o.alg === 'A256GCM' && typeof o.kid === 'string' && typeof o.wrapped === 'string';
}

/** What a rotation re-wraps: seals whose kid `wants` says, under `to`. */
interface RotationTarget {
  to: string;
  wants: (kid: string) => boolean;
}

/** Re-wraps, in place, every seal found in `value` that the target wants; counts what changed and what could not. */
async function rewrapIn(value: unknown, ring: KeyRing, target: RotationTarget, count: { changed: number; unopenable: number }): Promise<void> {
  if (!value || typeof value !== 'object') return;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (isSeal(v)) {
      if (!target.wants(v.kid)) continue;
      try {
        (value as Record<string, unknown>)[k] = await ring.rewrap(v, target.to);
        count.changed++;
      } catch (err) {
        if (!(err instanceof SealError)) throw err;
        count.unopenable++;
      }
    } else {
      await rewrapIn(v, ring, target, count);
    }
  }
}

/**
 * Runs the rotation to `to` over every bucket until `deadline` (ms since the epoch) or until every
 * bucket is done; call again to go on. `batch`: records per catalog round trip.
 */
export async function rotateKeys(catalog: KeyCatalog, ring: KeyRing, to: string, o: { deadline: number; batch?: number }): Promise<RotationReport> {
  if (!ring.has(to)) throw new SealError(`key "${to}" is not in the key ring (have: ${ring.ids().join(', ') || 'none'})`);
  if (ring.active !== to)
    throw new SealError(`rotate to the active key: make "${to}" encryption.active first (it is "${ring.active}"), so new writes are wrapped under it too`);
  // SSE-C keys are the client's, SSE-KMS ones the named key's: neither is the gateway's to rotate.
  return runRotation(catalog, ring, { to, wants: (kid) => kid !== to && kid !== CUSTOMER_KID && !isNamedKid(kid) }, o);
}

/**
 * Re-wraps every data key wrapped under an older version of named KMS key `id` under its
 * `version` (its current one: new writes use it too); call again until done, as rotateKeys.
 */
export async function rotateNamedKey(
  catalog: KeyCatalog,
  ring: KeyRing,
  id: string,
  version: number,
  o: { deadline: number; batch?: number },
): Promise<RotationReport> {
  const to = namedKid(id, version);
  const mine = namedKid(id, 0).replace(/0$/, '');
  return runRotation(catalog, ring, { to, wants: (kid) => kid !== to && kid.startsWith(mine) }, o);
}

async function runRotation(catalog: KeyCatalog, ring: KeyRing, target: RotationTarget, o: { deadline: number; batch?: number }): Promise<RotationReport> {
  const { to } = target;
  const batch = o.batch ?? 200;
  const buckets: BucketRotation[] = [];
  await forEachBucket(catalog, async (bucket) => {
    const saved = await catalog.getRotationState(bucket);
    let state: BucketRotation = saved ? (JSON.parse(saved) as BucketRotation) : fresh(bucket, to);
    if (state.to !== to) state = fresh(bucket, to);
    while (!state.done && Date.now() < o.deadline) {
      const records = await catalog.listSealRecords(bucket, state.cursor, batch);
      const items: { at: SealRecordCursor; before: string; after: string }[] = [];
      for (const r of records) {
        const value = JSON.parse(r.json) as unknown;
        const count = { changed: 0, unopenable: 0 };
        await rewrapIn(value, ring, target, count);
        state.unopenable += count.unopenable;
        if (count.changed) items.push({ at: r.at, before: r.json, after: JSON.stringify(value) });
      }
      const replaced = items.length ? await catalog.replaceSealRecords(bucket, items) : 0;
      state.scanned += records.length;
      state.rewrapped += replaced;
      state.conflicts += items.length - replaced;
      state.cursor = records.length ? records[records.length - 1]!.at : state.cursor;
      if (records.length < batch) {
        // The pass is over: done unless a record changed under it (then another pass).
        state.passes++;
        if (state.conflicts === 0) state.done = true;
        else Object.assign(state, { cursor: null, conflicts: 0, scanned: 0, unopenable: 0 });
      }
      await catalog.setRotationState(bucket, JSON.stringify(state));
    }
    buckets.push(state);
  });
  return { to, done: buckets.every((b) => b.done), buckets };
}

function fresh(bucket: string, to: string): BucketRotation {
  return { bucket, to, scanned: 0, rewrapped: 0, conflicts: 0, unopenable: 0, passes: 0, cursor: null, done: false };
}
