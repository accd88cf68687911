import { describe, expect, it } from 'vitest';
import { usageDelta } from '../../worker/catalog/usage.ts';
import { manifest, unit } from './fixtures.ts';

describe('catalog usage', () => {
  it('an overwrite moves the counts from the old manifest to the new one', () => {
    const before = manifest('b', 'k', [unit(), unit()]);
    const after = manifest('b', 'k', [{ ...unit(), missing: [1] }]);
    const delta = Object.fromEntries(usageDelta(before, after));
    // Two whole units of policy 2+1 go, one missing a shard comes: the redundancy counts move too,
    // and the counts by placement (the backends holding the present shards, sorted).
    expect(delta).toEqual({
      bytes: -100,
      'shards:b0': -1,
      'stored:b0': -237,
      'shards:b1': -2,
      'stored:b1': -474,
      'shards:b2': -1,
      'stored:b2': -237,
      'units:2+1:0': -2,
      'unit-bytes:2+1:0': -200,
      'units:2+1:1': 1,
      'unit-bytes:2+1:1': 100,
      'placed-units:2+1:["b0","b1","b2"]': -2,
      'placed-bytes:2+1:["b0","b1","b2"]': -200,
      'placed-units:2+1:["b0","b2"]': 1,
      'placed-bytes:2+1:["b0","b2"]': 100,
    });
  });
});
