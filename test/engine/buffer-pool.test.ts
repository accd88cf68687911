import { afterEach, describe, expect, test } from 'vitest';
import { BufferPool } from '../../worker/engine/buffer-pool.ts';
import { assertLive, ChunkOwnershipError, countPoisonRuns, poisonMode, setPoisonMode } from '../../worker/model/lent-chunks.ts';

const wasOn = poisonMode();
afterEach(() => setPoisonMode(wasOn));

describe('BufferPool', () => {
  test('hands back a given buffer of the asked size, once', () => {
    const pool = new BufferPool('test', 2);
    const b = new ArrayBuffer(1024);
    pool.give(b, 'test');
    expect(pool.take(512)).toBeUndefined();
    expect(pool.take(1024)).toBe(b);
    expect(pool.take(1024)).toBeUndefined();
  });

  test('keeps at most maxPerSize of a size and maxSizes sizes', () => {
    const pool = new BufferPool('test', 2, 2);
    for (let i = 0; i < 5; i++) pool.give(new ArrayBuffer(64), 'test');
    pool.give(new ArrayBuffer(128), 'test');
    pool.give(new ArrayBuffer(256), 'test'); // a third size: dropped
    expect([pool.take(64), pool.take(64), pool.take(64)].filter(Boolean)).toHaveLength(2);
    expect(pool.take(128)).toBeDefined();
    expect(pool.take(256)).toBeUndefined();
  });

  test('ignores a detached buffer (transferred to a stream read)', () => {
    const pool = new BufferPool('test', 2);
    const b = new ArrayBuffer(64);
    structuredClone(b, { transfer: [b] });
    pool.give(b, 'test');
    expect(pool.take(0)).toBeUndefined();
    expect(pool.take(64)).toBeUndefined();
  });
});

describe('BufferPool in poison mode', () => {
  test('a buffer given back is poisoned: a view kept of it fails its next check, naming who gave it back', () => {
    setPoisonMode(true);
    const pool = new BufferPool('test-pool', 2);
    const b = new ArrayBuffer(4096);
    const kept = new Uint8Array(b, 100, 1000);
    kept.fill(7);
    assertLive(kept, 'before'); // live while lent
    pool.give(b, 'shard reader k1');
    expect(countPoisonRuns(kept)).toBeGreaterThan(50);
    expect(() => assertLive(kept, 'a consumer')).toThrow(ChunkOwnershipError);
    expect(() => assertLive(kept, 'a consumer')).toThrow(/a consumer: .*shard reader k1 \(test-pool\)/);
  });

  test('a buffer written after it was given back fails the next taker', () => {
    setPoisonMode(true);
    const pool = new BufferPool('test-pool', 2);
    const b = new ArrayBuffer(8192);
    pool.give(b, 'span stream of shard 3');
    new Uint8Array(b)[0] = 1; // a late write by the owner that let it go
    expect(() => pool.take(8192)).toThrow(/written after span stream of shard 3 \(test-pool\) gave it back/);
  });

  test('a buffer taken again is no longer poison (its new owner fills it)', () => {
    setPoisonMode(true);
    const pool = new BufferPool('test-pool', 2);
    const b = new ArrayBuffer(64);
    pool.give(b, 'x');
    expect(pool.take(64)).toBe(b);
    new Uint8Array(b).fill(9);
    expect(() => assertLive(new Uint8Array(b), 'the new owner')).not.toThrow();
  });

  test('off: nothing is filled (production costs nothing)', () => {
    setPoisonMode(false);
    const pool = new BufferPool('test-pool', 2);
    const b = new ArrayBuffer(64);
    new Uint8Array(b).fill(5);
    pool.give(b, 'x');
    expect(new Uint8Array(b).every((v) => v === 5)).toBe(true);
  });
});
