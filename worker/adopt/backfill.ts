/**
 * The background backfill of an adopted bucket (issue 41, docs/ADOPTION.md "Background
 * backfill"): a walk of the source's listing (ListObjectsV2 pages, `start-after` the checkpoint)
 * that adopts every object the bucket does not hold yet, and adopts again an object whose ETag or
 * size changed in the source since its adoption, through the adopt-on-read path and its single
 * flight (Adoption.backfillOne). Run by the cron (worker/index.ts) and by the admin API's `adopt`
 * (`shardgate adopt --run`), in bounded batches: a run stops at its object budget, its request
 * budget (a Worker invocation has a subrequest limit) or its deadline, and the checkpoint (the last
 * key done, and the counters: model/adopt-backfill.ts) is written to the bucket's catalog after every
 * object read from the source, every page and at the end, so a run killed mid-object loses the
 * figures of that object at most (found held by the next run: no second source read).
 * What the listing and the catalog say decides, before any source GET:
 * - a key under the reserved prefix: skipped (shardgate never serves it);
 * - a tombstoned key the catalog does not hold: deleted through shardgate, never brought back;
 * - held with the listed ETag and size: done (a client's read adopted it, or a client wrote it);
 * - held with another ETag or size: adopted again only when the held version is an adoption
 *   (metadata.adopted) and no tombstone says a client deleted the key since; a client's write wins;
 * - otherwise: adopted.
 * One object at a time: a run holds one object's write buffers, as one client PUT.
 */
import { BackendError } from '../../backends/types.ts';
import { compareKeys } from '../model/listing.ts';
import type { ObjectStore, ObjectSummary } from '../model/object-store.ts';
import { errorMessage } from '../model/error-message.ts';
import type { Adoption } from './adopting-store.ts';
import { isClean, noCounts, parseState, passDue, type AdoptCatalog, type BackfillState, type PassCounts } from '../model/adopt-backfill.ts';
import type { SourceClient } from './source-client.ts';
import { isReserved, type Tombstones } from './tombstones.ts';

export interface BackfillDeps {
  catalog: AdoptCatalog;
  /** The engine's store (the catalog's own objects, no read-through). */
  inner: ObjectStore;
  adoption: Adoption;
  source: SourceClient;
  now?: () => number;
  log?: (fields: Record<string, unknown>) => void;
}

export interface BackfillOptions {
  bucket: string;
  /** Most source objects read (adopted or tried) this run. */
  maxObjects: number;
  /** Most source requests (GETs and LISTs) this run; absent: maxObjects plus 10 listings. */
  maxRequests?: number;
  /** ms since the epoch: no object starts after it. */
  deadline: number;
  /** Start a new pass now even when the last complete one is recent (the operator's `adopt`). */
  newPass?: boolean;
  /** Source keys per listing page (default 1000). */
  pageSize?: number;
  /** How long after a clean pass the next starts (model/adopt-backfill.ts DEFAULT_REPASS_MS). */
  repassMs?: number;
}

/** This run's share of the pass's counts (model/adopt-backfill.ts PassCounts). */
export interface BackfillReport extends Pick<PassCounts, 'listed' | 'adopted' | 'readopted' | 'bytes' | 'held' | 'deleted' | 'changed' | 'failed'> {
  bucket: string;
  /** Why nothing ran: 'not started', 'paused', 'detached', 'waiting' (the last pass was clean and recent). */
  idle?: string;
  passesCompleted: number;
  /** Cut short by its budget or deadline, or a source that stopped answering: the next run goes on. */
  stopped: boolean;
  /** Cut short by a source that stopped answering (a chain waits for the cron rather than asking again at once). */
  sourceDown?: true;
  problems: { key: string; error: string }[];
}

const PROBLEMS_SHOWN = 20;

