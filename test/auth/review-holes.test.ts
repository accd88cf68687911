/**
 * The outside review's findings (issue 11), each as it was reproduced, through the real app and
 * gate in Node (test/support/gate-app.ts): what the holder of a valid URL could do beyond what it
 * signs, and the inputs that got 500. Each test failed before its fix.
 */
import { createHash } from 'node:crypto';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { AwsV4Signer } from 'aws4fetch';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GATE_BASE_DOMAIN, GATE_HOST, gateApp } from '../support/gate-app.ts';
import { ACCESS_KEY, SECRET, sigv2Target, smithySigner, wireQuery } from './helpers/signers.ts';

const BASE = `http://${GATE_HOST}`;
const FAR = 4102444800; // 2100-01-01, a SigV2 Expires
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** The error code of an S3 XML (or operator JSON) error body. */
async function codeOf(res: Response): Promise<string> {
  const text = await res.text();
  return /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? /"code":"([^"]+)"/.exec(text)?.[1] ?? `${res.status}`;
}

/** A request with a string body and its Content-Length, as workerd hands one to the Worker. */
function request(url: string, init: { method?: string; body?: string; headers?: Record<string, string> | Headers } = {}): Request {
  const headers = new Headers(init.headers);
  if (init.body !== undefined) headers.set('content-length', String(Buffer.byteLength(init.body)));
  return new Request(url, { method: init.method, headers, body: init.body });
}

async function signedV4(method: string, url: string, init: { body?: string; headers?: Record<string, string>; region?: string } = {}): Promise<Request> {
  const signer = new AwsV4Signer({
    method,
    url,
    headers: init.headers,
    body: init.body,
    accessKeyId: ACCESS_KEY,
    secretAccessKey: SECRET,
    service: 's3',
    region: init.region ?? 'us-east-1',
  });
  const s = await signer.sign();
  return request(s.url.toString(), { method: s.method, headers: s.headers, body: init.body });
}

/** Signed by @smithy/signature-v4 over the path exactly as given (dot segments included). */
async function smithySigned(method: string, path: string, body?: string): Promise<Request> {
  const headers = { host: GATE_HOST, 'x-amz-content-sha256': sha256(body ?? '') };
  const out = await smithySigner().sign({ method, protocol: 'http:', hostname: GATE_HOST, path, query: {}, headers, body });
  return request(BASE + path, { method, headers: out.headers, body });
}

function sdkClient(region = 'us-east-1'): S3Client {
  return new S3Client({ endpoint: BASE, region, forcePathStyle: true, credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET } });
}

async function setup() {
  const gate = gateApp();
  const ok = async (req: Request) => {
    const res = await gate.send(req);
    expect(res.status, await res.clone().text()).toBeLessThan(300);
    return res;
  };
  await ok(await signedV4('PUT', `${BASE}/holes`));
  await ok(await signedV4('PUT', `${BASE}/holes/obj`, { body: 'object body' }));
  const created = await (await ok(await signedV4('POST', `${BASE}/holes/mpu?uploads`))).text();
  const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created)![1];
  return { ...gate, uploadId };
}

const uploadsOf = async (g: Awaited<ReturnType<typeof setup>>) =>
  (await g.catalog.listUploadRecords('holes', { prefix: '', delimiter: null, keyMarker: null, uploadIdMarker: null, maxUploads: 100 })).uploads.map(
    (u) => u.uploadId,
  );

