/**
 * The re-stripe (issue 26), run by the cron and by the admin API's `restripe`: when a bucket's
 * policy (config `buckets` / `defaultPolicy`) changes geometry (4+2 to 8+3, three replicas to
 * 10+4, and back), its stored versions are rewritten under the new one in the background, version
 * by version (restripe-version.ts: read through the decode path, written by the normal writer,
 * swapped by compare-and-set; the old stays readable until the new commits; a client's overwrite
 * or delete meanwhile wins). New writes already use the new policy.
 * A bucket has work while its ledger counts units of a geometry its policy does not write, beyond
 * those its last pass found it cannot rewrite (restripe-progress.ts). A pass walks the bucket's
 * versions in (key, version id) order from the cursor kept in the bucket's `state` row, so a run
 * cut short (its version budget, subrequest budget or deadline; a crash) goes on where it
 * stopped; a version done is not done twice (it conforms). A pass that met conflicts or failures
 * leaves units counted, so another pass follows.
 * Limits: each backend's configured `limits` (bytes and requests per second) pace the rewrites
 * that read from or write to it (pacer.ts): a version starts once they fit, or the run ends at
 * its deadline. `maxRequests` bounds the backend requests a run asks for (a Worker invocation has
 * a subrequest limit): a version that alone needs more is counted blocked, not tried.
 * One version at a time: a run holds one version's read and write buffers (as one client copy).
 */
import type { RestripeCatalog } from '../catalog/ports.ts';
import type { ObjectManifest } from '../format/manifest.ts';
import { knownStorageClass, policyForClass, restripePolicyFor, type EngineSettings, type UnitStore } from '../engine/index.ts';
import { freshState, hasWork, leftOf, noPass, targetOf, type RestripeState } from './restripe-progress.ts';
import { requestsOf, restripeVersion, type RewriteOutcome } from './restripe-version.ts';
import { Pacer, type BackendLimits, type Charge } from './pacer.ts';
import { forEachBucket } from './each-bucket.ts';

