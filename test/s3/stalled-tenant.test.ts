/**
 * Stalled uploads of one tenant cannot starve another (issue 37). The review's write-only key
 * opened twelve uploads that stalled after their first bytes: they held 46 of 48 MiB of the coding
 * budget and another tenant's PUT waited 18 s. Here, through the real front door (createApp with
 * the gateway's own wiring of the budget's holder: BackgroundWork, RequestScope), twelve stalled
 * uploads of key A would need the whole budget: A gets its share (half), its other uploads wait
 * for its own, and key B's PUT is served at once. Nothing sleeps: the test waits for the budget's
 * gauge to show the stalls held and queued, then sends B's PUT; without shares B would wait for
 * maxWaitMs and be refused SlowDown.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/memory.ts';
import { BackgroundWork } from '../../worker/app/background.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { writeBytes } from '../../worker/engine/coding-budget.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { sdk } from '../auth/mutation/bases.ts';
import { toRequest } from '../auth/mutation/wire.ts';
import { testS3Settings } from '../support/memory-store.ts';
import { stalledPut, until, writersApp } from '../support/stalled-put.ts';

const A = { accessKeyId: 'AKIDWRITEONLY', secret: 'writer secret' };
const B = { accessKeyId: 'AKIDOTHERTENANT', secret: 'other secret' };
const BLOCK = 65_536;
const SIZE = 1 << 20;

function gateway() {
  const backends = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `mem-${i}`, domain: `zone-${i}` }));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { ec: { k: 4, m: 2, blockSize: BLOCK } },
    defaultPolicy: 'ec',
  });
  const units = new UnitStore(backends, undefined, { keyRing: DEV_KEY_RING });
  // What each of these writes asks for: the store's own plan of a SIZE-byte object (sealed).
  const perWrite = writeBytes(units.plan(SIZE, engineSettings(config).policies.ec!, false), BLOCK);
  const background = new BackgroundWork();
  // Twelve writes' worth: without shares, twelve stalls take it all.
  const store = new EcStore({
    catalog: localCatalog(),
    units,
    settings: { ...engineSettings(config), codingBudget: { bytes: 12 * perWrite, maxWaitMs: 5_000, tenantShare: 0.5 } },
    holder: () => background.holder(),
  });
  const app = writersApp(store, background, [A, B], 8 * SIZE);
  return { store, app };
}

describe('a tenant stalling its uploads', () => {
  it("holds at most its share; another tenant's PUT is served at once", async () => {
    const { store, app } = gateway();
    await store.createBucket('shared', { region: 'us-east-1' });
    const stalls = await Promise.all(Array.from({ length: 12 }, (_, i) => stalledPut(app, A, 'shared', `stall-${i}`, SIZE)));
    // Until all twelve are in the budget (each is verified first: WebCrypto work off the main
    // thread, which 1,000 turns of the event loop did not always cover on a loaded machine).
    await until(() => store.codingBudget().holders + store.codingBudget().waiters >= 12);
    const held = store.codingBudget();
    expect(held).toMatchObject({ holders: 6, waiters: 6 }); // A's share: six of the twelve
    expect(held.heldBytes).toBeLessThanOrEqual(held.capacityBytes / 2);
    const res = await app.fetch(toRequest(await sdk(new PutObjectCommand({ Bucket: 'shared', Key: 'other', Body: new Uint8Array(100_000).fill(7) }), B))!); // coded: it needs budget
    expect(res.status).toBe(200);
    for (const s of stalls) s.fail();
    await Promise.all(stalls.map((s) => s.answered));
    await until(() => store.codingBudget().holders + store.codingBudget().waiters === 0);
    expect(store.codingBudget()).toMatchObject({ heldBytes: 0, holders: 0, waiters: 0 });
  });
});