describe('hole 1: SigV2 URLs cover percent-encoded parameter names', () => {
  it('GetObject + %72esponse-content-type: 403, not an HTML response', async () => {
    const g = await setup();
    const target = sigv2Target({ method: 'GET', path: '/holes/obj', expires: FAR });
    expect((await g.send(new Request(BASE + target))).status).toBe(200);
    const res = await g.send(new Request(`${BASE}${target}&%72esponse-content-type=text/html`));
    expect(res.headers.get('content-type')).not.toBe('text/html');
    expect([res.status, await codeOf(res)]).toEqual([403, 'SignatureDoesNotMatch']);
  });

  it('DeleteObject + %75ploadId: 403, the upload stays', async () => {
    const g = await setup();
    const target = sigv2Target({ method: 'DELETE', path: '/holes/mpu', expires: FAR });
    const res = await g.send(new Request(`${BASE}${target}&%75ploadId=${g.uploadId}`, { method: 'DELETE' }));
    expect([res.status, await codeOf(res)]).toEqual([403, 'SignatureDoesNotMatch']);
    expect(await uploadsOf(g)).toEqual([g.uploadId]);
  });

  it('PutObject + %75ploadId&%70artNumber: 403, no part stored', async () => {
    const g = await setup();
    const headers = { 'content-type': 'application/octet-stream' };
    const target = sigv2Target({ method: 'PUT', path: '/holes/mpu', expires: FAR, headers });
    expect((await g.send(request(BASE + target, { method: 'PUT', body: 'whole', headers }))).status).toBe(200);
    const res = await g.send(request(`${BASE}${target}&%75ploadId=${g.uploadId}&%70artNumber=1`, { method: 'PUT', body: 'part', headers }));
    expect([res.status, await codeOf(res)]).toEqual([403, 'SignatureDoesNotMatch']);
    expect((await g.catalog.listPartRecords('holes', 'mpu', g.uploadId, 0, 10)).parts).toEqual([]);
  });

  it('ListObjects + %75ploads: 403, no upload ids listed', async () => {
    const g = await setup();
    const target = sigv2Target({ method: 'GET', path: '/holes', expires: FAR });
    const res = await g.send(new Request(`${BASE}${target}&%75ploads`));
    const text = await res.text();
    expect(text).not.toContain(g.uploadId);
    expect(res.status).toBe(403);
  });

  it('an unsigned parameter that is not a listing option is refused', async () => {
    const g = await setup();
    const target = sigv2Target({ method: 'GET', path: '/holes/obj', expires: FAR });
    const res = await g.send(new Request(`${BASE}${target}&unknown=1`));
    expect([res.status, await codeOf(res)]).toEqual([403, 'AccessDenied']);
    const listing = sigv2Target({ method: 'GET', path: '/holes', expires: FAR });
    expect((await g.send(new Request(`${BASE}${listing}&prefix=o&max-keys=1`))).status).toBe(200);
  });
});

describe('hole 2: a presigned SigV4 URL that pins the body hash is held to it', () => {
  it('x-amz-content-sha256: UNSIGNED-PAYLOAD does not unpin it', async () => {
    const g = await setup();
    const presigned = await smithySigner().presign(
      {
        method: 'PUT',
        protocol: 'http:',
        hostname: GATE_HOST,
        path: '/holes/pinned',
        query: {},
        headers: { host: GATE_HOST, 'x-amz-content-sha256': sha256('good') },
      },
      { expiresIn: 300 },
    );
    const url = `${BASE}/holes/pinned?${wireQuery(Object.entries(presigned.query as Record<string, string>))}`;
    const evil = await g.send(request(url, { method: 'PUT', body: 'evil', headers: { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } }));
    expect([evil.status, await codeOf(evil)]).toEqual([403, 'SignatureDoesNotMatch']);
    expect(await codeOf(await g.send(request(url, { method: 'PUT', body: 'evil' })))).toBe('XAmzContentSHA256Mismatch');
    await expect(g.store.headObject('holes', 'pinned', { conditions: {} })).rejects.toMatchObject({ code: 'NoSuchKey' });
    expect((await g.send(request(url, { method: 'PUT', body: 'good', headers: { 'x-amz-content-sha256': sha256('good') } }))).status).toBe(200);
  });
});

