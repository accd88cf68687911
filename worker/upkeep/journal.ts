/**
 * The journal writer (run by the cron trigger every minute, and by `shardgate journal`): stores
 * every catalog instance's due journal segments on the backends (format/journal.ts), through the
 * unit store like any object's body: erasure-coded under the journal's policy and sealed when
 * the gateway has a key ring, in the reserved bucket JOURNAL_BUCKET. A segment is acknowledged
 * to its instance only once stored at write quorum, so a change leaves the catalog's work list
 * only when it is on the backends. What the backends hold is then the catalog as of each
 * instance's last acknowledged segment: the recovery point is the time since that segment was
 * taken (at most one cron interval plus a run, while runs succeed).
 * One instance's failure (a backend refusing, quorum missed) does not stop the others'.
 * With backends down so that the policy's write quorum is out of reach, a segment is written at
 * a narrower code over the backends that answer (narrowerCode), never below one parity shard.
 */
import type { JournalCatalog } from '../catalog/ports.ts';
import { encodeSegment, JOURNAL_BUCKET, segmentKey } from '../format/journal.ts';
import { QuorumError, type StoragePolicy, type UnitStore } from '../engine/index.ts';
import { isBackendError, type Backend } from '../../backends/types.ts';
import { errorMessage } from '../model/error-message.ts';

/** Bytes of records a segment holds at most (one larger row still goes, alone). */
export const SEGMENT_BYTES = 4 * 1024 * 1024;

export interface JournalDeps {
  catalog: JournalCatalog;
  units: UnitStore;
  /** The policy segments are stored under (the config's default policy). */
  policy: StoragePolicy;
}

export interface JournalReport {
  instances: number;
  segments: number;
  records: number;
  bytes: number;
  /** Instances whose segment could not be stored this run (tried again next run). */
  failed: { instance: string; error: string }[];
  /** The run stopped at its deadline with instances not visited. */
  unfinished: boolean;
  /** Instances not written because the backends hold a newer journal of them (catalog-loss.ts): until a rebuild or a discard. */
  paused: number;
  /** Why nothing at all was stored this run (catalog-loss.ts journalHold); absent: the run ran. */
  held?: string;
}

/** Subrequests one run makes at most (a Worker invocation's limit is 1,000; the list call is 1). */
export const JOURNAL_MAX_CALLS = 900;

/**
 * Stores the due segments of every instance, one instance after another from a random one (so a
 * run cut short by its deadline or its subrequests does not always leave the same buckets last).
 */
export async function flushJournal(
  deps: JournalDeps,
  options: { deadline: number; segmentBytes?: number; maxCalls?: number; hold?: string | null },
): Promise<JournalReport> {
  const report: JournalReport = { instances: 0, segments: 0, records: 0, bytes: 0, failed: [], unfinished: false, paused: 0 };
  if (options.hold) return { ...report, unfinished: true, held: options.hold };
  // An instance whose older journal the backends hold is not written: its new segments would hide
  // that journal from a rebuild or a rescue (they replay the newest generation).
  const lost = (await deps.catalog.catalogLoss()).lost;
  const all = (await deps.catalog.journalInstances()).filter((i) => !(i in lost));
  report.paused = Object.keys(lost).length;
  const first = Math.floor(Math.random() * all.length);
  const maxCalls = options.maxCalls ?? JOURNAL_MAX_CALLS;
  let calls = 1;
  const spent = () => Date.now() >= options.deadline || calls >= maxCalls;
  for (const instance of [...all.slice(first), ...all.slice(0, first)]) {
    if (spent()) {
      report.unfinished = true;
      break;
    }
    report.instances++;
    try {
      // A segment costs its take, a PUT per shard (k+m of the policy, or its small replicas) and its acknowledgement.
      while (!spent()) {
        calls++;
        const take = await deps.catalog.takeJournal(instance, new Date(), options.segmentBytes ?? SEGMENT_BYTES);
        if (!take) break;
        const bytes = encodeSegment(take.segment);
        const units = await storeSegment(deps, segmentKey(instance, take.segment.segment), bytes);
        calls += units.reduce((n, u) => n + u.k + u.m, 0) + 1;
        if (!(await deps.catalog.journalWritten(instance, take, units, new Date()))) {
          // The bucket was deleted while its segment was being written: nothing else knows of it.
          await deps.catalog.queueGarbage({ bucket: JOURNAL_BUCKET, units }, new Date());
          break;
        }
        report.segments++;
        report.records += take.segment.records.length;
        report.bytes += bytes.length;
      }
    } catch (err) {
      report.failed.push({ instance, error: errorMessage(err) });
    }
  }
  return report;
}

async function storeSegment(deps: JournalDeps, key: string, bytes: Uint8Array) {
  try {
    return await storeAt(deps, key, bytes, deps.policy);
  } catch (err) {
    // Backends down: the segment goes at the widest code the others allow (narrowerCode), so the
    // journal keeps the recovery point while any write is possible; the journal's upkeep
    // (journal-upkeep.ts) rewrites it at the policy's code once they are back.
    if (!(err instanceof QuorumError)) throw err;
    const down = new Set(err.failures.flatMap((f) => (isBackendError(f) ? [f.backendId] : [])));
    const up = deps.units.placeable.filter((b) => !down.has(b.id));
    const code = down.size ? narrowerCode(deps.policy, up.length) : null;
    if (!code) throw err;
    return await storeAt(deps, key, bytes, code, up);
  }
}

/** Stores a segment's bytes under `policy` (on `placeOn` only, when given); its units. */
export async function storeAt(deps: Pick<JournalDeps, 'units'>, key: string, bytes: Uint8Array, policy: StoragePolicy, placeOn?: Backend[]) {
  const { units } = deps;
  // Planned as a part is: always on the backends, never inline (the catalog is what it outlives).
  const plan = units.plan(bytes.length, policy, true, false, await units.shelfOf(JOURNAL_BUCKET));
  const body = new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(bytes), c.close()) });
  const stored = await units.storeBody({
    bucket: JOURNAL_BUCKET,
    key,
    body,
    size: bytes.length,
    policy,
    plan,
    checksum: null,
    ...(placeOn ? { placeOn } : {}),
  });
  if (stored.storage.kind !== 'coded') throw new Error('a journal segment was planned inline');
  return stored.storage.units;
}

/**
 * The code a segment is written at over `reachable` backends when the policy's write quorum is out
 * of reach: as wide as they allow (k+m = min(reachable, policy's k+m)) with as many parity shards
 * as the policy's m, and at least one: 2 of 6 down under 4+2 gives 2+2 (it survives two more
 * losses, as 4+2 does); 3 down gives 1+2; 4 down gives 1+1. Its write quorum is k+1 (one parity
 * shard at least). Fewer than 2 reachable: none (the segment waits for the next run). Small
 * segments stay replicas of the policy's count, on reachable backends, majority quorum.
 */
export function narrowerCode(policy: StoragePolicy, reachable: number): StoragePolicy | null {
  const n = Math.min(reachable, policy.k + policy.m);
  if (n < 2) return null;
  const m = Math.max(1, Math.min(policy.m, n - 1));
  const k = n - m;
  const replicas = Math.min(policy.small.replicas, n);
  return { ...policy, codec: 'rs-cauchy-gf8', k, m, writeQuorum: k + 1, small: { ...policy.small, replicas } };
}
