// Node resolve hook: `cloudflare:workers` (imported by the catalog's Durable Object class) is
// test/support/cloudflare-workers.ts in Node, as vitest.config.ts aliases it for the Node tests.
export async function resolve(specifier, context, next) {
  if (specifier === 'cloudflare:workers') return { url: new URL('../../test/support/cloudflare-workers.ts', import.meta.url).href, shortCircuit: true };
  return next(specifier, context);
}