describe('hole 3: with baseDomains, a SigV2 virtual-hosted URL is bound to its bucket', () => {
  // Made by botocore 1.43.11: boto3.client('s3', endpoint_url='http://s3.gw.test', config=
  // Config(signature_version='s3', s3={'addressing_style': 'virtual'})).generate_presigned_url(
  // 'get_object', Params={'Bucket': 'vhost-a', 'Key': 'dir/obj.txt'}, ...) with this file's key.
  const BOTOCORE_GET = 'http://vhost-a.s3.gw.test/dir/obj.txt?AWSAccessKeyId=AKIDTESTSIGNERS&Signature=1DaI%2BEI%2BaBGJcoRmW0GKIhFdl%2BM%3D&Expires=4102444800';
  const BOTOCORE_LIST =
    'http://vhost-a.s3.gw.test/?prefix=dir%2F&encoding-type=url&AWSAccessKeyId=AKIDTESTSIGNERS&Signature=Odv2nJS7nzDH4vPvWoaaUiQieTM%3D&Expires=4102444800';

  async function twoBuckets() {
    const g = gateApp();
    for (const bucket of ['vhost-a', 'vhost-b']) {
      expect((await g.send(await signedV4('PUT', `${BASE}/${bucket}`))).status).toBe(200);
      expect((await g.send(await signedV4('PUT', `${BASE}/${bucket}/dir/obj.txt`, { body: `in ${bucket}` }))).status).toBe(200);
    }
    return g;
  }

  it("botocore's virtual-hosted URLs work", async () => {
    const g = await twoBuckets();
    const got = await g.send(new Request(BOTOCORE_GET));
    expect([got.status, await got.text()]).toEqual([200, 'in vhost-a']);
    const listed = await g.send(new Request(BOTOCORE_LIST));
    expect(listed.status).toBe(200);
    expect(await listed.text()).toContain('<Key>dir/obj.txt</Key>');
  });

  it('one signature reads one bucket', async () => {
    const g = await twoBuckets();
    const replayed = await g.send(new Request(BOTOCORE_GET.replace('vhost-a.', 'vhost-b.')));
    expect([replayed.status, await codeOf(replayed)]).toEqual([403, 'SignatureDoesNotMatch']);
    // A URL whose resource leaves the bucket out is good for no bucket.
    const bucketless = sigv2Target({ method: 'GET', path: '/dir/obj.txt', expires: FAR });
    for (const bucket of ['vhost-a', 'vhost-b']) {
      const res = await g.send(new Request(`http://${bucket}.${GATE_BASE_DOMAIN}${bucketless}`));
      expect([res.status, await codeOf(res)]).toEqual([403, 'SignatureDoesNotMatch']);
    }
  });
});

describe('hole 4: the credential scope names the gateway region', () => {
  it('header auth for eu-west-1 is AuthorizationHeaderMalformed', async () => {
    const g = await setup();
    const res = await g.send(await signedV4('GET', `${BASE}/holes/obj`, { region: 'eu-west-1' }));
    expect([res.status, await codeOf(res)]).toEqual([400, 'AuthorizationHeaderMalformed']);
    const put = await g.send(await signedV4('PUT', `${BASE}/holes/other-region`, { region: 'eu-west-1', body: 'x' }));
    expect(put.status).toBe(400);
    await expect(g.store.headObject('holes', 'other-region', { conditions: {} })).rejects.toMatchObject({ code: 'NoSuchKey' });
  });

  it('a presigned URL for eu-west-1 is AuthorizationQueryParametersError', async () => {
    const g = await setup();
    const url = await getSignedUrl(sdkClient('eu-west-1'), new GetObjectCommand({ Bucket: 'holes', Key: 'obj' }), { expiresIn: 60 });
    const res = await g.send(new Request(url));
    expect([res.status, await codeOf(res)]).toEqual([400, 'AuthorizationQueryParametersError']);
    const good = await getSignedUrl(sdkClient(), new GetObjectCommand({ Bucket: 'holes', Key: 'obj' }), { expiresIn: 60 });
    expect((await g.send(new Request(good))).status).toBe(200);
  });
});

