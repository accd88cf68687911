/**
 * Bucket-policy matching is bounded work (issue 37): the outside review made one 20-entry
 * DeleteObjects take 7.5-22 s with a policy of long patterns and long keys, while another tenant's
 * GET waited as long. Now patterns are compiled once (glob.ts) and matched in one pass, and
 * DeleteObjects asks the policy once per entry. Bounded by counted steps, not by time: each
 * adversarial case below costs at most a small multiple of pattern + value length, where the
 * previous two-pointer matcher cost pattern x value steps (and the scope matcher's regular
 * expression backtracked over every way of placing its stars).
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Access } from '../../worker/model/access.ts';
import { parseBucketPolicy } from '../../worker/model/bucket-policy.ts';
import { glob, type MatchMeter } from '../../worker/model/glob.ts';
import { policyDenies } from '../../worker/model/policy-eval.ts';
import type { S3Context } from '../../worker/s3/context.ts';
import { DeleteObjects } from '../../worker/s3/delete-objects.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { memoryEcStore, testS3Settings } from '../support/memory-store.ts';

/** Reference: `*` any run, `?` one character, by dynamic programming (independent of glob.ts). */
function reference(p: string, v: string): boolean {
  let row = new Array<boolean>(v.length + 1).fill(false);
  row[0] = true;
  for (const c of p) {
    const next = new Array<boolean>(v.length + 1).fill(false);
    if (c === '*') {
      next[0] = row[0]!;
      for (let j = 1; j <= v.length; j++) next[j] = row[j]! || next[j - 1]!;
    } else {
      for (let j = 1; j <= v.length; j++) next[j] = row[j - 1]! && (c === '?' || c === v[j - 1]);
    }
    row = next;
  }
  return row[v.length]!;
}

const steps = (pattern: string, value: string) => {
  const meter: MatchMeter = { steps: 0 };
  const matched = glob(pattern).matches(value, meter);
  return { matched, steps: meter.steps };
};

describe('glob patterns', () => {
  it('agree with a reference matcher on every small pattern and value', () => {
    const alphabet = ['a', 'b', '?', '*'];
    const patterns: string[] = [''];
    for (let len = 1; len <= 4; len++)
      for (let n = 0; n < alphabet.length ** len; n++)
        patterns.push(Array.from({ length: len }, (_, i) => alphabet[Math.floor(n / alphabet.length ** i) % alphabet.length]).join(''));
    const values: string[] = [''];
    for (let len = 1; len <= 6; len++)
      for (let n = 0; n < 2 ** len; n++) values.push(Array.from({ length: len }, (_, i) => ((n >> i) & 1 ? 'b' : 'a')).join(''));
    const wrong = patterns.flatMap((p) => values.filter((v) => glob(p).matches(v) !== reference(p, v)).map((v) => `${p} ~ ${v}`));
    expect(wrong).toEqual([]);
    expect(glob('a?c*x?z').matches('a-c/long/x-z')).toBe(true);
  });

  it.each([
    ['a long literal after a star', `*${'a'.repeat(4000)}b`, 'a'.repeat(8000)],
    ['many stars', `${'*a'.repeat(2000)}*b`, 'a'.repeat(8000)],
    ['a long segment with ? after a star', `*${'a?'.repeat(100)}b`, 'a'.repeat(8000)],
    ['segments that almost match', `*${'ab'.repeat(300)}c*${'ab'.repeat(300)}d`, 'ab'.repeat(4000)],
  ])('%s: steps bounded by (pattern + value) x words, not pattern x value', (_name, pattern, value) => {
    const { matched, steps: n } = steps(pattern, value);
    expect(matched).toBe(false);
    const longestWild = Math.max(
      0,
      ...pattern
        .split('*')
        .filter((s) => s.includes('?'))
        .map((s) => s.length),
    );
    const words = Math.max(1, Math.ceil(longestWild / 32));
    expect(n).toBeLessThanOrEqual(2 * (pattern.length + value.length) * words);
    expect(n).toBeLessThan((pattern.length * value.length) / 50); // what the previous matcher needed, with room to spare
  });

  it('a scope bucket pattern with many stars answers (the regular expression it was backtracked exponentially)', () => {
    const access = new Access([{ buckets: [`${'*a'.repeat(20)}*b`], actions: ['read'] }]);
    expect(access.allowsObject('read', 'a'.repeat(63), 'k')).toBe(false);
    expect(access.allowsObject('read', `${'a'.repeat(62)}b`, 'k')).toBe(true);
  });
});

describe('a policy of long patterns', () => {
  const bucket = 'pics';
  // 18 KiB of patterns: resources and StringLike conditions that almost match long keys.
  const statements = Array.from({ length: 6 }, (_, i) => ({
    Effect: 'Deny',
    Principal: '*',
    Action: ['s3:DeleteObject', `s3:*${'e'.repeat(200)}*`],
    Resource: `arn:aws:s3:::${bucket}/*${'k'.repeat(1200)}${i}`,
    Condition: { StringLike: { 'aws:UserAgent': [`*${'u'.repeat(1500)}x`] } },
  }));
  const policy = parseBucketPolicy(JSON.stringify({ Version: '2012-10-17', Statement: statements }), bucket);
  const key = 'k'.repeat(1024);

  it('costs steps linear in the policy and the key per evaluation', () => {
    const meter: MatchMeter = { steps: 0 };
    const denied = policyDenies(policy, {
      actions: ['s3:DeleteObject'],
      resource: `arn:aws:s3:::${bucket}/${key}`,
      accessKeyId: 'AKID',
      context: (k) => (k === 'aws:useragent' ? ['u'.repeat(8000)] : undefined),
      meter,
    });
    expect(denied).toBe(false);
    const policyChars = JSON.stringify(statements).length;
    expect(meter.steps).toBeLessThanOrEqual(2 * 6 * (policyChars / 6 + key.length + 8000 + 64));
  });

  it('DeleteObjects asks the policy once per entry', async () => {
    const { store } = memoryEcStore(localCatalog());
    await store.createBucket(bucket, { region: 'us-east-1' });
    const entries = Array.from({ length: 20 }, (_, i) => `${'k'.repeat(1000)}${i}`);
    const xml = `<Delete>${entries.map((k) => `<Object><Key>${k}</Key></Object>`).join('')}</Delete>`;
    const bytes = new TextEncoder().encode(xml);
    const asked: string[] = [];
    const s3 = {
      op: 'DeleteObjects',
      bucket,
      key: null,
      query: new URLSearchParams('delete'),
      store,
      settings: testS3Settings(),
      headers: new Headers({ 'content-md5': createHash('md5').update(bytes).digest('base64') }),
      auth: { body: new Response(bytes).body, decodedContentLength: bytes.length },
      policy: { deniesObject: (_actions: readonly string[], k: string) => (asked.push(k), false) },
    } as unknown as S3Context;
    const res = await DeleteObjects(s3);
    expect(res.status).toBe(200);
    expect(asked.sort()).toEqual([...entries].sort());
  });
});
