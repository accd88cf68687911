// The catalog's own shard-length formula (catalog/usage.ts, which may not import the engine) held
// equal to the engine's layout (engine/layout.ts, which writes the files) over many geometries.

import { describe, expect, it } from 'vitest';
import type { CodedUnit } from '../../worker/format/manifest.ts';
import { shardFileBytes, usageDelta } from '../../worker/catalog/usage.ts';
import { shardLayout } from '../../worker/format/layout.ts';
import { manifest, unit } from './fixtures.ts';

describe('catalog usage', () => {
  it('shardFileBytes equals the engine layout for striped and column units of many shapes', () => {
    let checked = 0;
    for (const layout of [undefined, 'column'] as const) {
      for (const [k, m] of [[1, 2], [2, 1], [4, 2], [8, 3], [10, 4]] as const) {
        for (const blockSize of [4096, 65536, 262144]) {
          for (const size of [0, 1, 15, 4096, 65535, 65536, 65537, 1_000_000, 3 * 262144 * k + 7]) {
            const unitLike: Pick<CodedUnit, 'size' | 'k' | 'm' | 'blockSize' | 'headerLens' | 'layout'> = {
              size, k, m, blockSize, layout, headerLens: Array.from({ length: k + m }, (_, i) => 400 + i),
            };
            for (let i = 0; i < k + m; i++) {
              expect(shardFileBytes(unitLike, i), `${layout ?? 'striped'} ${k}+${m} bs ${blockSize} size ${size} shard ${i}`).toBe(shardLayout(unitLike, i).shardFileLen());
              checked++;
            }
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(1000);
  });

  it('an overwrite moves the counts from the old manifest to the new one', () => {
    const before = manifest('b', 'k', [unit(), unit()]);
    const after = manifest('b', 'k', [{ ...unit(), missing: [1] }]);
    const delta = Object.fromEntries(usageDelta(before, after));
    expect(delta).toEqual({ bytes: -100, 'shards:b0': -1, 'stored:b0': -237, 'shards:b1': -2, 'stored:b1': -474, 'shards:b2': -1, 'stored:b2': -237 });
  });
});
