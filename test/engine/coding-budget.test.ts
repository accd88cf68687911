/**
 * CodingBudget: memory handed out in arrival order, given back on release (once), a request
 * larger than the whole budget runs alone, and a request that waits too long is 503 SlowDown.
 */
import { describe, expect, it } from 'vitest';
import { CodingBudget } from '../../worker/engine/coding-budget.ts';

const tick = () => new Promise((r) => setTimeout(r, 5));

describe('CodingBudget', () => {
  it('admits up to the budget, then queues in arrival order', async () => {
    const budget = new CodingBudget(100, 10_000);
    const order: string[] = [];
    const a = await budget.acquire(60);
    const b = budget.acquire(60).then((r) => (order.push('b'), r));
    const c = budget.acquire(30).then((r) => (order.push('c'), r)); // would fit, but b came first
    await tick();
    expect(order).toEqual([]);
    a();
    a(); // a second release gives nothing back twice
    const rb = await b;
    const rc = await c;
    expect(order).toEqual(['b', 'c']);
    const d = budget.acquire(20).then((r) => (order.push('d'), r));
    await tick();
    expect(order).toEqual(['b', 'c']); // 60 + 30 taken: 10 left
    rb();
    (await d)();
    rc();
  });

  it('runs a request larger than the whole budget alone', async () => {
    const budget = new CodingBudget(100, 10_000);
    const huge = await budget.acquire(1000);
    let small = false;
    const s = budget.acquire(1).then((r) => ((small = true), r));
    await tick();
    expect(small).toBe(false);
    huge();
    (await s)();
  });

  it('refuses with SlowDown a request that waited too long, and lets the next one on', async () => {
    const budget = new CodingBudget(100, 30);
    const a = await budget.acquire(100);
    await expect(budget.acquire(50)).rejects.toMatchObject({ code: 'SlowDown', status: 503 });
    a();
    (await budget.acquire(100))();
  });
});
