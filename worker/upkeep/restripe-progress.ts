/**
 * A re-stripe's progress (issue 26), per bucket: the record and what "left" means are in
 * catalog/restripe-record.ts (the status reads them too); here, every bucket's, for the admin API
 * and `shardgate restripe`, against the policy the config gives each bucket now.
 */
import type { HealthCatalog, RestripeCatalog } from '../catalog/ports.ts';
import { restripeProgressOf, type BucketRestripeProgress } from '../catalog/restripe-record.ts';
import { restripePolicyFor, type EngineSettings } from '../engine/index.ts';
import { forEachBucket } from './each-bucket.ts';

export { freshState, hasWork, leftOf, noPass, targetOf, type BucketRestripeProgress, type RestripeState } from '../catalog/restripe-record.ts';

/** Every bucket with units left to re-stripe or a re-stripe record for its policy now. */
export async function restripeProgress(
  catalog: RestripeCatalog & HealthCatalog,
  settings: EngineSettings,
  now = new Date(),
): Promise<BucketRestripeProgress[]> {
  const out: BucketRestripeProgress[] = [];
  await forEachBucket(catalog, async (name) => {
    const health = await catalog.bucketHealth(name, now);
    const p = restripeProgressOf(
      name,
      restripePolicyFor(settings, name),
      health.redundancy.byPolicy,
      health.restripe ?? null,
      now.getTime(),
      health.placements ?? [],
    );
    if (p) out.push(p);
  });
  return out;
}
