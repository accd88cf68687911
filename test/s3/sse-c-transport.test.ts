/**
 * Where an SSE-C key may travel (issue 37): the review's SSE-C keys were accepted over plain HTTP
 * and in presigned query strings, which the access log records. Now a key in the query is 400
 * InvalidArgument and a key over plain HTTP (but loopback) 400 InvalidRequest, before anything is
 * read or stored; over TLS, or on this machine, SSE-C works as before.
 */
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ACCESS_KEY, SECRET } from '../auth/helpers/signers.ts';
import { sdk } from '../auth/mutation/bases.ts';
import { toRequest } from '../auth/mutation/wire.ts';
import { snapshotStore } from '../auth/helpers/store-snapshot.ts';
import { gateApp } from '../support/gate-app.ts';

const B = 'vault';
const KEY = Buffer.alloc(32, 7);
const sseC = { SSECustomerAlgorithm: 'AES256', SSECustomerKey: KEY.toString('base64'), SSECustomerKeyMD5: createHash('md5').update(KEY).digest('base64') };
const codeOf = async (res: Response) => /<Code>([^<]+)<\/Code>/.exec(await res.text())?.[1];
const withScheme = (r: Request, origin: string) => new Request(r.url.replace(/^http:\/\/[^/]+/, origin), r);

describe('SSE-C keys travel only in headers over TLS', () => {
  it('over plain HTTP the request is refused and nothing is stored; over TLS or loopback it works', async () => {
    const g = gateApp();
    await g.store.createBucket(B, { region: 'us-east-1' });
    const before = await snapshotStore(g.catalog);
    const put = async () => toRequest(await sdk(new PutObjectCommand({ Bucket: B, Key: 's', Body: 'secret', ...sseC }), {}))!;
    const plain = await g.send(await put());
    expect(plain.status).toBe(400);
    expect(await codeOf(plain)).toBe('InvalidRequest');
    expect(await snapshotStore(g.catalog)).toBe(before);
    expect((await g.send(withScheme(await put(), 'https://gw.test'))).status).toBe(200);
    expect((await g.send(withScheme(await put(), 'http://127.0.0.1:8787'))).status).toBe(200); // this machine: local development
    // A plain request without a customer key is unaffected.
    expect((await g.send(toRequest(await sdk(new PutObjectCommand({ Bucket: B, Key: 'p', Body: 'open' }), {}))!)).status).toBe(200);
  });

  it('a presigned URL carrying the key in its query is refused, even over TLS', async () => {
    const g = gateApp();
    await g.store.createBucket(B, { region: 'us-east-1' });
    const client = new S3Client({
      endpoint: 'https://gw.test',
      forcePathStyle: true,
      region: 'us-east-1',
      credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET },
    });
    const hoistableHeaders = new Set([
      'x-amz-server-side-encryption-customer-algorithm',
      'x-amz-server-side-encryption-customer-key',
      'x-amz-server-side-encryption-customer-key-md5',
    ]);
    const url = await getSignedUrl(client, new GetObjectCommand({ Bucket: B, Key: 's', ...sseC }), { expiresIn: 300, hoistableHeaders });
    expect(url).toMatch(/x-amz-server-side-encryption-customer-key=/i);
    const res = await g.send(new Request(url));
    expect(res.status).toBe(400);
    expect(await codeOf(res)).toBe('InvalidArgument');
  });
});
