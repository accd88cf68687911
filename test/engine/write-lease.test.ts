/**
 * A coded write asks the coding budget for the memory its own body needs, not for the most any
 * write could hold.
 * - Wide codes: a column unit's writer keeps m parity columns of its own shard length in wasm
 *   (column-writer.ts), and that length follows the body: an 8+3 write of 1 MiB holds 3 x 128
 *   KiB. Before, every such write asked for m x the largest column (3 x 8 MiB = 24 MiB), so two
 *   never fitted the 48 MiB budget together and every coded PUT into a wide bucket waited for the
 *   one before it, whatever its size.
 * - Short bodies: a body of one row (under k blocks) has blocks as long as its data, and its
 *   stripe and upload buffers are that long (unit-writer.ts, shard-set.ts). Before, a 256 KiB 4+2
 *   PUT held 256 KiB blocks and asked 5.6 MiB (2.25 now): eight filled the budget, the ninth waited.
 * Here uploads of one client stall after their first bytes: all of them hold their memory at once.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/memory.ts';
import { BackgroundWork } from '../../worker/app/background.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { writeBytes } from '../../worker/engine/coding-budget.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { shardLayout } from '../../worker/format/layout.ts';
import { sealedSize } from '../../worker/format/seal.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { testS3Settings } from '../support/memory-store.ts';
import { stalledPut, until, writersApp } from '../support/stalled-put.ts';

const KEY = { accessKeyId: 'AKIDWIDEWRITER', secret: 'wide secret' };
const MiB = 1 << 20;

/** The gateway's write path over 11 memory backends; new buckets take `defaultPolicy`. */
function gateway(defaultPolicy: 'wide' | 'narrow' = 'wide') {
  const backends = Array.from({ length: 11 }, (_, i) => new MemoryBackend({ id: `mem-${i}`, domain: `zone-${i}` }));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { wide: { k: 8, m: 3 }, narrow: { k: 4, m: 2 } },
    defaultPolicy,
  });
  const background = new BackgroundWork();
  const units = new UnitStore(backends, undefined, { keyRing: DEV_KEY_RING });
  // The shipped budget (48 MiB), one tenant.
  const store = new EcStore({ catalog: localCatalog(), units, settings: engineSettings(config), holder: () => background.holder() });
  const app = writersApp(store, background, [KEY], 64 * MiB);
  return { store, app, units, policy: engineSettings(config).policies.wide!, narrow: engineSettings(config).policies.narrow! };
}

/**
 * `count` uploads of `size` bytes into a bucket of `policy`, stalled after their first bytes: all
 * of them hold their lease at once, none waits; then they fail and every byte comes back. Resolves
 * to the bytes they held together.
 */
async function stalledAtOnce(policy: 'wide' | 'narrow', count: number, size: number): Promise<number> {
  const { store, app } = gateway(policy);
  await store.createBucket(policy, { region: 'us-east-1' });
  const stalls = await Promise.all(Array.from({ length: count }, (_, i) => stalledPut(app, KEY, policy, `stalled-${i}`, size)));
  await until(() => store.codingBudget().holders + store.codingBudget().waiters >= count);
  const held = store.codingBudget();
  expect(held).toMatchObject({ holders: count, waiters: 0 });
  for (const s of stalls) s.fail();
  await Promise.all(stalls.map((s) => s.answered));
  await until(() => store.codingBudget().holders + store.codingBudget().waiters === 0);
  expect(store.codingBudget()).toMatchObject({ heldBytes: 0, holders: 0, waiters: 0 });
  return held.heldBytes;
}

describe('a wide-code write', () => {
  it('asks for the parity its own units hold: four 1 MiB uploads run at once', async () => {
    // Each: 3 x 128 KiB of parity, its uploads' buffers, the body's and the sealing's (about 7.3 MiB).
    expect(await stalledAtOnce('wide', 4, MiB)).toBeLessThan(4 * 8 * MiB);
  });

  it("never asks for less than its largest unit's m parity columns", () => {
    const { units, policy } = gateway();
    for (const size of [4097, 1 * MiB, 8 * MiB + 3, 63 * MiB + 17, 64 * MiB, 200 * MiB]) {
      for (const sealed of [false, true]) {
        const plan = units.plan(size, policy, false, sealed);
        expect(plan.mode).toBe('column');
        const plain = Math.min(size, plan.unitPlainBytes!);
        const stored = plan.sealRecord ? sealedSize(plain, plan.sealRecord) : plain;
        // The writer's parity: m x the first (largest) unit's shard length (format/layout.ts).
        const shardLen = shardLayout({ size: stored, k: 8, m: 3, blockSize: policy.blockSize, headerLens: [0], layout: 'column' }, 0).stripeData;
        expect(plan.firstShardBytes).toBe(shardLen);
        const lease = writeBytes(plan, policy.blockSize);
        expect(lease).toBeGreaterThanOrEqual(3 * shardLen);
        // ... and not the 24 MiB of parity it asked for before: one block, the uploads', the body's and the sealing's buffers.
        expect(lease - 3 * shardLen).toBeLessThan(8 * MiB);
      }
    }
  });
});

describe('a short striped write', () => {
  it('asks for blocks as long as its row: sixteen 256 KiB 4+2 uploads run at once', async () => {
    // Each: 64 KiB blocks (stripe and two upload buffers per shard), the body's buffer and the sealing's: about 2.25 MiB.
    expect(await stalledAtOnce('narrow', 16, 256 * 1024)).toBeLessThan(16 * 3 * MiB);
  });

  it("asks for its row's blocks, and for full blocks once it has more than one row", () => {
    const { units, narrow } = gateway();
    for (const size of [4097, 64 * 1024, 256 * 1024 + 5, 4 * narrow.blockSize, 4 * narrow.blockSize + 1, 64 * MiB]) {
      for (const sealed of [false, true]) {
        const plan = units.plan(size, narrow, false, sealed);
        expect(plan.mode).toBe('striped');
        const stored = plan.sealRecord ? sealedSize(size, plan.sealRecord) : size;
        const layout = shardLayout({ size: stored, k: 4, m: 2, blockSize: narrow.blockSize, headerLens: [0] }, 0);
        const block = layout.stripes > 1 ? narrow.blockSize : layout.blockLen(0);
        expect(plan.firstBlockBytes).toBe(block);
        // The stripe (6 blocks) and two framed buffers per upload, besides the body's 1 MiB and the sealing's records.
        const lease = writeBytes(plan, narrow.blockSize);
        expect(lease).toBeGreaterThanOrEqual(6 * block + 12 * (block + 8));
        expect(lease - 18 * block).toBeLessThan(2 * MiB);
      }
    }
  });
});
