/**
 * Issue 37 over a catalog and a journal written by the previous release (test/fixtures/catalog-v4-access-log:
 * SQLite files and shard files written by that release's own code, its journal run once): no
 * catalog-loss look or journal upkeep of this release mistakes that journal for a lost catalog
 * or damage, and the units it wrote are counted in the status. The same backends under a catalog
 * that lost one bucket's instance and the bucket list: both named lost.
 */
import { describe, expect, it } from 'vitest';
import { BUCKET_LIST_INSTANCE } from '../../worker/format/journal.ts';
import { parseConfig } from '../../worker/config/config.ts';
import { detectCatalogLoss } from '../../worker/upkeep/catalog-loss.ts';
import { journalUpkeep } from '../../worker/upkeep/journal-upkeep.ts';
import { openCatalogFixture } from '../support/catalog-fixture.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';

const FIXTURE = new URL('../fixtures/catalog-v4-access-log/', import.meta.url);
const INSTANCES = ['__buckets__', 'bucket:site', 'bucket:logs'];
const POLICY = { k: 4, m: 2, blockSize: 4096, small: { threshold: 256, mode: 'inline' } };

describe("the previous release's journal under this release's loss look and journal upkeep", () => {
  it('no loss, no damage; its units are counted; an empty catalog over those backends is told it is behind', async () => {
    const { catalog, units, backends } = await openCatalogFixture(FIXTURE, INSTANCES, POLICY);
    const found = await detectCatalogLoss({ catalog, backends, ring: DEV_KEY_RING }, Date.now());
    expect(found.units).toBeGreaterThan(0); // the old release's segments, listed
    expect(found.unknown).toBe(0);
    expect(found.loss).toEqual({ lost: {}, suspect: {} });
    const policy = parseConfig({
      backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { ec: POLICY },
      defaultPolicy: 'ec',
    }).policies.ec!;
    const upkeep = await journalUpkeep({ catalog, units, policy }, { mode: 'verify', maxCalls: 10_000 });
    expect(upkeep).toMatchObject({ damaged: 0, repaired: 0, moved: 0, restriped: 0, failed: [] });
    expect(upkeep.units).toBeGreaterThan(0);
    const site = (await catalog.journalStatus('site'))!;
    expect(site.redundancy).toMatchObject({ atRisk: 0, lost: 0 });
    expect(site.redundancy!.units).toBe((await catalog.journalFiles('site')).flatMap((f) => f.units).length);

    // The same backends, the catalog gone: the bucket list and both buckets are named.
    const empty = localCatalog();
    const lost = await detectCatalogLoss({ catalog: empty, backends, ring: DEV_KEY_RING }, Date.now());
    expect(Object.keys(lost.loss.lost).sort()).toEqual([BUCKET_LIST_INSTANCE, 'logs', 'site']);
  });
});
