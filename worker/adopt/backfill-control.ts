/**
 * The operator's hold on an adopted bucket's backfill (issue 41; admin API `adopt`, `adopt-pause`,
 * `adopt-detach`; `shardgate adopt`): start (or resume), pause, and detach the source. Each is a
 * read and a write of the bucket's backfill record (model/adopt-backfill.ts); the runs read it.
 * Detach is refused, with the reason, until a pass over the source has ended clean (every object
 * it listed is held, or was deleted or overwritten through shardgate), unless forced: after it the
 * source is never read again (Adoption.isDetached), so an object not adopted would be lost to
 * clients. Objects changed in the source after that pass are not adopted (the answer says when the
 * pass ended).
 */
import type { AdoptCatalog } from '../model/adopt-backfill.ts';
import { freshState, isClean, parseState, type BackfillState } from '../model/adopt-backfill.ts';

/** Starts (or resumes) the bucket's backfill: its record created, unpaused. A detached source stays detached. */
export async function startBackfill(catalog: AdoptCatalog, bucket: string, now: number): Promise<BackfillState> {
  const state = parseState(await catalog.getAdoptState(bucket)) ?? freshState();
  if (state.detachedAt !== null) return state;
  state.startedAt ??= now;
  state.paused = false;
  await catalog.setAdoptState(bucket, JSON.stringify(state));
  return state;
}

/** Pauses the backfill (runs do nothing until it is started again); the checkpoint is kept. */
export async function pauseBackfill(catalog: AdoptCatalog, bucket: string): Promise<BackfillState> {
  const state = parseState(await catalog.getAdoptState(bucket)) ?? freshState();
  state.paused = true;
  await catalog.setAdoptState(bucket, JSON.stringify(state));
  return state;
}

/** Why the source may not be detached yet (null: it may). */
export function detachRefusal(s: BackfillState | null): string | null {
  if (!s || s.startedAt === null) return 'the backfill has not been started: objects not adopted would be lost (shardgate adopt BUCKET)';
  if (s.cleanAt !== null) return null;
  if (s.last && !isClean(s.last))
    return `the last pass did not end clean (${s.last.failed} failed, ${s.last.changed} changed in the source during it); the next pass retries them`;
  return `no pass over the source has ended yet (this one has walked ${s.pass.listed} object(s), up to "${s.cursor ?? ''}")`;
}

export interface DetachAnswer {
  detached: boolean;
  /** Why it was refused, or (forced) what was overridden. */
  reason: string | null;
  forced: boolean;
  state: BackfillState;
}

/** Detaches the source when the move is complete, or when `force`d. */
export async function detachSource(catalog: AdoptCatalog, bucket: string, force: boolean, now: number): Promise<DetachAnswer> {
  const state = parseState(await catalog.getAdoptState(bucket)) ?? freshState();
  if (state.detachedAt !== null) return { detached: true, reason: null, forced: false, state };
  const refusal = detachRefusal(state);
  if (refusal && !force) return { detached: false, reason: refusal, forced: false, state };
  state.detachedAt = now;
  state.inPass = false;
  await catalog.setAdoptState(bucket, JSON.stringify(state));
  return { detached: true, reason: refusal, forced: refusal !== null, state };
}
