/**
 * node bench/launch.mjs bench/quota-cost.ts [--calls N]
 *
 * What a bucket quota costs a write's first catalog call (issue 45; docs/QUOTAS.md): the time of
 * `prepareWrite` with its size, over the product's CatalogObject on SQLite in wasm (sql.js: slower
 * than a Durable Object's SQLite, so the figures are relative), without a quota, with an
 * objects-only quota, and with a bytes quota while 0, 1,000, 10,000 and 50,000 parts of multipart
 * uploads are in flight (summed on each checked write). Median and p90 of N calls each, in
 * microseconds. The catalog call count is the same in every case (one). Prints a table; never part
 * of `npm test`.
 */
import { localCatalog } from '../test/support/local-catalog.ts';
import { setQuota } from '../worker/catalog/quota-set.ts';
import { cpuModel } from '../test/support/proc.ts';

const argv = process.argv.slice(2);
const CALLS = Number(argv[argv.indexOf('--calls') + 1] || 300);

async function timed(run: () => Promise<unknown>): Promise<{ p50: number; p90: number }> {
  for (let i = 0; i < 20; i++) await run(); // warm
  const us: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const t = process.hrtime.bigint();
    await run();
    us.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  us.sort((a, b) => a - b);
  return { p50: us[Math.floor(us.length / 2)]!, p90: us[Math.floor(us.length * 0.9)]! };
}

const catalog = localCatalog();
const bucket = 'quota-cost';
await catalog.insertBucket(bucket, 'auto');
const expires = new Date(Date.now() + 3_600_000);
const prepare = () => catalog.prepareWrite(bucket, 'k', {}, [], expires, 1000);
const sql = catalog.namespace.instances.get(`bucket:${bucket}`)!.storage.sql;
const rows: [string, { p50: number; p90: number }][] = [];

rows.push(['no quota', await timed(prepare)]);
await setQuota(catalog, bucket, { bytes: null, objects: 1e12 }, Date.now());
rows.push(['objects quota', await timed(prepare)]);
await setQuota(catalog, bucket, { bytes: 1e15, objects: null }, Date.now());
let parts = 0;
for (const target of [0, 1_000, 10_000, 50_000]) {
  for (; parts < target; parts++) {
    sql.exec(
      'INSERT INTO parts (upload_id, part_number, record) VALUES (?, ?, ?)',
      `upload-${Math.floor(parts / 1000)}`,
      (parts % 1000) + 1,
      JSON.stringify({ partNumber: (parts % 1000) + 1, etag: '"x"', size: 5 * 2 ** 20, lastModified: '', units: [] }),
    );
  }
  rows.push([`bytes quota, ${target} parts in flight`, await timed(prepare)]);
}

console.log(`prepareWrite with its size, ${CALLS} calls each (${cpuModel()}, Node ${process.version}; sql.js, in process)\n`);
console.log('| case | p50 µs | p90 µs |\n| --- | ---: | ---: |');
for (const [name, t] of rows) console.log(`| ${name} | ${t.p50.toFixed(0)} | ${t.p90.toFixed(0)} |`);
