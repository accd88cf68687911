/**
 * BackgroundWork: keeps work a request starts but does not wait for (sending a repair found by a
 * read) alive until it settles, with that request's `waitUntil`, not whichever request built the
 * gateway. It owns the one piece of request-scoped state the gateway needs: the execution context
 * of the request being served, carried across awaits by an AsyncLocalStorage (engine code deep
 * inside a read does not take a context parameter).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { BudgetHolder } from '../engine/index.ts';

export interface WaitUntil {
  waitUntil(p: Promise<unknown>): void;
}

export class BackgroundWork {
  private readonly current = new AsyncLocalStorage<WaitUntil | (WaitUntil & BudgetHolder)>();

  /** Runs `fn` as the work of the request (its RequestScope), queue batch or cron run with context `ctx`. */
  run<T>(ctx: WaitUntil | (WaitUntil & BudgetHolder), fn: () => T): T {
    return this.current.run(ctx, fn);
  }

  /** The request being served, as the holder of the coding budget it takes; none outside a request. */
  holder(): BudgetHolder | undefined {
    const ctx = this.current.getStore();
    return ctx && 'label' in ctx ? ctx : undefined;
  }

  /**
   * Runs `fn` as work of its own, holding no request's coding budget (the request may end first:
   * its scope would reclaim a lease still held), kept alive by the current request (if any).
   */
  detached<T>(fn: () => Promise<T>): Promise<T> {
    const ctx = this.current.getStore();
    const work = this.current.run({ waitUntil: (p) => ctx?.waitUntil(p) }, fn);
    ctx?.waitUntil(work);
    return work;
  }

  /** Keeps `p` alive until it settles, as part of the current request (if any). */
  keepAlive(p: Promise<unknown>): void {
    this.current.getStore()?.waitUntil(p);
  }
}
