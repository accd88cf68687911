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
 */
import { CUSTOMER_KID, SealError, type KeyRing, type UnitSeal } from '../format/seal.ts';
import type { KeyCatalog, SealRecordCursor } from '../catalog/types.ts';
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

/** Re-wraps, in place, every seal found in `value` that is not under `to`; counts what changed and what could not. */
async function rewrapIn(value: unknown, ring: KeyRing, to: string, count: { changed: number; unopenable: number }): Promise<void> {
  if (!value || typeof value !== 'object') return;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (isSeal(v)) {
      if (v.kid === to || v.kid === CUSTOMER_KID) continue; // SSE-C keys are the client's: nothing to rotate
      try {
        (value as Record<string, unknown>)[k] = await ring.rewrap(v, to);
        count.changed++;
      } catch (err) {
        if (!(err instanceof SealError)) throw err;
        count.unopenable++;
      }
    } else {
      await rewrapIn(v, ring, to, count);
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
        await rewrapIn(value, ring, to, count);
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
