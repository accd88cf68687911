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
 */
import type { JournalCatalog } from '../catalog/types.ts';
import { encodeSegment, JOURNAL_BUCKET, segmentKey } from '../format/journal.ts';
import type { StoragePolicy, UnitStore } from '../engine/index.ts';

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
}

/** Subrequests one run makes at most (a Worker invocation's limit is 1,000; the list call is 1). */
export const JOURNAL_MAX_CALLS = 900;

/**
 * Stores the due segments of every instance, one instance after another from a random one (so a
 * run cut short by its deadline or its subrequests does not always leave the same buckets last).
 */
export async function flushJournal(deps: JournalDeps, options: { deadline: number; segmentBytes?: number; maxCalls?: number }): Promise<JournalReport> {
  const report: JournalReport = { instances: 0, segments: 0, records: 0, bytes: 0, failed: [], unfinished: false, paused: 0 };
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
      report.failed.push({ instance, error: String((err as Error)?.message ?? err) });
    }
  }
  return report;
}

async function storeSegment(deps: JournalDeps, key: string, bytes: Uint8Array) {
  const { units, policy } = deps;
  // Planned as a part is: always on the backends, never inline (the catalog is what it outlives).
  const plan = units.plan(bytes.length, policy, true, false, await units.shelfOf(JOURNAL_BUCKET));
  const body = new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(bytes), c.close()) });
  const stored = await units.storeBody({ bucket: JOURNAL_BUCKET, key, body, size: bytes.length, policy, plan, checksum: null });
  if (stored.storage.kind !== 'coded') throw new Error('a journal segment was planned inline');
  return stored.storage.units;
}