/** One run of a bucket's backfill from its checkpoint. */
/** A run's report before it has done anything (every count 0). */
export function emptyReport(bucket: string): BackfillReport {
  return {
    bucket,
    listed: 0,
    adopted: 0,
    readopted: 0,
    bytes: 0,
    held: 0,
    deleted: 0,
    changed: 0,
    failed: 0,
    passesCompleted: 0,
    stopped: false,
    problems: [],
  };
}

export async function backfillBatch(deps: BackfillDeps, o: BackfillOptions): Promise<BackfillReport> {
  const now = deps.now ?? Date.now;
  const report = emptyReport(o.bucket);
  const state = parseState(await deps.catalog.getAdoptState(o.bucket));
  const idle = !state || state.startedAt === null ? 'not started' : state.detachedAt !== null ? 'detached' : state.paused ? 'paused' : null;
  if (idle || !state) return { ...report, idle: idle ?? 'not started' };
  if (!state.inPass) {
    if (!o.newPass && !passDue(state, now(), o.repassMs)) return { ...report, idle: 'waiting' };
    startPass(state, now());
  }
  let objects = o.maxObjects;
  let requests = o.maxRequests ?? o.maxObjects + 10;
  const save = () => deps.catalog.setAdoptState(o.bucket, JSON.stringify(state));
  try {
    for (;;) {
      if (requests < 1 || now() >= o.deadline) return stop();
      requests--;
      state.totals.lists++;
      let page: Awaited<ReturnType<SourceClient['list']>>;
      try {
        page = await deps.source.list({ prefix: '', delimiter: null, startAfter: state.cursor, continuationToken: null, maxKeys: o.pageSize ?? 1000 });
      } catch (err) {
        if (!(err instanceof BackendError)) throw err;
        // The source stopped answering: the next run lists from the same checkpoint.
        state.lastError = { at: now(), key: state.cursor ?? '', message: errorMessage(err) };
        report.problems.push({ key: state.cursor ?? '', error: errorMessage(err) });
        report.sourceDown = true;
        return stop();
      }
      const first = page.objects[0]?.key;
      const held = first === undefined ? null : catalogFrom(deps.inner, o.bucket, state.cursor);
      const tombs = first === undefined ? null : tombstonesFrom(deps.adoption.tombstones, o.bucket, state.cursor);
      for (const entry of page.objects) {
        if (isReserved(entry.key)) {
          count(state, entry, 'skipped');
          continue;
        }
        const h = await held!.at(entry.key);
        const deleted = await tombs!.has(entry.key);
        let replacing: string | null = null;
        if (h) {
          const same = sameEtag(h.etag, entry.etag) && h.size === entry.size;
          if (same || deleted) {
            count(state, entry, 'held');
            continue;
          }
          // Another ETag or size: adopted again only over an adoption (a client's write wins).
          const head = await deps.inner.headObject(o.bucket, entry.key, { conditions: {} }).catch(() => null);
          if (!head?.metadata.adopted) {
            count(state, entry, 'held');
            continue;
          }
          replacing = head.etag;
        } else if (deleted) {
          count(state, entry, 'deleted');
          continue;
        }
        if (objects < 1 || requests < 1 || now() >= o.deadline) return stop();
        objects--;
        requests--;
        state.totals.gets++;
        try {
          const outcome = await deps.adoption.backfillOne(o.bucket, entry, replacing, {
            bytes: (n) => (state.totals.egressBytes += n),
            tagging: () => (state.totals.taggings = (state.totals.taggings ?? 0) + 1),
            heads: (n) => (state.totals.heads = (state.totals.heads ?? 0) + n),
          });
          count(state, entry, outcome);
        } catch (err) {
          if (err instanceof BackendError) {
            // The source stopped answering: this key is not done; the next run starts from it.
            state.lastError = { at: now(), key: entry.key, message: errorMessage(err) };
            report.problems.push({ key: entry.key, error: errorMessage(err) });
            report.sourceDown = true;
            return stop();
          }
          count(state, entry, 'failed');
          state.lastError = { at: now(), key: entry.key, message: errorMessage(err) };
          if (report.problems.length < PROBLEMS_SHOWN) report.problems.push({ key: entry.key, error: errorMessage(err) });
          deps.log?.({ msg: 'backfill', bucket: o.bucket, key: entry.key, outcome: 'failed', error: errorMessage(err) });
        }
        // The checkpoint after every object read from the source: a run killed now loses the
        // figures of the object in flight at most, never those of the objects it adopted.
        await save();
      }
      if (!page.isTruncated || first === undefined) {
        endPass(state, now());
        report.passesCompleted++;
        return report;
      }
      await save(); // the checkpoint, after every page
    }
  } finally {
    await save();
  }

  function stop(): BackfillReport {
    report.stopped = true;
    return report;
  }

  function count(s: BackfillState, entry: { key: string; size: number }, outcome: keyof typeof FIELD): void {
    s.cursor = entry.key;
    s.pass.listed++;
    s.pass.listedBytes += entry.size;
    report.listed++;
    const field = FIELD[outcome];
    s.pass[field]++;
    if (field in report) (report as unknown as Record<string, number>)[field]!++;
    if (outcome === 'adopted' || outcome === 'readopted') {
      const t = now();
      s.pass.bytes += entry.size;
      s.totals.adopted++;
      s.totals.bytes += entry.size;
      s.totals.first ??= t;
      s.totals.last = t;
      report.bytes += entry.size;
    }
  }
}

