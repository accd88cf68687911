import { describe, expect, test } from 'vitest';
import { BufferPool } from '../../worker/engine/buffer-pool.ts';

describe('BufferPool', () => {
  test('hands back a given buffer of the asked size, once', () => {
    const pool = new BufferPool(2);
    const b = new ArrayBuffer(1024);
    pool.give(b);
    expect(pool.take(512)).toBeUndefined();
    expect(pool.take(1024)).toBe(b);
    expect(pool.take(1024)).toBeUndefined();
  });

  test('keeps at most maxPerSize of a size and maxSizes sizes', () => {
    const pool = new BufferPool(2, 2);
    for (let i = 0; i < 5; i++) pool.give(new ArrayBuffer(64));
    pool.give(new ArrayBuffer(128));
    pool.give(new ArrayBuffer(256)); // a third size: dropped
    expect([pool.take(64), pool.take(64), pool.take(64)].filter(Boolean)).toHaveLength(2);
    expect(pool.take(128)).toBeDefined();
    expect(pool.take(256)).toBeUndefined();
  });

  test('ignores a detached buffer (transferred to a stream read)', () => {
    const pool = new BufferPool(2);
    const b = new ArrayBuffer(64);
    structuredClone(b, { transfer: [b] });
    pool.give(b);
    expect(pool.take(0)).toBeUndefined();
    expect(pool.take(64)).toBeUndefined();
  });
});
