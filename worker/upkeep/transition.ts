/**
 * Lifecycle transitions carried out (issue 44): a version moved to another storage class is
 * rewritten under that class's policy by the re-striper's own rewrite (restripe-version.ts: read
 * through the decode path, written by the normal writer, every shard or nothing, checked against
 * its ETag and checksums, swapped by compare-and-set together with its new class; the old units
 * queued for deletion after the grace delay). A class whose policy stores the version as it is
 * already only changes the class.
 * One Transitioner per lifecycle run holds the run's budget, as a re-stripe run does: at most
 * `maxVersions` rewrites and `maxRequests` backend requests (catalog calls counted), nothing
 * started after `deadline`, each backend's configured `limits` pacing them (pacer.ts). Out of
 * budget, a transition answers 'stopped' before anything is written and the lifecycle job stops
 * its slice there; the next run starts with it. A version that alone needs more requests than a
 * run may make is 'blocked', as are those the re-stripe cannot rewrite (SSE-C; COMPLIANCE-retained
 * on a backend that enforces it) and those of a class no longer configured.
 */
import type { ObjectCatalog, RestripeCatalog } from '../catalog/ports.ts';
import { knownStorageClass, policyForClass, STANDARD, type EngineSettings, type UnitStore } from '../engine/index.ts';
import type { TransitionOutcome } from './lifecycle.ts';
import { Pacer, type BackendLimits, type Charge } from './pacer.ts';
import { requestsOf, restripeVersion } from './restripe-version.ts';

export interface TransitionDeps {
  catalog: RestripeCatalog & Pick<ObjectCatalog, 'getVersion'>;
  units: UnitStore;
  settings: EngineSettings;
  graceMs: number;
  writeReservationSeconds: number;
  fleet: { id: string; limits?: BackendLimits }[];
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export interface TransitionBudget {
  maxVersions: number;
  maxRequests: number;
  /** ms since the epoch: no rewrite starts after it. */
  deadline: number;
}

/** Catalog calls a transition makes besides the backends' (the version's lookup, reserve, commit). */
const CATALOG_CALLS = 3;

export class Transitioner {
  private versions: number;
  private requests: number;
  private readonly pacer: Pacer;
  private readonly now: () => number;

  constructor(
    private readonly deps: TransitionDeps,
    private readonly budget: TransitionBudget,
  ) {
    this.versions = budget.maxVersions;
    this.requests = budget.maxRequests;
    this.now = deps.now ?? Date.now;
    this.pacer = new Pacer(deps.fleet, this.now, deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))));
  }

  /** Moves the version `versionId` (as S3 shows it) of `key` to `storageClass`. */
  transition = async (bucket: string, key: string, versionId: string, storageClass: string): Promise<TransitionOutcome> => {
    if (!knownStorageClass(this.deps.settings, storageClass))
      return { kind: 'blocked', reason: `storage class ${storageClass} is not configured (storageClasses)` };
    if (this.versions <= 0 || this.requests < CATALOG_CALLS || this.now() >= this.budget.deadline) return { kind: 'stopped' };
    this.requests--;
    const found = await this.deps.catalog.getVersion(bucket, key, versionId);
    if (found.kind !== 'object') return { kind: 'gone' };
    const record = { at: { key, versionId: found.manifest.versionId }, json: JSON.stringify(found.manifest) };
    const policy = policyForClass(this.deps.settings, bucket, storageClass);
    let tooLarge = 0;
    const admit = async (charges: Map<string, Charge>) => {
      const asked = requestsOf(charges) + CATALOG_CALLS - 1;
      if (asked > this.requests) {
        if (asked > this.budget.maxRequests) tooLarge = asked;
        return false;
      }
      if (!(await this.pacer.admit(charges, this.budget.deadline))) return false;
      this.requests -= asked;
      this.versions--;
      return true;
    };
    const outcome = await restripeVersion(
      bucket,
      record,
      {
        catalog: this.deps.catalog,
        units: this.deps.units,
        policy,
        graceMs: this.deps.graceMs,
        writeReservationSeconds: this.deps.writeReservationSeconds,
        now: this.now,
      },
      admit,
      { storageClass: storageClass === STANDARD ? null : storageClass },
    );
    if (outcome.kind === 'stopped')
      return tooLarge
        ? { kind: 'blocked', reason: `needs about ${tooLarge} backend requests, more than one run may make (${this.budget.maxRequests})` }
        : { kind: 'stopped' };
    if (outcome.kind === 'blocked') return { kind: 'blocked', reason: outcome.reason };
    return outcome;
  };
}
