/**
 * The queue-driven mover (issue 26): with a queue bound, moving a bucket's shards (drain.ts:
 * draining, retired and rebalanced backends) and rewriting its versions (restripe.ts) run as a
 * chain of queue messages, one link after another with no wait between them, instead of one
 * bounded batch per cron run (30 moves every five minutes: days for a large backend).
 *
 * - A link claims the bucket (catalog claimMoveChain: compare-and-set, so one chain per bucket),
 *   runs one bounded batch of each job for that bucket, and, while either job stopped short of
 *   the end of its pass (its move or request budget, or its deadline), sends the next link.
 *   Each link is one queue invocation with its own subrequests: a batch fits them (below).
 * - A link that finds another chain's fresh claim stops: the other chain is the bucket's.
 * - The cron is the watchdog: it starts a chain for every bucket with work (a fleet change under
 *   way, or a re-stripe not done) that no chain owns, and takes over a chain whose last claim is
 *   older than CHAIN_STALE_MS (a link lost with its isolate).
 * - A batch that had to wait (a target down) ends the chain: the cron's next run starts it again,
 *   so a backend that is down costs a try every cron run, not a tight loop of links.
 * Buckets move in parallel (a chain each); a bucket's own moves stay one at a time, as in drain.ts.
 * Without a queue the cron runs the batches itself (worker/index.ts), as before.
 */
import type { UpkeepCatalog } from '../catalog/ports.ts';
import { S3Error } from '../model/errors.ts';
import type { DrainReport } from './drain.ts';
import type { RestripeReport } from './restripe.ts';

/** The queue message of one link. */
export interface MoveLink {
  kind: 'move';
  bucket: string;
  chain: string;
}

export const isMoveLink = (body: unknown): body is MoveLink => typeof body === 'object' && body !== null && (body as MoveLink).kind === 'move';

/**
 * A chain whose last claim is older than this is taken over by the next one to claim. A link
 * renews its claim when it starts, every CHAIN_STALE_MS / 4 while it runs (a re-stripe of one
 * very large version can outlast its batch's deadline) and before it sends the next, so a live
 * chain's claim is never this old; a chain lost with its isolate (a crash, a deploy; a local
 * gateway's queue is in memory) is resumed by the first cron run after this, not left idle.
 */
export const CHAIN_STALE_MS = 2 * 60_000;
/** Shards one link moves at most: each move is 5 to 7 subrequests, so a link stays well under the invocation's 1000 with the re-stripe's. */
export const MOVES_PER_LINK = 60;
/** Versions one link re-stripes at most (its backend requests are bounded as the cron's are). */
export const VERSIONS_PER_LINK = 20;
/** Buckets the cron starts chains for in one run (two subrequests each); the rest on later runs. */
export const CHAINS_STARTED_PER_CRON = 200;

export interface ChainDeps {
  catalog: Pick<UpkeepCatalog, 'claimMoveChain' | 'endMoveChain'>;
  send: (link: MoveLink) => Promise<void>;
  /** One bounded batch for the bucket (the gateway's counted and logged runs). */
  drain: (options: { bucket: string; maxMoves: number }) => Promise<DrainReport>;
  restripe: (options: { bucket: string; maxVersions: number }) => Promise<RestripeReport>;
  now?: () => number;
  newId?: () => string;
  /** How often a running link renews its claim (default CHAIN_STALE_MS / 4; tests shorten it). */
  renewEveryMs?: number;
}

export type LinkOutcome = 'continued' | 'ended' | 'superseded';

/**
 * Runs one link; the next is sent before this returns when there is more to do. `share`: the
 * links delivered in the same queue invocation (a batch), which split one link's budget, so a
 * batch of links stays within one invocation's subrequests.
 */
export async function runMoveLink(link: MoveLink, deps: ChainDeps, share = 1): Promise<LinkOutcome> {
  const now = deps.now ?? Date.now;
  const maxMoves = Math.max(1, Math.floor(MOVES_PER_LINK / share));
  const maxVersions = Math.max(1, Math.floor(VERSIONS_PER_LINK / share));
  let renewal: ReturnType<typeof setInterval> | undefined;
  try {
    if (!(await deps.catalog.claimMoveChain(link.bucket, link.chain, now(), CHAIN_STALE_MS))) return 'superseded';
    // Kept fresh while the batches run; a renewal that fails is retried at the next tick (and a
    // chain taken over meanwhile only costs a duplicated move, which loses its compare-and-set).
    renewal = setInterval(
      () => void deps.catalog.claimMoveChain(link.bucket, link.chain, now(), CHAIN_STALE_MS).catch(() => {}),
      deps.renewEveryMs ?? CHAIN_STALE_MS / 4,
    );
    const drained = await deps.drain({ bucket: link.bucket, maxMoves });
    const restriped = await deps.restripe({ bucket: link.bucket, maxVersions });
    // Stopped here, not only in `finally`: no tick may land after endMoveChain below and claim
    // the bucket again for a chain that has ended.
    clearInterval(renewal);
    const more = (drained.stopped && drained.waiting === 0) || (restriped.stopped && restriped.failed === 0);
    if (more) {
      // Renewed before the next link is sent, so the cron never finds a live chain stale.
      if (!(await deps.catalog.claimMoveChain(link.bucket, link.chain, now(), CHAIN_STALE_MS))) return 'superseded';
      await deps.send(link);
      return 'continued';
    }
    await deps.catalog.endMoveChain(link.bucket, link.chain);
    return 'ended';
  } catch (err) {
    if (err instanceof S3Error && err.code === 'NoSuchBucket') return 'ended'; // deleted meanwhile: nothing of it to move
    throw err;
  } finally {
    clearInterval(renewal);
  }
}

/**
 * The cron's part: a chain for each of `buckets` (those with work) that no chain owns, at most
 * CHAINS_STARTED_PER_CRON; answers how many were started.
 */
export async function startMoveChains(buckets: readonly string[], deps: Pick<ChainDeps, 'catalog' | 'send' | 'now' | 'newId'>): Promise<number> {
  const now = deps.now ?? Date.now;
  const newId = deps.newId ?? (() => crypto.randomUUID());
  let started = 0;
  for (const bucket of buckets.slice(0, CHAINS_STARTED_PER_CRON)) {
    const chain = newId();
    try {
      if (!(await deps.catalog.claimMoveChain(bucket, chain, now(), CHAIN_STALE_MS))) continue;
    } catch (err) {
      if (err instanceof S3Error && err.code === 'NoSuchBucket') continue;
      throw err;
    }
    await deps.send({ kind: 'move', bucket, chain });
    started++;
  }
  return started;
}
