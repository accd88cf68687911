/**
 * The gate inside workerd (the runtime it ships on): Web Crypto HMAC, node:crypto streaming
 * SHA-256 under nodejs_compat, and Fetch streams, on captured requests of each kind.
 * The full matrix runs in Node (the other test files); this proves the same code runs here.
 */

import { describe, expect, it } from 'vitest';
import { verifyAt } from './helpers/verify.ts';
import { encodeAwsChunked } from './helpers/aws-chunked-encode.ts';
import { checksumOf, testCreateHasher } from './helpers/checksums.ts';
import { readAll, streamOf, decodeStream } from './helpers/streams.ts';
import { FIXTURE_ACCESS_KEY, FIXTURE_SECRET, toRequest, wireRequests } from './helpers/wire.ts';

const credentials = new Map([[FIXTURE_ACCESS_KEY, FIXTURE_SECRET]]);

describe('the gate in workerd', () => {
  const pick = (name: string) => wireRequests().find((w) => w.name === name)!;

  it.each([
    'sdk-js-v3/001-PUT-PutObject', // hex payload hash + CRC32 header
    'sdk-js-v3/018-PUT-PutObject', // aws-chunked, unsigned trailer, SHA256
    'boto3-trixie-https/005-PUT-UploadPart', // aws-chunked, unsigned trailer, CRC32
    'boto3-trixie-https/015-PUT-PutObject', // SigV2 presigned
    'sdk-js-v3/021-GET-GetObject', // SigV4 presigned
  ])('%s passes; a flipped payload byte or a wrong secret fails', async (name) => {
    const w = pick(name);
    const opts = { rawUrl: w.target, credentials, now: w.capturedAt, createHasher: testCreateHasher };
    const verified = await verifyAt(toRequest(w, { pieces: [4093] }), opts);
    expect(verified.accessKeyId).toBe(FIXTURE_ACCESS_KEY);
    if (verified.body) await readAll(verified.body);
    await expect(verifyAt(toRequest(w), { ...opts, credentials: new Map([[FIXTURE_ACCESS_KEY, 'wrong']]) })).rejects.toMatchObject({
      code: 'SignatureDoesNotMatch',
    });
    if (name.includes('-PUT-') && !name.includes('015')) {
      const body = w.body.slice();
      body[name.includes('001') ? 0 : body.indexOf(0x0a) + 1] ^= 1;
      const v = await verifyAt(toRequest(w, { body }), opts);
      await expect(readAll(v.body!)).rejects.toMatchObject({ status: 400 });
    }
  });

  it('signed aws-chunked with a signed trailer', async () => {
    const data = new TextEncoder().encode('workerd '.repeat(3000));
    const datetime = '20261129T212115Z';
    const seed = 'ab'.repeat(32);
    const { body } = encodeAwsChunked(data, {
      sizes: [8192],
      signer: { secret: FIXTURE_SECRET, datetime, region: 'us-east-1', seedSignature: seed },
      trailers: [['x-amz-checksum-crc32', checksumOf('CRC32', data)]],
    });
    const { AwsChunkedDecoder } = await import('../../worker/auth/aws-chunked.ts');
    const { signingKey } = await import('../../worker/auth/sigv4.ts');
    const decoder = new AwsChunkedDecoder({
      decodedContentLength: data.length,
      signing: {
        key: await signingKey(FIXTURE_SECRET, '20261129', 'us-east-1', 's3'),
        datetime,
        scope: '20261129/us-east-1/s3/aws4_request',
        seedSignature: seed,
      },
      trailer: true,
      trailerNames: ['x-amz-checksum-crc32'],
      checksum: { algorithm: 'CRC32', hasher: testCreateHasher('CRC32'), expectedBase64: null },
    });
    const out = await readAll(decodeStream(streamOf(body, [1000]), decoder));
    expect(out.bytes).toEqual(data);
  });
});
