// The backend contract against R2Backend on miniflare's R2 simulation, driven from Node through
// Miniflare#getR2Bucket (a proxy to the binding inside workerd). Through the proxy a stream has no
// known length, so R2Backend buffers streamed puts here; the FixedLengthStream path that Workers
// use runs in r2.workerd.test.ts. Plus R2 error-code mapping, checked on errors the sim raises.

import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { R2Backend } from '../../backends/r2.ts';
import { expectKind, pattern, runBackendContract } from './contract.ts';

async function startR2(): Promise<{ mf: Miniflare; bucket: R2Bucket }> {
  const mf = new Miniflare({
    modules: true,
    script: 'export default { fetch() { return new Response(null, { status: 404 }) } }',
    r2Buckets: ['SHARDS'],
    compatibilityDate: '2026-04-20',
  });
  const bucket = (await mf.getR2Bucket('SHARDS')) as unknown as R2Bucket;
  return { mf, bucket };
}

let contractMf: Miniflare | undefined;
runBackendContract(
  'r2 (miniflare proxy)',
  async () => {
    const { mf, bucket } = await startR2();
    contractMf = mf;
    return new R2Backend({ id: 'r2-a', domain: 'cf/r2', bucket });
  },
  { cleanup: () => contractMf?.dispose() },
);

describe('R2Backend error mapping', () => {
  let mf: Miniflare;
  let backend: R2Backend;
  beforeAll(async () => {
    const r2 = await startR2();
    mf = r2.mf;
    backend = new R2Backend({ id: 'r2-b', domain: 'cf/r2', bucket: r2.bucket });
  });
  afterAll(() => mf.dispose());

  it('maps R2 InvalidRange (10039), raised by the sim, to Corrupt', async () => {
    await backend.put('e/k', pattern(10), 10);
    await expectKind(backend.get('e/k', { offset: 11, length: 1 }), 'Corrupt', 'r2-b');
  });

  it('maps binding errors by their trailing code, unknown ones to Unavailable', async () => {
    const failing = (message: string) =>
      new R2Backend({
        id: 'r2-c',
        domain: 'cf/r2',
        bucket: { head: () => Promise.reject(new Error(message)) } as unknown as R2Bucket,
      });
    await expectKind(failing('head: Reduce your rate of requests (10058)').head('k'), 'Throttled', 'r2-c');
    await expectKind(failing('head: precondition failed (10031)').head('k'), 'PreconditionFailed');
    await expectKind(failing('head: We encountered an internal error. Please try again. (10001)').head('k'), 'Unavailable');
    await expectKind(failing('Network connection lost.').head('k'), 'Unavailable');
  });

  it('reports a key over R2 limits as a backend refusal, not a crash', async () => {
    const err = await backend.put('k'.repeat(1100), pattern(1), 1).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'BackendError', backendId: 'r2-b' });
  });
});