describe('hole 5: the admin API takes SigV4 only and S3 bucket names only', () => {
  it('rebuild?bucket=/../etc is InvalidBucketName and creates nothing', async () => {
    const g = gateApp();
    const res = await g.send(await signedV4('POST', `${BASE}/_shardgate/admin/rebuild?bucket=%2F..%2Fetc`));
    expect([res.status, await codeOf(res)]).toEqual([400, 'InvalidBucketName']);
    expect(await g.catalog.listBucketRecords()).toEqual([]);
    const fine = await g.send(await signedV4('POST', `${BASE}/_shardgate/admin/rebuild?bucket=rebuilt`));
    expect(fine.status).toBe(200);
    expect((await g.catalog.listBucketRecords()).map((b) => b.name)).toEqual(['rebuilt']);
  });

  it('a SigV2 URL (which does not sign bucket=) is AccessDenied', async () => {
    const g = gateApp();
    const target = sigv2Target({ method: 'POST', path: '/_shardgate/admin/rebuild', query: 'bucket=anything', expires: FAR });
    const res = await g.send(new Request(BASE + target, { method: 'POST' }));
    expect([res.status, await codeOf(res)]).toEqual([403, 'AccessDenied']);
    expect(await g.catalog.listBucketRecords()).toEqual([]);
    // Even an action without parameters.
    const collect = await g.send(new Request(BASE + sigv2Target({ method: 'POST', path: '/_shardgate/admin/collect', expires: FAR }), { method: 'POST' }));
    expect([collect.status, await codeOf(collect)]).toEqual([403, 'AccessDenied']);
  });
});

describe('bad input that got 500', () => {
  it.each([
    ['CR', '%0D'],
    ['LF', '%0A'],
    ['NUL', '%00'],
    ['CRLF header injection', '%0D%0Aset-cookie:%20x=1'],
  ])('a response-* override with %s is InvalidArgument', async (_name, bad) => {
    const g = await setup();
    const url = await getSignedUrl(sdkClient(), new GetObjectCommand({ Bucket: 'holes', Key: 'obj', ResponseContentType: 'text/plain' }), { expiresIn: 60 });
    // Re-signed with the bad value, so that only the value is wrong.
    const value = decodeURIComponent(`text/plain${bad}`);
    const bad1 = await getSignedUrl(sdkClient(), new GetObjectCommand({ Bucket: 'holes', Key: 'obj', ResponseContentType: value }), { expiresIn: 60 });
    expect((await g.send(new Request(url))).status).toBe(200);
    const res = await g.send(new Request(bad1));
    expect([res.status, await codeOf(res)]).toEqual([400, 'InvalidArgument']);
    expect(res.headers.get('set-cookie')).toBeNull();
  });

  it('a response-* override outside ISO-8859-1 is InvalidArgument, as AWS answers; Latin-1 passes', async () => {
    const g = await setup();
    const disposition = (name: string) =>
      getSignedUrl(sdkClient(), new GetObjectCommand({ Bucket: 'holes', Key: 'obj', ResponseContentDisposition: `attachment; filename="${name}"` }), {
        expiresIn: 60,
      });
    const euro = await g.send(new Request(await disposition('€.txt')));
    expect([euro.status, await codeOf(euro)]).toEqual([400, 'InvalidArgument']);
    const latin = await g.send(new Request(await disposition('café.txt')));
    expect(latin.status).toBe(200);
    expect(latin.headers.get('content-disposition')).toBe('attachment; filename="café.txt"');
  });

  describe('a client hanging up mid-upload', () => {
    const logs = { error: [] as unknown[][], log: [] as unknown[][] };
    beforeEach(() => {
      vi.spyOn(console, 'error').mockImplementation((...a) => void logs.error.push(a));
      vi.spyOn(console, 'log').mockImplementation((...a) => void logs.log.push(a));
    });
    afterEach(() => {
      vi.restoreAllMocks();
      logs.error.length = logs.log.length = 0;
    });

    it('is IncompleteBody, logged as a client abort, not as an error; nothing is stored', async () => {
      const g = await setup();
      const url = await getSignedUrl(sdkClient(), new PutObjectCommand({ Bucket: 'holes', Key: 'aborted' }), { expiresIn: 60 });
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          // What workerd does when the client's connection drops part-way through the body.
          if (sent++ === 3) controller.error(new Error('Network connection lost.'));
          else controller.enqueue(new Uint8Array(1000));
        },
      });
      const res = await g.send(new Request(url, { method: 'PUT', body, headers: { 'content-length': '100000' }, duplex: 'half' } as RequestInit));
      expect([res.status, await codeOf(res)]).toEqual([400, 'IncompleteBody']);
      expect(logs.error).toEqual([]);
      expect(logs.log.flat().join(' ')).toContain('client closed the connection');
      await expect(g.store.headObject('holes', 'aborted', { conditions: {} })).rejects.toMatchObject({ code: 'NoSuchKey' });
    });
  });
});

