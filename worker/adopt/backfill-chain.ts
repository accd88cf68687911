/**
 * The backfill as a chain of queue messages (issue 41): 20 objects per cron run (every fifth
 * minute) is far too slow for a large bucket, so with a queue bound (REPAIR_QUEUE, as the
 * mover's chain: upkeep/move-chain.ts) an active backfill runs link after link with no wait
 * between them, each link one bounded run from the checkpoint (backfill.ts), until the pass ends.
 * Why a queue and not the catalog object's alarm: the alarm runs inside the catalog's Durable
 * Object, which has neither the source's client nor the engine's store (and should not make a
 * Worker's worth of subrequests); a queue message is delivered to the Worker itself, with the
 * gateway and a fresh subrequest budget per invocation, and survives the isolate that sent it.
 * - A link claims the bucket's backfill (catalog `claimAdoptChain`: compare-and-set on a row of
 *   its own), runs one bounded batch, and, while the batch stopped short only for its budget or
 *   deadline, renews the claim and sends the next link. It ends the chain when the pass ended, the
 *   backfill is paused, detached or waiting for its next pass, or the source stopped answering
 *   (the cron's next run starts it again: a source that is down costs a try per cron run, not a
 *   tight loop of links).
 * - A link that finds another chain's fresh claim stops: one chain per bucket.
 * - The cron is the watchdog (`startAdoptChains`): it starts a chain for every bucket whose
 *   backfill wants to run (started, not paused, not detached, a pass in progress or due) that no
 *   chain owns, and takes over a chain whose claim is older than ADOPT_CHAIN_STALE_MS (a link lost
 *   with its isolate: a crash, a deploy, a local gateway killed with its in-memory queue).
 *   `shardgate adopt BUCKET` starts one at once.
 * Without a queue the cron runs one batch per run itself (cronAdopt), as before.
 */
import type { AdoptChainCatalog } from '../model/adopt-backfill.ts';
import { S3Error } from '../model/errors.ts';
import type { BackfillReport } from './backfill.ts';

/** The queue message of one link. */
export interface AdoptLink {
  kind: 'adopt';
  bucket: string;
  chain: string;
}

export const isAdoptLink = (body: unknown): body is AdoptLink => typeof body === 'object' && body !== null && (body as AdoptLink).kind === 'adopt';

/** A claim older than this is taken over (a live link renews it far more often: below). */
export const ADOPT_CHAIN_STALE_MS = 2 * 60_000;
/**
 * Objects one link adopts at most (each a source GET and about a dozen backend and catalog calls:
 * a link stays well under an invocation's 1000 subrequests), and how long it may take.
 */
export const OBJECTS_PER_LINK = 50;
export const LINK_MS = 60_000;
/** Objects one cron run adopts itself when there is no queue (worker/index.ts). */
export const OBJECTS_PER_CRON_RUN = 20;
export const CRON_RUN_MS = 60_000;

export interface AdoptChainDeps {
  catalog: AdoptChainCatalog;
  send: (link: AdoptLink) => Promise<void>;
  /** One bounded run of the bucket's backfill from its checkpoint (BackfillService.run). */
  run: (bucket: string, o: { maxObjects: number; ms: number }) => Promise<BackfillReport>;
  /** Whether the bucket's backfill wants runs (BackfillService.wantsRun). */
  wantsRun: (bucket: string) => Promise<boolean>;
  now?: () => number;
  newId?: () => string;
  /** How often a running link renews its claim (default a quarter of ADOPT_CHAIN_STALE_MS). */
  renewEveryMs?: number;
  /** Objects per link (default OBJECTS_PER_LINK; tests use fewer). */
  objectsPerLink?: number;
}

export type AdoptLinkOutcome = 'continued' | 'ended' | 'superseded';

/** Runs one link; the next is sent before this returns when there is more to do. `share`: links delivered in the same invocation. */
export async function runAdoptLink(link: AdoptLink, deps: AdoptChainDeps, share = 1): Promise<{ outcome: AdoptLinkOutcome; report?: BackfillReport }> {
  const now = deps.now ?? Date.now;
  let renewal: ReturnType<typeof setInterval> | undefined;
  try {
    if (!(await deps.catalog.claimAdoptChain(link.bucket, link.chain, now(), ADOPT_CHAIN_STALE_MS))) return { outcome: 'superseded' };
    renewal = setInterval(
      () => void deps.catalog.claimAdoptChain(link.bucket, link.chain, now(), ADOPT_CHAIN_STALE_MS).catch(() => {}),
      deps.renewEveryMs ?? ADOPT_CHAIN_STALE_MS / 4,
    );
    const report = await deps.run(link.bucket, { maxObjects: Math.max(1, Math.floor((deps.objectsPerLink ?? OBJECTS_PER_LINK) / share)), ms: LINK_MS });
    clearInterval(renewal); // no renewal may land after endAdoptChain below
    if (report.stopped && !report.sourceDown && !report.idle) {
      if (!(await deps.catalog.claimAdoptChain(link.bucket, link.chain, now(), ADOPT_CHAIN_STALE_MS))) return { outcome: 'superseded', report };
      await deps.send(link);
      return { outcome: 'continued', report };
    }
    await deps.catalog.endAdoptChain(link.bucket, link.chain);
    return { outcome: 'ended', report };
  } catch (err) {
    if (err instanceof S3Error && err.code === 'NoSuchBucket') return { outcome: 'ended' };
    throw err;
  } finally {
    clearInterval(renewal);
  }
}

/** The watchdog: a chain for each of `buckets` whose backfill wants runs and that no live chain owns. Answers how many were started. */
export async function startAdoptChains(buckets: readonly string[], deps: Omit<AdoptChainDeps, 'run'>): Promise<number> {
  const now = deps.now ?? Date.now;
  const newId = deps.newId ?? (() => crypto.randomUUID());
  let started = 0;
  for (const bucket of buckets) {
    try {
      if (!(await deps.wantsRun(bucket))) continue;
      const chain = newId();
      if (!(await deps.catalog.claimAdoptChain(bucket, chain, now(), ADOPT_CHAIN_STALE_MS))) continue;
      await deps.send({ kind: 'adopt', bucket, chain });
      started++;
    } catch (err) {
      if (err instanceof S3Error && err.code === 'NoSuchBucket') continue;
      throw err;
    }
  }
  return started;
}

export interface CronAdoptDeps {
  buckets: () => string[];
  /** The bounded batches of every bucket, sharing one budget (BackfillService.runAll). */
  runAll: (o: { maxObjects: number; ms: number }) => Promise<BackfillReport[]>;
  /** The chain's parts when a queue is bound; null: the cron runs the batches itself. */
  chain: Omit<AdoptChainDeps, 'run'> | null;
}

/** The cron's part of the backfill: chains started (a queue), or one bounded batch run here. */
export async function cronAdopt(deps: CronAdoptDeps): Promise<{ chainsStarted: number; reports: BackfillReport[] }> {
  if (deps.chain) return { chainsStarted: await startAdoptChains(deps.buckets(), deps.chain), reports: [] };
  return { chainsStarted: 0, reports: await deps.runAll({ maxObjects: OBJECTS_PER_CRON_RUN, ms: CRON_RUN_MS }) };
}
