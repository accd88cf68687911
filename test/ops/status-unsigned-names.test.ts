/**
 * The unsigned status names no bucket, key or tenant (issue 37): a bucket whose catalog journal
 * is late made the journal check name it in the document anyone may read. The signed status
 * still names it (the operator needs to know which).
 */
import { describe, expect, it } from 'vitest';
import { MemoryOpsRecord } from '../../worker/ops/book.ts';
import { readDataHealth } from '../../worker/ops/data-health.ts';
import { buildStatus } from '../../worker/ops/status.ts';
import { localCatalog } from '../support/local-catalog.ts';

const SECRET = 'tenant-acme-payroll';

describe('the unsigned status document', () => {
  it('names no bucket when a bucket journal is late; the signed one does', async () => {
    const catalog = localCatalog();
    await catalog.insertBucket(SECRET, 'us-east-1');
    const now = Date.now();
    const data = await readDataHealth(catalog, new Date(now));
    const bucket = data.buckets.find((b) => b.bucket === SECRET)!;
    // Changes waiting since a segment stored 20 minutes ago: the journal check is critical.
    bucket.journal = { pending: 3, dumping: false, acked: 1, ackedTakenAt: now - 20 * 60_000, generation: 1, complete: true, files: 1 };
    const snapshot = { ...(await new MemoryOpsRecord().snapshot(now - 3_600_000)), now };
    const config = {
      backends: [],
      policies: {},
      defaultPolicy: 'ec',
      coder: { kernel: 'scalar', crc32: 'js' },
      scrubMode: 'heads',
      deployment: { mode: 'local', warnings: [] },
    } as const;
    const doc = (signed: boolean) =>
      buildStatus({ config: config as never, snapshot, data, signed, from: now - 3_600_000, build: { version: 'test', isolateStartedAt: now } });
    const unsigned = doc(false);
    expect(unsigned.checks.find((c) => c.name === 'journal')).toMatchObject({ state: 'critical', detail: expect.stringContaining('1 catalog instance(s)') });
    expect(JSON.stringify(unsigned)).not.toContain(SECRET);
    expect(doc(true).checks.find((c) => c.name === 'journal')!.detail).toContain(SECRET);
  });
});