describe("issue 12's gate items", () => {
  it('an expired presigned PUT is AccessDenied at once, its body not read (Expect: 100-continue)', async () => {
    const g = await setup();
    const url = await getSignedUrl(sdkClient(), new PutObjectCommand({ Bucket: 'holes', Key: 'late' }), {
      expiresIn: 1,
      signingDate: new Date(Date.now() - 3600e3),
    } as never);
    let pulls = 0;
    // A client waiting for 100 Continue: its body does not come until it is told to send it.
    const body = new ReadableStream<Uint8Array>(
      {
        pull() {
          pulls++;
          return new Promise(() => {});
        },
      },
      { highWaterMark: 0 },
    );
    const request = new Request(url, { method: 'PUT', body, headers: { expect: '100-continue', 'content-length': '5' }, duplex: 'half' } as RequestInit);
    const res = await Promise.race([g.send(request), new Promise<Response>((resolve) => setTimeout(() => resolve(new Response(null, { status: 599 })), 3000))]);
    expect([res.status, await codeOf(res)]).toEqual([403, 'AccessDenied']);
    expect(pulls).toBe(0);
  });

  it("a key with a '.' segment is named in the error; '..' gets the hint; %2F works", async () => {
    const g = await setup();
    // The SDK signs /holes/./dot as is; the URL the worker sees has been resolved to /holes/dot.
    const dot = await smithySigned('GET', '/holes/./dot');
    const res = await g.send(dot);
    expect(new URL(dot.url).pathname).toBe('/holes/dot');
    const text = await res.text();
    expect([res.status, /<Code>(\w+)/.exec(text)?.[1]]).toEqual([400, 'InvalidURI']);
    expect(text).toContain('/holes/./dot');
    expect(text).toContain('%2F');
    const v2 = await g.send(new Request(BASE + sigv2Target({ method: 'GET', path: '/holes/./dot', expires: FAR })));
    expect([v2.status, await codeOf(v2)]).toEqual([400, 'InvalidURI']);
    const dots = await g.send(await smithySigned('GET', '/holes/a/../b'));
    const dotsText = await dots.text();
    expect([dots.status, /<Code>(\w+)/.exec(dotsText)?.[1]]).toEqual([403, 'SignatureDoesNotMatch']);
    expect(dotsText).toContain('&apos;..&apos; path segments');
    const encoded = await g.send(await smithySigned('PUT', '/holes/a%2F..%2Fb', 'dots kept'));
    expect(encoded.status).toBe(200);
    expect(await (await g.send(await smithySigned('GET', '/holes/a%2F..%2Fb'))).text()).toBe('dots kept');
  });

  it('PostObject (a form POST to a bucket) is answered by the form gate: an unsigned form is AccessDenied and stores nothing (s3/post-object.ts)', async () => {
    const g = await setup();
    const form = new FormData();
    form.set('key', 'from-form');
    form.set('file', new Blob(['x']));
    const res = await g.send(new Request(`${BASE}/holes`, { method: 'POST', body: form }));
    expect([res.status, await codeOf(res)]).toEqual([403, 'AccessDenied']);
    await expect(g.store.headObject('holes', 'from-form', { conditions: {} })).rejects.toMatchObject({ code: 'NoSuchKey' });
  });
});
