/**
 * Issue 27: a backend's health shows what the backend did, never what the gateway did to it.
 * Six backends, two down, 30 PUTs of 3 MB refused (the write quorum of 4+2 is 5): the gateway
 * aborts the uploads to the four healthy backends, and those cancellations must not make them
 * degraded nor leave a "last error" on them. The two down backends do show their failures.
 * Then the same through the metered wrapper alone: a call the caller aborts, and a put whose
 * body the caller breaks, are 'Aborted'; a backend's own failure still counts.
 */
import { describe, expect, it } from 'vitest';
import { FaultyBackend, MemoryBackend } from '../../backends/index.ts';
import { MeteredBackend, type BackendCallReport } from '../../backends/metered.ts';
import { BackendError, type ChunkSource } from '../../backends/types.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { backendHealth } from '../../worker/ops/health.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import { localCatalog } from '../support/local-catalog.ts';

const MB3 = 3 * 1024 * 1024;
const putOptions = (size: number) => ({ contentLength: size, metadata: { user: {} }, checksum: null, conditions: {} });

/** A body that arrives in 64 KiB pieces, as a client's does. */
function body(size: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      const n = Math.min(65_536, size - sent);
      c.enqueue(new Uint8Array(n).fill(sent & 0xff));
      sent += n;
      if (sent >= size) c.close();
    },
  });
}

describe('errors are attributed to whoever caused them', () => {
  it('refused writes with 2 of 6 backends down leave the 4 healthy ones up, with no last error', { timeout: 60_000 }, async () => {
    const meter = new IsolateMeter();
    const faulty = Array.from({ length: 6 }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `b${i}`, domain: `zone-${i}` })));
    const metered = faulty.map((b) => new MeteredBackend(b, (r) => meter.backendCall(r)));
    const config = parseConfig({
      backends: faulty.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { ec: { k: 4, m: 2, blockSize: 65_536 } },
      defaultPolicy: 'ec',
    });
    const store = new EcStore({ catalog: localCatalog(), units: new UnitStore(metered), settings: engineSettings(config) });
    await store.createBucket('media', { region: 'us-east-1' });
    faulty[1]!.goOffline();
    faulty[4]!.goOffline();

    let refused = 0;
    for (let i = 0; i < 30; i++) {
      await store.putObject('media', `upload-${i}`, body(MB3), putOptions(MB3)).catch(() => refused++);
    }
    expect(refused).toBe(30);

    const seen = meter.take()!;
    const health = faulty.map((b) => backendHealth(b, seen.backends[b.id], seen.backends[b.id], undefined));
    const healthy = health.filter((h) => h.id !== 'b1' && h.id !== 'b4');
    // The healthy backends were really written to (and cancelled): the test exercises the path.
    for (const h of healthy) expect(h.requests.put, h.id).toBeGreaterThan(0);
    expect(healthy.map((h) => [h.id, h.state, h.errors, h.lastError, h.lastErrorKind])).toEqual(healthy.map((h) => [h.id, 'up', 0, null, null]));
    for (const down of health.filter((h) => h.id === 'b1' || h.id === 'b4')) {
      expect([down.state, down.lastErrorKind]).toEqual(['down', 'Unavailable']);
    }
  });

  it("a call the caller aborts is 'Aborted', whatever error the backend rethrows", async () => {
    const reports: BackendCallReport[] = [];
    const b = new MeteredBackend(new MemoryBackend({ id: 'b', domain: 'd' }), (r) => reports.push(r));
    const gone = new AbortController();
    gone.abort(new Error('write quorum missed'));
    await expect(b.put('k', new Uint8Array(4), 4, { signal: gone.signal })).rejects.toThrow();
    await expect(b.get('k', undefined, { signal: gone.signal })).rejects.toThrow();
    expect(reports.map((r) => [r.op, r.outcome])).toEqual([
      ['put', 'Aborted'],
      ['get', 'Aborted'],
    ]);
  });

  it("a put whose body the caller breaks is 'Aborted'; a backend's own failure is still its error", async () => {
    const reports: BackendCallReport[] = [];
    const faulty = new FaultyBackend(new MemoryBackend({ id: 'b', domain: 'd' }));
    const b = new MeteredBackend(faulty, (r) => reports.push(r));
    let reads = 0;
    const breaking: ChunkSource = {
      read: async () => {
        if (reads++ === 0) return new Uint8Array(4);
        throw new Error('the gateway stopped this upload');
      },
      cancel: () => {},
    };
    await expect(b.put('k', breaking, 8)).rejects.toThrow(/stopped this upload/);
    faulty.failWhen(() => true, 'Unavailable');
    await expect(b.put('k', new Uint8Array(4), 4)).rejects.toThrow(BackendError);
    expect(reports.map((r) => [r.op, r.outcome])).toEqual([
      ['put', 'Aborted'],
      ['put', 'Unavailable'],
    ]);
  });
});
