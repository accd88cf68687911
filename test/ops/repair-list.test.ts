/**
 * `shardgate repair --list` as a person reads it: the missing shards of a unit are a count and
 * their indexes marked as indexes, so shard #0 missing does not read as "0 missing".
 */
import { describe, expect, it } from 'vitest';
import { missingShards, worklistText } from '../../cli/commands/repair.ts';

describe('repair --list', () => {
  it('labels missing shards with a count and #indexes', () => {
    expect(missingShards([0])).toBe('1 (#0)');
    expect(missingShards([1, 4])).toBe('2 (#1, #4)');
  });

  it('prints one row per unit under a "missing shards" column', () => {
    const text = worklistText(
      {
        units: [
          {
            bucket: 'media',
            key: 'a.jpg',
            unitId: 'u1',
            missing: [0],
            since: '2026-12-02T00:00:00Z',
            attempts: 3,
            nextAttemptAt: '2026-12-02T00:01:00Z',
            lastError: 'b0: Unavailable',
          },
          { bucket: 'media', key: 'b.jpg', unitId: 'u2', missing: [2, 5], since: '2026-12-02T00:00:00Z', attempts: 0 },
        ],
        truncated: false,
      },
      false,
    );
    const [header, first, second] = text.trimEnd().split('\n');
    expect(header).toMatch(/^object\s+unit\s+missing shards\s+attempts\s+next try\s+last error$/);
    expect(first).toMatch(/^media\/a\.jpg\s+u1\s+1 \(#0\)\s+3\s+2026-12-02T00:01:00Z\s+b0: Unavailable$/);
    expect(second).toMatch(/^media\/b\.jpg\s+u2\s+2 \(#2, #5\)\s+0\s+now$/);
    expect(worklistText({ units: [], truncated: false }, true)).toBe('no stuck degraded units\n');
  });
});
