// The backend contract against R2Backend inside workerd, on the R2 binding TEST_R2 that the
// workerd test project declares (miniflare r2Buckets). Here streamed puts take the Worker path:
// through a FixedLengthStream straight into the binding, never buffered.

import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { R2Backend } from '../../backends/r2.ts';
import { chunked, expectKind, pattern, runBackendContract } from './contract.ts';

function bucket(): R2Bucket {
  const binding = (env as unknown as { TEST_R2?: R2Bucket }).TEST_R2;
  if (!binding) throw new Error('no TEST_R2 binding: the workerd test project needs miniflare r2Buckets: ["TEST_R2"]');
  return binding;
}

runBackendContract('r2 (workerd binding)', () => new R2Backend({ id: 'r2-w', domain: 'cf/r2', bucket: bucket() }));

describe('R2Backend in workerd', () => {
  it('runs where FixedLengthStream exists, so streams are not buffered', () => {
    expect(typeof FixedLengthStream).toBe('function');
  });

  it('refuses a plain stream of unknown length at the binding (why the wrapper exists)', async () => {
    const err = await bucket()
      .put('raw/unknown-length', chunked(pattern(10)))
      .catch((e: unknown) => e);
    expect(String(err)).toMatch(/known length/);
  });

  it('reports a stream that overruns its declared length as Corrupt, storing nothing', async () => {
    const backend = new R2Backend({ id: 'r2-w2', domain: 'cf/r2', bucket: bucket() });
    await expectKind(backend.put('fls/over', chunked(pattern(100), [60]), 90), 'Corrupt', 'r2-w2');
    await expectKind(backend.head('fls/over'), 'NotFound');
  });
});