const FIELD = {
  adopted: 'adopted',
  readopted: 'readopted',
  held: 'held',
  deleted: 'deleted',
  changed: 'changed',
  skipped: 'skipped',
  failed: 'failed',
} as const;

function startPass(s: BackfillState, at: number): void {
  s.inPass = true;
  s.cursor = null;
  s.passStartedAt = at;
  s.pass = noCounts();
}

function endPass(s: BackfillState, at: number): void {
  s.last = { ...s.pass, startedAt: s.passStartedAt ?? at, endedAt: at };
  s.passes++;
  s.inPass = false;
  s.cursor = null;
  s.passStartedAt = null;
  s.cleanAt = isClean(s.pass) ? at : null;
}

const sameEtag = (a: string, b: string) => a.replace(/"/g, '') === b.replace(/"/g, '');

/** The catalog's objects from after `startAfter`, in key order, read a page at a time as asked. */
function catalogFrom(store: ObjectStore, bucket: string, startAfter: string | null) {
  return ordered<ObjectSummary>(
    async (after) => {
      const page = await store.listObjects(bucket, { prefix: '', delimiter: null, startAfter: after, maxKeys: 1000 });
      return { items: page.objects, more: page.isTruncated };
    },
    (o) => o.key,
    startAfter,
  );
}

/** The tombstoned keys from after `startAfter`, in key order, read a page at a time as asked. */
function tombstonesFrom(tombstones: Tombstones, bucket: string, startAfter: string | null) {
  const keys = ordered<string>(
    async (after) => {
      const page = await tombstones.page(bucket, '', after, 1000);
      return { items: page.keys, more: page.more };
    },
    (k) => k,
    startAfter,
  );
  return { has: async (key: string) => (await keys.at(key)) !== null };
}

/**
 * A sorted sequence read page by page, asked for ascending keys: `at(key)` answers its item of
 * that key or null, reading pages only as far as the key. Memory: one page.
 */
function ordered<T>(fetchPage: (after: string | null) => Promise<{ items: T[]; more: boolean }>, keyOf: (t: T) => string, startAfter: string | null) {
  let items: T[] = [];
  let i = 0;
  let more = true;
  let after = startAfter;
  return {
    async at(key: string): Promise<T | null> {
      for (;;) {
        while (i < items.length && compareKeys(keyOf(items[i]!), key) < 0) i++;
        if (i < items.length) return keyOf(items[i]!) === key ? items[i]! : null;
        if (!more) return null;
        const page = await fetchPage(after);
        items = page.items;
        i = 0;
        more = page.more && items.length > 0;
        if (items.length) after = keyOf(items[items.length - 1]!);
      }
    },
  };
}
