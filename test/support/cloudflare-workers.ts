/**
 * `cloudflare:workers` in Node tests (vitest.config.ts aliases it here): just enough of
 * DurableObject for the product's own Durable Object classes to run in-process over
 * test/support/sqlite-storage.ts (test/support/local-catalog.ts).
 */
export class DurableObject<Env = unknown> {
  constructor(
    protected readonly ctx: DurableObjectState,
    protected readonly env: Env,
  ) {}
}
