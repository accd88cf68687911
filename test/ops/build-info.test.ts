/**
 * Which gateway answers and for how long it has (issue 27): the version of package.json and the
 * answering isolate's start, in the status document, the metrics (as the official Prometheus
 * client parses them) and `shardgate status`'s first line.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/memory.ts';
import { MeteredBackend } from '../../backends/metered.ts';
import { buildLine } from '../../cli/commands/status.ts';
import { MemoryOpsRecord } from '../../worker/ops/book.ts';
import { OpsFlusher } from '../../worker/ops/flusher.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import { renderMetrics } from '../../worker/ops/prometheus.ts';
import { OpsService } from '../../worker/ops/service.ts';
import type { BuildInfo } from '../../worker/ops/status.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { ROOT } from '../support/worker.ts';
import { parseMetrics, valueOf } from './helpers.ts';

const PACKAGE_VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

async function status(build?: () => BuildInfo) {
  const meter = new IsolateMeter();
  const record = new MemoryOpsRecord();
  const backends = [new MeteredBackend(new MemoryBackend({ id: 'm', domain: 'd' }), (r) => meter.backendCall(r))];
  const ops = new OpsService({
    config: {
      backends: [{ id: 'm', domain: 'd' }],
      policies: { p: { codec: 'rs', k: 1, m: 0 } },
      defaultPolicy: 'p',
      coder: { kernel: 'scalar', crc32: 'js' },
      scrubMode: 'heads',
      deployment: { mode: 'local', warnings: [] },
    },
    catalog: localCatalog(),
    backends,
    meter,
    record,
    flusher: new OpsFlusher(meter, (d) => record.record(d), 5000),
    probeEveryMs: 30_000,
    build,
  });
  return ops.status({ signed: false, hours: 1, probe: false });
}

describe('version and uptime', () => {
  it("the status carries package.json's version and the isolate's start, unsigned too", async () => {
    const { doc } = await status();
    expect(doc.version).toBe(PACKAGE_VERSION);
    expect(doc.isolate.startedAt).toBeLessThanOrEqual(doc.now);
    expect(doc.isolate.uptimeSeconds).toBe(Math.floor((doc.now - doc.isolate.startedAt) / 1000));
    // One isolate, one start: a second gateway built in it reports the same.
    expect((await status()).doc.isolate.startedAt).toBe(doc.isolate.startedAt);
  });

  it('the metrics carry shardgate_build_info{version} and the isolate start time', async () => {
    const started = Date.now() - 3 * 3_600_000;
    const { doc, totals } = await status(() => ({ version: '7.1.2-rc.1', isolateStartedAt: started }));
    expect(doc.isolate.uptimeSeconds).toBe(Math.floor((doc.now - started) / 1000));
    const samples = await parseMetrics(renderMetrics(doc, totals));
    expect(valueOf(samples, 'shardgate_build_info', { version: '7.1.2-rc.1' })).toBe(1);
    expect(valueOf(samples, 'shardgate_isolate_start_time_seconds')).toBe(started / 1000);
  });

  it('shardgate status says the version and how long the answering isolate has run', () => {
    expect(buildLine({ version: '0.1.0', isolate: { uptimeSeconds: 150, codingBudget: undefined as never } })).toBe(
      'version 0.1.0, up 3 min (the isolate that answered)',
    );
    expect(buildLine({ version: '0.1.0', isolate: { uptimeSeconds: 3 * 86400, codingBudget: undefined as never } })).toBe(
      'version 0.1.0, up 3 days (the isolate that answered)',
    );
    expect(buildLine({})).toBe('version unknown'); // a gateway from before the field
  });
});