export interface RestripeDeps {
  catalog: RestripeCatalog;
  units: UnitStore;
  settings: EngineSettings;
  graceMs: number;
  writeReservationSeconds: number;
  /** The configured backends' limits. */
  fleet: { id: string; limits?: BackendLimits }[];
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export interface RestripeOptions {
  /** Most versions rewritten (or tried) this run. */
  maxVersions: number;
  /** ms since the epoch: no rewrite starts after it. */
  deadline: number;
  /** Most backend requests the run's rewrites may ask for (absent: no bound). */
  maxRequests?: number;
  /** One bucket only. */
  bucket?: string;
}

export interface RestripeReport {
  /** Versions swapped, and their object bytes. */
  rewritten: number;
  bytes: number;
  /** Versions looked at (most already conform). */
  scanned: number;
  /** Swaps lost to a client's overwrite, delete or change (the rewrite is garbage; tried again later). */
  conflicts: number;
  /** Versions that cannot be rewritten (SSE-C, or too large for one run), with why for the first few. */
  blocked: number;
  /** Rewrites that failed (tried again by a later pass), the first few with why. */
  failed: number;
  problems: { bucket: string; key: string; versionId: string; error: string }[];
  passesCompleted: number;
  /** True when the run was cut short by its version or request budget, or its deadline. */
  stopped: boolean;
}

const PAGE = 50;
const PROBLEMS_SHOWN = 20;
/** Catalog calls a rewrite makes besides the backends' (reserve, commit): they count as subrequests too. */
const CATALOG_CALLS_PER_VERSION = 2;

const unitCount = (json: string): number => {
  const m = JSON.parse(json) as ObjectManifest;
  return m.storage.kind === 'coded' ? m.storage.units.length : 0;
};

export async function restripeBatch(deps: RestripeDeps, options: RestripeOptions): Promise<RestripeReport> {
  const report: RestripeReport = { rewritten: 0, bytes: 0, scanned: 0, conflicts: 0, blocked: 0, failed: 0, problems: [], passesCompleted: 0, stopped: false };
  const now = deps.now ?? Date.now;
  const pacer = new Pacer(deps.fleet, now, deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))));
  const maxRequests = options.maxRequests ?? Infinity;
  let versions = options.maxVersions;
  let requests = maxRequests;
  report.stopped = !(await forEachBucket(deps.catalog, restripeBucket, { only: options.bucket }));
  return report;

  /** One bucket from its cursor; false when the run must stop first (the cursor stays before the version not done). */
  async function restripeBucket(bucket: string): Promise<boolean> {
    const policy = restripePolicyFor(deps.settings, bucket);
    // One catalog call: the ledger's units per geometry, and the bucket's re-stripe record.
    const health = await deps.catalog.bucketHealth(bucket, new Date(now()));
    const target = targetOf(policy);
    const state = health.restripe?.target === target ? health.restripe : freshState(target);
    const left = leftOf(health.redundancy.byPolicy, policy, state, health.placements ?? []);
    if (!hasWork(state, left, now())) return true;
    // Each version under its storage class's policy (issue 44); a class no longer configured is left as it is.
    const policyOf = (m: ObjectManifest) =>
      knownStorageClass(deps.settings, m.metadata.storageClass) ? policyForClass(deps.settings, bucket, m.metadata.storageClass) : null;
    const rewriteDeps = {
      catalog: deps.catalog,
      units: deps.units,
      policy,
      policyOf,
      graceMs: deps.graceMs,
      writeReservationSeconds: deps.writeReservationSeconds,
      now,
    };
    try {
      for (;;) {
        // A page read is a subrequest too: a bucket of many conforming versions ends a run as surely as rewrites.
        if (requests < 1 || now() >= options.deadline) return false;
        requests--;
        const page = await deps.catalog.listVersionRecords(bucket, state.cursor, PAGE);
        if (page.length === 0) {
          state.cursor = null;
          state.passes++;
          state.last = state.pass;
          state.pass = noPass();
          report.passesCompleted++;
          return true;
        }
        for (const record of page) {
          if (versions <= 0 || now() >= options.deadline) return false;
          let tooLarge = 0;
          const admit = async (charges: Map<string, Charge>) => {
            const asked = requestsOf(charges) + CATALOG_CALLS_PER_VERSION;
            if (asked > requests) {
              if (asked > maxRequests) tooLarge = asked;
              return false;
            }
            if (!(await pacer.admit(charges, options.deadline))) return false;
            requests -= asked;
            versions--;
            return true;
          };
          const outcome = await restripeVersion(bucket, record, rewriteDeps, admit);
          if (outcome.kind === 'stopped' && !tooLarge) return false;
          count(
            bucket,
            record.at,
            state,
            tooLarge
              ? {
                  kind: 'blocked',
                  reason: `needs about ${tooLarge} backend requests, more than one run may make (${maxRequests})`,
                  units: unitCount(record.json),
                }
              : outcome,
          );
          state.cursor = record.at;
        }
      }
    } finally {
      await deps.catalog.setRestripeState(bucket, JSON.stringify(state));
    }
  }

  function count(bucket: string, at: { key: string; versionId: string }, state: RestripeState, outcome: RewriteOutcome): void {
    const t = now();
    state.pass.scanned++;
    report.scanned++;
    const problem = (error: string) => {
      if (report.problems.length < PROBLEMS_SHOWN) report.problems.push({ bucket, key: at.key, versionId: at.versionId, error });
      state.lastError = { at: t, key: at.key, versionId: at.versionId, message: error };
    };
    switch (outcome.kind) {
      case 'rewritten': {
        state.pass.rewritten++;
        report.rewritten++;
        report.bytes += outcome.bytes;
        const r = (state.rewritten ??= { versions: 0, bytes: 0, first: t, last: t });
        r.versions++;
        r.bytes += outcome.bytes;
        r.last = t;
        break;
      }
      case 'gone':
        state.pass.conflicts++;
        report.conflicts++;
        break;
      case 'blocked':
        state.pass.blocked++;
        state.pass.blockedUnits += outcome.units;
        if (outcome.until !== undefined) state.pass.blockedUntil = Math.min(state.pass.blockedUntil ?? Infinity, outcome.until);
        report.blocked++;
        problem(outcome.reason);
        break;
      case 'failed':
        state.pass.failed++;
        report.failed++;
        problem(outcome.error);
        break;
      default:
        break; // conforms
    }
  }
}
