/**
 * engine/placement.ts: an object's shards go where rendezvous hashing of its name ranks the
 * backends, one per failure domain while domains remain, never more than m in one. Placement is
 * recorded in each manifest, so a change would not lose data, but it would move where new
 * objects' shards land for the same name and configuration (a re-stripe or a drain plans by it):
 * the answers below are those of the code before each backend was scored once per placement
 * (issue 42), and every placement is compared with a plain ranking by the same score.
 */
import { describe, expect, it } from 'vitest';
import { checksums } from '../../coder-wasm/index.ts';
import { placeShards } from '../../worker/engine/placement.ts';

const DOMAINS: Record<string, string> = {
  'r2-a': 'cf',
  'r2-b': 'cf',
  'r2-c': 'cf',
  's3-aws-1': 'aws',
  's3-aws-2': 'aws',
  'b2-1': 'b2',
  'wasabi-1': 'wasabi',
  'minio-1': 'home',
};
const BACKENDS = Object.entries(DOMAINS).map(([id, domain]) => ({ id, domain }));
const utf8 = new TextEncoder();

/** The ranking by score as the earlier code computed it: both scores inside each comparison. */
function referenceRanking(name: string): string[] {
  const key = utf8.encode(name);
  const score = (id: string) => checksums().xxh64(key, checksums().xxh64(utf8.encode(id)));
  return [...BACKENDS]
    .sort((a, b) => {
      const d = score(b.id) - score(a.id);
      return d > 0n ? 1 : d < 0n ? -1 : 0;
    })
    .map((b) => b.id);
}

describe('placeShards', () => {
  it("gives the previous code's placements (computed by it, 2026-12-06)", () => {
    const cases: [string, number, number, string[]][] = [
      ['photos/2026/a.jpg', 4, 2, ['b2-1', 'minio-1', 'r2-b', 's3-aws-2', 'wasabi-1', 'r2-c']],
      ['backup/restic/data/00/0a1b', 4, 2, ['wasabi-1', 'r2-b', 's3-aws-1', 'minio-1', 'b2-1', 'r2-a']],
      ['k', 3, 3, ['s3-aws-1', 'minio-1', 'r2-a', 'wasabi-1', 'b2-1', 's3-aws-2']],
      ['', 2, 1, ['minio-1', 'r2-b', 's3-aws-2']],
    ];
    for (const [name, k, m, want] of cases) expect(placeShards(`bucket/${name}`, BACKENDS, k, m).map((b) => b.id)).toEqual(want);
  });

  it('takes backends in score order, one per domain first, at most m per domain', () => {
    for (let i = 0; i < 200; i++) {
      const name = `bucket/object-${i}`;
      const placed = placeShards(name, BACKENDS, 4, 2).map((b) => b.id);
      const ranking = referenceRanking(name);
      // Round 0 takes the best-ranked backend of each of the five domains, in ranking order.
      const firstOfDomain = ranking.filter((id, at) => ranking.findIndex((other) => DOMAINS[other] === DOMAINS[id]) === at);
      expect(placed.slice(0, 5)).toEqual(firstOfDomain);
      // The sixth is the best-ranked of the rest (every domain then holds one: any may take a second).
      expect(placed[5]).toBe(ranking.find((id) => !placed.slice(0, 5).includes(id)));
    }
  });
});
