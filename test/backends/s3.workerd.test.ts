// The backend contract against S3Backend running inside workerd, the runtime it ships on, talking
// to the s3rver process that s3rver.global-setup.ts started in Node. Here streamed puts take the
// Worker path: a FixedLengthStream request body (Node's duplex: 'half' path is s3.test.ts's).

import { describe, expect, inject, it } from 'vitest';
import { S3Backend } from '../../backends/s3.ts';
import { expectSameBytes, getBytes, pattern, runBackendContract } from './contract.ts';

function s3rverEndpoint(): string {
  const endpoint = inject('s3rverEndpoint');
  if (!endpoint) throw new Error('no s3rver: the workerd test project needs globalSetup test/backends/s3rver.global-setup.ts');
  return endpoint;
}

const backend = () =>
  new S3Backend({
    id: 's3-w',
    domain: 'local/s3rver',
    endpoint: s3rverEndpoint(),
    bucket: 'b',
    region: 'us-east-1',
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
  });

runBackendContract('s3 (s3rver, from workerd)', backend, {
  quirks: {
    listOrderAcrossDepths: 's3rver lists by walking directories: mixed-depth keys come out of order, pages skip some',
  },
});

describe('S3Backend in workerd', () => {
  it('runs where FixedLengthStream exists', () => {
    expect(typeof FixedLengthStream).toBe('function');
  });

  it('reads back a streamed put byte for byte', async () => {
    const data = pattern(300_000, 9);
    await backend().put('w/stream', new Blob([data]).stream(), data.byteLength);
    expectSameBytes((await getBytes(backend(), 'w/stream')).bytes, data);
  });
});
