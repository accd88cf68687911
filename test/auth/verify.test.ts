/**
 * The gate's behaviour beyond the captured fixtures: which scheme it picks, AWS's error codes
 * for each way a request can be wrong, the payload forms and checksums, what it returns.
 * Requests are signed by @smithy/signature-v4 (the SDK's signer) unless a case needs a form it
 * cannot make (Date header only), which is then signed by hand with node:crypto.
 */

import { createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import { canonicalizedResource, signatureV2 } from '../../worker/auth/sigv2.ts';
import { parseQuery } from '../../worker/model/request.ts';
import { verifyAt, type VerifyAtOptions as VerifyOptions } from './helpers/verify.ts';
import { encodeAwsChunked, nodeSigningKey, sha256hex } from './helpers/aws-chunked-encode.ts';
import { checksumOf, testCreateHasher } from './helpers/checksums.ts';
import { ACCESS_KEY, NodeSha256, REGION, SECRET, smithySigner, wirePath, wireQuery } from './helpers/signers.ts';
import { readAll, streamOf } from './helpers/streams.ts';

const HOST = 'gw.example.test';
const NOW = new Date('2026-03-01T10:15:00Z');
const EMPTY = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const credentials = new Map([
  [ACCESS_KEY, SECRET],
  ['AKIDSECONDKEY', 'second secret'],
]);

interface SignInit {
  method?: string;
  key?: string;
  query?: Array<[string, string | null]>;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  secret?: string;
  accessKeyId?: string;
  region?: string;
  date?: Date;
  unsignable?: string[];
}

/** A request signed in the Authorization header by @smithy/signature-v4. */
async function signed(init: SignInit = {}): Promise<{ request: Request; rawUrl: string }> {
  const query: Record<string, string> = {};
  for (const [n, v] of init.query ?? []) query[n] = v ?? '';
  const path = wirePath('bucket', init.key ?? 'object.txt');
  const q = wireQuery(init.query ?? []);
  const rawUrl = path + (q ? '?' + q : '');
  const method = init.method ?? (init.body !== undefined ? 'PUT' : 'GET');
  const signer = smithySigner(init.secret ?? SECRET, init.accessKeyId ?? ACCESS_KEY, init.region ?? REGION);
  const out = await signer.sign(
    { method, protocol: 'http:', hostname: HOST, path, query, headers: { host: HOST, ...init.headers }, body: init.body },
    { signingDate: init.date ?? NOW, unsignableHeaders: init.unsignable ? new Set(init.unsignable) : undefined },
  );
  const body = init.body === undefined ? undefined : typeof init.body === 'string' ? new TextEncoder().encode(init.body) : init.body;
  const request = new Request('http://' + HOST + rawUrl, {
    method,
    headers: out.headers,
    body: body ? streamOf(body, [5]) : undefined,
    duplex: 'half',
  } as RequestInit);
  return { request, rawUrl };
}

function options(rawUrl: string, over: Partial<VerifyOptions> = {}): VerifyOptions {
  return { rawUrl, credentials, now: NOW, createHasher: testCreateHasher, ...over };
}

/** The S3 error code of the whole exchange (gate, then body to its end), or 'ok'. */
async function outcome(request: Request, opts: VerifyOptions): Promise<string> {
  try {
    const v = await verifyAt(request, opts);
    if (v.body) await readAll(v.body);
    return 'ok';
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}

/** A copy of a request with headers changed (null removes one). */
function withHeaders(request: Request, changes: Record<string, string | null>, body?: Uint8Array): Request {
  const headers = new Headers(request.headers);
  for (const [n, v] of Object.entries(changes)) {
    if (v === null) headers.delete(n);
    else headers.set(n, v);
  }
  return new Request(request.url, { method: request.method, headers, body: body ? streamOf(body) : undefined, duplex: 'half' } as RequestInit);
}

describe('SigV4 header auth', () => {
  it('accepts a signed PUT, returns the key id, the body, its length and no checksum', async () => {
    const { request, rawUrl } = await signed({ body: 'hello', headers: { 'content-length': '5' } });
    const v = await verifyAt(request, options(rawUrl));
    expect(v).toMatchObject({ accessKeyId: ACCESS_KEY, authType: 'sigv4-header', decodedContentLength: 5, checksum: null, contentMd5: null });
    expect(new TextDecoder().decode((await readAll(v.body!)).bytes)).toBe('hello');
  });

  it('knows several access keys, each with its own secret', async () => {
    const second = await signed({ accessKeyId: 'AKIDSECONDKEY', secret: 'second secret' });
    expect((await verifyAt(second.request, options(second.rawUrl))).accessKeyId).toBe('AKIDSECONDKEY');
    const crossed = await signed({ accessKeyId: 'AKIDSECONDKEY', secret: SECRET });
    expect(await outcome(crossed.request, options(crossed.rawUrl))).toBe('SignatureDoesNotMatch');
  });

  it('a payload that does not match x-amz-content-sha256 fails at the end of the body', async () => {
    const { request, rawUrl } = await signed({ body: 'hello' });
    const v = await verifyAt(withHeaders(request, {}, new TextEncoder().encode('hellO')), options(rawUrl));
    await expect(readAll(v.body!)).rejects.toMatchObject({ code: 'XAmzContentSHA256Mismatch', status: 400 });
    // A request without a body whose declared digest is not the empty one fails at once.
    const get = await signed({ headers: { 'x-amz-content-sha256': sha256hex('x') } });
    await expect(verifyAt(get.request, options(get.rawUrl))).rejects.toMatchObject({ code: 'XAmzContentSHA256Mismatch' });
  });

  it('takes the time from the Date header when there is no x-amz-date', async () => {
    const date = 'Sun, 01 Mar 2026 10:15:00 GMT';
    const canonical = `GET\n/bucket/k\n\ndate:${date}\nhost:${HOST}\nx-amz-content-sha256:${EMPTY}\n\ndate;host;x-amz-content-sha256\n${EMPTY}`;
    const toSign = `AWS4-HMAC-SHA256\n20260301T101500Z\n20260301/${REGION}/s3/aws4_request\n${sha256hex(canonical)}`;
    const sig = createHmac('sha256', nodeSigningKey(SECRET, '20260301', REGION))
      .update(toSign)
      .digest('hex');
    const headers = {
      host: HOST,
      date,
      'x-amz-content-sha256': EMPTY,
      authorization: `AWS4-HMAC-SHA256 Credential=${ACCESS_KEY}/20260301/${REGION}/s3/aws4_request, SignedHeaders=date;host;x-amz-content-sha256, Signature=${sig}`,
    };
    const request = () => new Request(`http://${HOST}/bucket/k`, { headers });
    expect(await outcome(request(), options('/bucket/k'))).toBe('ok');
    expect(await outcome(request(), options('/bucket/k', { now: new Date(NOW.getTime() + 20 * 60e3) }))).toBe('RequestTimeTooSkewed');
    expect(await outcome(new Request(`http://${HOST}/bucket/k`, { headers: { ...headers, date: 'yesterday' } }), options('/bucket/k'))).toBe('AccessDenied');
  });

  it('a signed Expect the platform consumed is taken as 100-continue (aws-sdk-go v1 retries sign it)', async () => {
    // rclone's aws-sdk-go v1 signs `expect:100-Continue` when it re-signs a retried UploadPart;
    // the edge (and the local front) answer Expect and drop it before the Worker sees the request.
    const signedWith = (expectValue: string) => {
      const canonical = `PUT\n/bucket/k\npartNumber=2&uploadId=u\nexpect:${expectValue}\nhost:${HOST}\nx-amz-content-sha256:${EMPTY}\nx-amz-date:20260301T101500Z\n\nexpect;host;x-amz-content-sha256;x-amz-date\n${EMPTY}`;
      const toSign = `AWS4-HMAC-SHA256\n20260301T101500Z\n20260301/${REGION}/s3/aws4_request\n${sha256hex(canonical)}`;
      const sig = createHmac('sha256', nodeSigningKey(SECRET, '20260301', REGION))
        .update(toSign)
        .digest('hex');
      return {
        host: HOST,
        'x-amz-date': '20260301T101500Z',
        'x-amz-content-sha256': EMPTY,
        authorization: `AWS4-HMAC-SHA256 Credential=${ACCESS_KEY}/20260301/${REGION}/s3/aws4_request, SignedHeaders=expect;host;x-amz-content-sha256;x-amz-date, Signature=${sig}`,
      };
    };
    const rawUrl = '/bucket/k?partNumber=2&uploadId=u';
    const put = (headers: Record<string, string>) => new Request(`http://${HOST}${rawUrl}`, { method: 'PUT', headers });
    expect(await outcome(put(signedWith('100-Continue')), options(rawUrl))).toBe('ok');
    expect(await outcome(put(signedWith('100-continue')), options(rawUrl))).toBe('ok');
    // Present, it is compared as sent; any other signed value is not made up.
    expect(await outcome(put({ ...signedWith('100-continue'), expect: '100-continue' }), options(rawUrl))).toBe('ok');
    expect(await outcome(put({ ...signedWith('100-continue'), expect: 'other' }), options(rawUrl))).toBe('SignatureDoesNotMatch');
    expect(await outcome(put(signedWith('something-else')), options(rawUrl))).toBe('SignatureDoesNotMatch');
  });

  it('a signed header that did not arrive is named in the mismatch, not the dot-segment hint (s3cmd modify signs Keep-Alive)', async () => {
    // s3cmd modify copies the HEAD response's headers into the CopyObject it signs; a Keep-Alive
    // among them is hop-by-hop, removed by any proxy on the way.
    // (The SDKs refuse to sign it, so the signature is made by hand, as s3cmd makes it.)
    const canonical = `PUT\n/bucket/k\n\nhost:${HOST}\nkeep-alive:timeout=65\nx-amz-content-sha256:${EMPTY}\nx-amz-copy-source:/bucket/k\nx-amz-date:20260301T101500Z\nx-amz-metadata-directive:REPLACE\n\nhost;keep-alive;x-amz-content-sha256;x-amz-copy-source;x-amz-date;x-amz-metadata-directive\n${EMPTY}`;
    const toSign = `AWS4-HMAC-SHA256\n20260301T101500Z\n20260301/${REGION}/s3/aws4_request\n${sha256hex(canonical)}`;
    const sig = createHmac('sha256', nodeSigningKey(SECRET, '20260301', REGION))
      .update(toSign)
      .digest('hex');
    const headers = {
      host: HOST,
      'x-amz-date': '20260301T101500Z',
      'x-amz-content-sha256': EMPTY,
      'x-amz-copy-source': '/bucket/k',
      'x-amz-metadata-directive': 'REPLACE',
      authorization: `AWS4-HMAC-SHA256 Credential=${ACCESS_KEY}/20260301/${REGION}/s3/aws4_request, SignedHeaders=host;keep-alive;x-amz-content-sha256;x-amz-copy-source;x-amz-date;x-amz-metadata-directive, Signature=${sig}`,
    };
    const rawUrl = '/bucket/k';
    const copy = (extra: Record<string, string>) => new Request(`http://${HOST}${rawUrl}`, { method: 'PUT', headers: { ...headers, ...extra } });
    expect(await outcome(copy({ 'keep-alive': 'timeout=65' }), options(rawUrl))).toBe('ok');
    const error = await verifyAt(copy({}), options(rawUrl)).then(
      () => undefined,
      (err: Error & { code?: string }) => err,
    );
    expect(error?.code).toBe('SignatureDoesNotMatch');
    expect(error?.message).toContain('The request signs a header that did not reach the gateway: keep-alive;');
    expect(error?.message).not.toContain("'.' or '..'");
    // Every signed header there and still no match: the one other invisible cause is named.
    const wrong = await signed({ secret: 'wrong' });
    const other = await verifyAt(wrong.request, options(wrong.rawUrl)).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(other?.message).toContain("If the key has '.' or '..' path segments");
    expect(other?.message).not.toContain('did not reach the gateway');
  });

  it('clock skew: 15 minutes by default, configurable, with AWS fields in the error', async () => {
    const { request, rawUrl } = await signed();
    const later = new Date(NOW.getTime() + 16 * 60e3);
    await expect(verifyAt(request, options(rawUrl, { now: later }))).rejects.toMatchObject({
      code: 'RequestTimeTooSkewed',
      status: 403,
      fields: { RequestTime: '20260301T101500Z', ServerTime: later.toISOString(), MaxAllowedSkewMilliseconds: '900000' },
    });
    expect(await outcome(request, options(rawUrl, { now: later, maxSkewMs: 20 * 60e3 }))).toBe('ok');
  });

  it('region: any when unset, exactly the configured one otherwise', async () => {
    const { request, rawUrl } = await signed({ region: 'auto' });
    expect(await outcome(request, options(rawUrl))).toBe('ok');
    await expect(verifyAt(request, options(rawUrl, { region: 'us-east-1' }))).rejects.toMatchObject({
      code: 'AuthorizationHeaderMalformed',
      fields: { Region: 'us-east-1' },
    });
    expect(await outcome(request, options(rawUrl, { region: 'auto' }))).toBe('ok');
  });

  it('malformed Authorization headers -> AuthorizationHeaderMalformed', async () => {
    const { request, rawUrl } = await signed();
    const auth = request.headers.get('authorization')!;
    const variants = [
      auth.replace(/SignedHeaders=[^,]+, /, ''),
      auth.replace(/Signature=\w+/, 'Signature=abc'),
      auth.replace('/aws4_request', ''),
      auth.replace('/s3/', '/ec2/'),
      auth.replace(/Credential=[^,]+/, 'Credential='),
      auth.replace('/20260301/', '/20260302/'), // scope date is not the request date
      auth.replace(/Credential=/, 'Credentials='),
    ];
    for (const value of variants) {
      expect(await outcome(withHeaders(request, { authorization: value }), options(rawUrl)), value).toBe('AuthorizationHeaderMalformed');
    }
    // Components in another order, without spaces after commas: still parsed.
    const [, cred, signedHeaders, sig] = /Credential=([^,]+), SignedHeaders=([^,]+), Signature=(\w+)/.exec(auth)!;
    const reordered = `AWS4-HMAC-SHA256 Signature=${sig},Credential=${cred},SignedHeaders=${signedHeaders}`;
    expect(await outcome(withHeaders(request, { authorization: reordered }), options(rawUrl))).toBe('ok');
  });

  it('unknown access key -> InvalidAccessKeyId with the key in the error', async () => {
    const { request, rawUrl } = await signed({ accessKeyId: 'AKIDNOBODY' });
    await expect(verifyAt(request, options(rawUrl))).rejects.toMatchObject({ code: 'InvalidAccessKeyId', fields: { AWSAccessKeyId: 'AKIDNOBODY' } });
  });

  it('a mismatch reports the canonical request and string to sign, as AWS does', async () => {
    const { request, rawUrl } = await signed({ secret: 'wrong' });
    await expect(verifyAt(request, options(rawUrl))).rejects.toMatchObject({
      code: 'SignatureDoesNotMatch',
      fields: {
        AWSAccessKeyId: ACCESS_KEY,
        CanonicalRequest: expect.stringContaining('GET\n/bucket/object.txt\n'),
        StringToSign: expect.stringContaining('AWS4-HMAC-SHA256\n20260301T101500Z\n'),
      },
    });
  });

  it('host must be signed; x-amz-* headers that change the request must be signed', async () => {
    const noHost = await signed({ unsignable: ['host'] });
    expect(noHost.request.headers.get('authorization')).not.toContain('host');
    expect(await outcome(noHost.request, options(noHost.rawUrl))).toBe('AuthorizationHeaderMalformed');

    const { request, rawUrl } = await signed({ body: 'data' });
    await expect(verifyAt(withHeaders(request, { 'x-amz-acl': 'public-read' }, new TextEncoder().encode('data')), options(rawUrl))).rejects.toMatchObject({
      code: 'AccessDenied',
      fields: { HeadersNotSigned: 'x-amz-acl' },
    });
    // An integrity-only header may be added unsigned: it is verified, not trusted.
    const crc = checksumOf('CRC32', 'data');
    expect(await outcome(withHeaders(request, { 'x-amz-checksum-crc32': crc }, new TextEncoder().encode('data')), options(rawUrl))).toBe('ok');
    expect(await outcome(withHeaders(request, { 'x-amz-checksum-crc32': 'AAAAAA==' }, new TextEncoder().encode('data')), options(rawUrl))).toBe('BadDigest');
  });

  it('x-amz-content-sha256: required with a body, optional without; values are checked', async () => {
    // A generic signer (no S3 header) signs a body-less request over the empty digest.
    const generic = new SignatureV4({
      credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET },
      region: REGION,
      service: 's3',
      sha256: NodeSha256,
      uriEscapePath: false,
      applyChecksum: false,
    });
    const bare = await generic.sign(
      { method: 'GET', protocol: 'http:', hostname: HOST, path: '/bucket/k', query: {}, headers: { host: HOST } },
      { signingDate: NOW },
    );
    expect(bare.headers['x-amz-content-sha256']).toBeUndefined();
    expect(await outcome(new Request(`http://${HOST}/bucket/k`, { headers: bare.headers }), options('/bucket/k'))).toBe('ok');
    const { request, rawUrl } = await signed({ body: 'data' });
    expect(await outcome(withHeaders(request, { 'x-amz-content-sha256': null }, new TextEncoder().encode('data')), options(rawUrl))).toBe('InvalidRequest');
    expect(await outcome(withHeaders(request, { 'x-amz-content-sha256': 'NOT-A-HASH' }), options(rawUrl))).toBe('InvalidArgument');
    expect(await outcome(withHeaders(request, { 'x-amz-content-sha256': 'STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD' }), options(rawUrl))).toBe('NotImplemented');
  });
});

describe('which scheme', () => {
  it('refuses two schemes at once, SigV4a and unknown schemes; AWS <key>:<sig> is SigV2 header auth', async () => {
    const { request, rawUrl } = await signed();
    expect(await outcome(request, options(rawUrl + '?X-Amz-Signature=' + '0'.repeat(64)))).toBe('InvalidArgument');
    expect(await outcome(request, options(rawUrl + '?AWSAccessKeyId=x&Signature=y&Expires=1'))).toBe('InvalidArgument');
    expect(await outcome(withHeaders(request, { authorization: 'AWS AKID:c2lnbmF0dXJl', 'x-amz-date': null, date: NOW.toUTCString() }), options(rawUrl))).toBe(
      'InvalidAccessKeyId',
    );
    expect(await outcome(withHeaders(request, { authorization: 'AWS4-ECDSA-P256-SHA256 Credential=x' }), options(rawUrl))).toBe('NotImplemented');
    expect(await outcome(withHeaders(request, { authorization: 'Bearer token' }), options(rawUrl))).toBe('InvalidArgument');
  });

  it('anonymous: AccessDenied unless allowed; when allowed, declared digests still hold', async () => {
    const anon = new Request(`http://${HOST}/bucket/k`);
    await expect(verifyAt(anon, options('/bucket/k'))).rejects.toMatchObject({ code: 'AccessDenied', status: 403 });
    const v = await verifyAt(anon, options('/bucket/k', { allowAnonymous: true }));
    expect(v).toMatchObject({ accessKeyId: null, authType: 'anonymous', body: null });
    const put = () =>
      new Request(`http://${HOST}/bucket/k`, {
        method: 'PUT',
        headers: { 'x-amz-content-sha256': sha256hex('abc') },
        body: streamOf(new TextEncoder().encode('abd')),
        duplex: 'half',
      } as RequestInit);
    expect(await outcome(put(), options('/bucket/k', { allowAnonymous: true }))).toBe('XAmzContentSHA256Mismatch');
  });
});

describe('payload and checksums', () => {
  it('a checksum header is verified over the body (every algorithm)', async () => {
    for (const alg of ['CRC32', 'CRC32C', 'CRC64NVME', 'SHA1', 'SHA256'] as const) {
      const name = 'x-amz-checksum-' + alg.toLowerCase();
      const good = await signed({ body: 'checksummed', headers: { [name]: checksumOf(alg, 'checksummed'), 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } });
      const v = await verifyAt(good.request, options(good.rawUrl));
      expect(v.checksum).toMatchObject({ algorithm: alg, location: 'header', expectedBase64: checksumOf(alg, 'checksummed') });
      await readAll(v.body!);
      const bad = await signed({ body: 'checksummed', headers: { [name]: checksumOf(alg, 'other'), 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } });
      expect(await outcome(bad.request, options(bad.rawUrl)), alg).toBe('BadDigest');
    }
  });

  it('checksum.declared settles at the end of the body: the value, or null if the body failed', async () => {
    const crc = checksumOf('CRC32', 'payload');
    const good = await signed({ body: 'payload', headers: { 'x-amz-checksum-crc32': crc } });
    const v = await verifyAt(good.request, options(good.rawUrl));
    expect(v.checksum).toMatchObject({ algorithm: 'CRC32', location: 'header', expectedBase64: crc, verified: true });
    await readAll(v.body!);
    expect(await v.checksum!.declared).toBe(crc);

    const bad = await signed({
      body: 'payload',
      headers: { 'x-amz-checksum-crc32': checksumOf('CRC32', 'other'), 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
    });
    const w = await verifyAt(bad.request, options(bad.rawUrl));
    await expect(readAll(w.body!)).rejects.toMatchObject({ code: 'BadDigest' });
    expect(await w.checksum!.declared).toBeNull();
  });

  it('verifyChecksum: false leaves the comparison to the consumer (no second hash pass)', async () => {
    const wrong = checksumOf('CRC32', 'other');
    const bad = await signed({ body: 'payload', headers: { 'x-amz-checksum-crc32': wrong, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } });
    let hashed = 0;
    const counting = (alg: Parameters<typeof testCreateHasher>[0]) => {
      hashed++;
      return testCreateHasher(alg);
    };
    const v = await verifyAt(bad.request, options(bad.rawUrl, { verifyChecksum: false, createHasher: counting }));
    expect(v.checksum).toMatchObject({ verified: false, expectedBase64: wrong });
    await readAll(v.body!);
    expect(await v.checksum!.declared).toBe(wrong);
    expect(hashed).toBe(0);
    // Still format-checked, and the signed SHA-256 is still verified.
    const malformed = await signed({ body: 'payload', headers: { 'x-amz-checksum-crc32': 'AAAA' } });
    expect(await outcome(malformed.request, options(malformed.rawUrl, { verifyChecksum: false }))).toBe('BadDigest');
    const tampered = await signed({ body: 'payload', headers: { 'x-amz-checksum-crc32': wrong } });
    expect(await outcome(withHeaders(tampered.request, {}, new TextEncoder().encode('paylOad')), options(tampered.rawUrl, { verifyChecksum: false }))).toBe(
      'XAmzContentSHA256Mismatch',
    );
  });

  it('checksum headers: malformed, two of them, or with a trailer too -> refused before the body', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ 'x-amz-checksum-crc32': 'AAAA' }, 'BadDigest'], // malformed: cannot be the digest (issue 12)
      [{ 'x-amz-checksum-sha256': checksumOf('CRC32', 'x') }, 'BadDigest'],
      [{ 'x-amz-checksum-crc32': checksumOf('CRC32', 'x'), 'x-amz-checksum-crc32c': checksumOf('CRC32C', 'x') }, 'InvalidRequest'],
      [{ 'x-amz-trailer': 'x-amz-checksum-crc32' }, 'MalformedTrailerError'],
      [{ 'content-md5': 'not-md5' }, 'InvalidDigest'],
    ];
    for (const [headers, code] of cases) {
      const { request, rawUrl } = await signed({ body: 'x', headers });
      await expect(verifyAt(request, options(rawUrl)), JSON.stringify(headers)).rejects.toMatchObject({ code });
    }
    const md5 = await signed({ body: 'x', headers: { 'content-md5': 'nAHUNOqZ4j6dkbQ5W2aO4g==' } });
    expect((await verifyAt(md5.request, options(md5.rawUrl))).contentMd5).toBe('nAHUNOqZ4j6dkbQ5W2aO4g==');
  });

  it('aws-chunked with a signed trailer, signed by the SDK signer, through the gate', async () => {
    const data = new TextEncoder().encode('streamed '.repeat(5000));
    const headers = {
      'content-encoding': 'aws-chunked,gzip',
      'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER',
      'x-amz-decoded-content-length': String(data.length),
      'x-amz-trailer': 'x-amz-checksum-crc32c',
    };
    const { request } = await signed({ method: 'PUT', headers });
    const seedSignature = /Signature=(\w+)/.exec(request.headers.get('authorization')!)![1];
    const { body } = encodeAwsChunked(data, {
      sizes: [8192],
      signer: { secret: SECRET, datetime: '20260301T101500Z', region: REGION, seedSignature },
      trailers: [['x-amz-checksum-crc32c', checksumOf('CRC32C', data)]],
    });
    const rawUrl = wirePath('bucket', 'object.txt');
    const v = await verifyAt(withHeaders(request, {}, body), options(rawUrl));
    expect(v).toMatchObject({ decodedContentLength: data.length, contentEncoding: 'gzip', checksum: { algorithm: 'CRC32C', location: 'trailer' } });
    expect((await readAll(v.body!)).bytes).toEqual(data);
    expect(v.checksum!.expectedBase64).toBe(checksumOf('CRC32C', data));
    // The same body under another seed (another request) fails at the first chunk.
    const other = await signed({ method: 'PUT', headers, key: 'other.txt' });
    expect(await outcome(withHeaders(other.request, {}, body), options(wirePath('bucket', 'other.txt')))).toBe('SignatureDoesNotMatch');
  });

  it('aws-chunked needs x-amz-decoded-content-length, a body, and (unsigned) a declared trailer', async () => {
    const base = { 'content-encoding': 'aws-chunked', 'x-amz-content-sha256': 'STREAMING-UNSIGNED-PAYLOAD-TRAILER' };
    const noLength = await signed({ method: 'PUT', headers: { ...base, 'x-amz-trailer': 'x-amz-checksum-crc32' } });
    expect(await outcome(noLength.request, options(noLength.rawUrl))).toBe('MissingContentLength');
    const noTrailer = await signed({ method: 'PUT', headers: { ...base, 'x-amz-decoded-content-length': '0' } });
    expect(await outcome(noTrailer.request, options(noTrailer.rawUrl))).toBe('InvalidRequest');
    const noBody = await signed({ method: 'PUT', headers: { ...base, 'x-amz-decoded-content-length': '0', 'x-amz-trailer': 'x-amz-checksum-crc32' } });
    expect(await outcome(noBody.request, options(noBody.rawUrl))).toBe('IncompleteBody');
    const badTrailer = await signed({ method: 'PUT', headers: { ...base, 'x-amz-decoded-content-length': '0', 'x-amz-trailer': 'x-amz-meta-foo' } });
    expect(await outcome(badTrailer.request, options(badTrailer.rawUrl))).toBe('InvalidRequest');
  });

  it('a presigned PUT may carry an aws-chunked unsigned-trailer body', async () => {
    const data = new TextEncoder().encode('via presigned url');
    const presigned = await smithySigner().presign(
      {
        method: 'PUT',
        protocol: 'http:',
        hostname: HOST,
        path: '/bucket/p.txt',
        query: {},
        headers: { host: HOST, 'X-Amz-Content-Sha256': 'UNSIGNED-PAYLOAD' },
      },
      { signingDate: NOW, expiresIn: 60 },
    );
    const rawUrl = '/bucket/p.txt?' + wireQuery(Object.entries(presigned.query as Record<string, string>));
    const { body } = encodeAwsChunked(data, { sizes: [5], trailers: [['x-amz-checksum-crc32', checksumOf('CRC32', data)]] });
    const request = new Request('http://' + HOST + rawUrl, {
      method: 'PUT',
      headers: {
        'content-encoding': 'aws-chunked',
        'x-amz-content-sha256': 'STREAMING-UNSIGNED-PAYLOAD-TRAILER',
        'x-amz-decoded-content-length': String(data.length),
        'x-amz-trailer': 'x-amz-checksum-crc32',
      },
      body: streamOf(body),
      duplex: 'half',
    } as RequestInit);
    const v = await verifyAt(request, options(rawUrl));
    expect(v.authType).toBe('sigv4-query');
    expect((await readAll(v.body!)).bytes).toEqual(data);
  });
});

describe('SigV2 presigned URLs', () => {
  const DOC_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
  const docCreds = new Map([['AKIAIOSFODNN7EXAMPLE', DOC_SECRET]]);

  it("AWS's query string authentication example", async () => {
    expect(await signatureV2(DOC_SECRET, 'GET\n\n\n1175139620\n/johnsmith/photos/puppy.jpg')).toBe('NpgCjnDzrM+WFzoENXmpNDUsSn8=');
    const query = 'AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1175139620&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D';
    const run = (rawUrl: string, over: Partial<VerifyOptions> = {}) =>
      outcome(new Request('http://johnsmith.s3.amazonaws.com' + rawUrl), {
        rawUrl,
        credentials: docCreds,
        now: new Date('2007-03-29T00:00:00Z'),
        createHasher: testCreateHasher,
        ...over,
      });
    expect(await run('/johnsmith/photos/puppy.jpg?' + query)).toBe('ok');
    // Virtual-hosted style: the bucket comes from the host.
    expect(await run('/photos/puppy.jpg?' + query, { baseDomains: ['s3.amazonaws.com'] })).toBe('ok');
    expect(await run('/photos/puppy.jpg?' + query)).toBe('SignatureDoesNotMatch');
    // A '+' left unencoded in the signature is still a plus.
    expect(await run('/johnsmith/photos/puppy.jpg?' + query.replace('%2B', '+'))).toBe('ok');
    expect(await run('/johnsmith/photos/puppy.jpg?' + query, { now: new Date('2007-03-30T00:00:00Z') })).toBe('AccessDenied');
    expect(await run('/johnsmith/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1175139620')).toBe('AccessDenied');
  });

  it('canonicalized resource: sub-resources sorted, values decoded, flags kept as sent, others dropped', () => {
    expect(canonicalizedResource('/b/k', parseQuery('uploadId=a%2Bb&partNumber=2&x-id=UploadPart'))).toBe('/b/k?partNumber=2&uploadId=a+b');
    expect(canonicalizedResource('/b/k', parseQuery('uploads'))).toBe('/b/k?uploads');
    expect(canonicalizedResource('/b/k', parseQuery('uploads='))).toBe('/b/k?uploads=');
    expect(canonicalizedResource('/b/', parseQuery('delete&prefix=x'))).toBe('/b/?delete');
    expect(canonicalizedResource('/b/k', parseQuery('response-content-type=text%2Fplain&versionId=3'))).toBe(
      '/b/k?response-content-type=text/plain&versionId=3',
    );
    expect(canonicalizedResource('/k', [], 'bucket')).toBe('/bucket/k');
  });

  it('x-amz-* headers, Content-Type and Content-MD5 are signed', async () => {
    const expires = String(Math.floor(NOW.getTime() / 1000) + 60);
    const toSign = `PUT\nnAHUNOqZ4j6dkbQ5W2aO4g==\ntext/plain\n${expires}\nx-amz-meta-a:1\nx-amz-meta-b:two\n/bucket/k`;
    const sig = createHmac('sha1', SECRET).update(toSign).digest('base64');
    const rawUrl = `/bucket/k?AWSAccessKeyId=${ACCESS_KEY}&Expires=${expires}&Signature=${encodeURIComponent(sig)}`;
    const headers = { 'content-md5': 'nAHUNOqZ4j6dkbQ5W2aO4g==', 'content-type': 'text/plain', 'x-amz-meta-b': 'two', 'x-amz-meta-a': ' 1 ' };
    const request = (h: Record<string, string>) =>
      new Request('http://' + HOST + rawUrl, { method: 'PUT', headers: h, body: streamOf(new TextEncoder().encode('x')), duplex: 'half' } as RequestInit);
    expect(await outcome(request(headers), options(rawUrl))).toBe('ok');
    expect(await outcome(request({ ...headers, 'content-type': 'text/html' }), options(rawUrl))).toBe('SignatureDoesNotMatch');
    expect(await outcome(request({ ...headers, 'x-amz-meta-c': '3' }), options(rawUrl))).toBe('SignatureDoesNotMatch');
  });
});

describe('SigV2 header auth (Authorization: AWS key:signature)', () => {
  const DOC_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
  const docCreds = new Map([['AKIAIOSFODNN7EXAMPLE', DOC_SECRET]]);
  const DOC_DATE = 'Tue, 27 Mar 2007 19:36:42 +0000';
  const doc = (rawUrl: string, headers: Record<string, string>, over: Partial<VerifyOptions> = {}) =>
    outcome(new Request('http://awsexamplebucket1.us-west-1.s3.amazonaws.com' + rawUrl, { headers }), {
      rawUrl,
      credentials: docCreds,
      now: new Date('2007-03-27T19:40:00Z'),
      createHasher: testCreateHasher,
      ...over,
    });

  it("AWS's Object GET example, path- and virtual-hosted-style", async () => {
    const authorization = 'AWS AKIAIOSFODNN7EXAMPLE:qgk2+6Sv9/oM7G3qLEjTH1a1l1g=';
    expect(await doc('/photos/puppy.jpg', { date: DOC_DATE, authorization }, { baseDomains: ['us-west-1.s3.amazonaws.com'] })).toBe('ok');
    expect(await doc('/awsexamplebucket1/photos/puppy.jpg', { date: DOC_DATE, authorization })).toBe('ok');
    expect(await doc('/awsexamplebucket1/photos/kitten.jpg', { date: DOC_DATE, authorization })).toBe('SignatureDoesNotMatch');
    expect(await doc('/awsexamplebucket1/photos/puppy.jpg', { date: 'Tue, 27 Mar 2007 19:36:43 +0000', authorization })).toBe('SignatureDoesNotMatch');
  });

  it('the request time: Date, or x-amz-date (Date slot empty); 15 minutes of skew; before 1970 or unparseable is AccessDenied', async () => {
    const sign = (toSign: string) => `AWS ${ACCESS_KEY}:${createHmac('sha1', SECRET).update(toSign).digest('base64')}`;
    const rawUrl = '/bucket/k';
    const get = (headers: Record<string, string>, now = NOW) => outcome(new Request('http://' + HOST + rawUrl, { headers }), options(rawUrl, { now }));
    const date = NOW.toUTCString();
    expect(await get({ date, authorization: sign(`GET\n\n\n${date}\n/bucket/k`) })).toBe('ok');
    expect(await get({ 'x-amz-date': date, authorization: sign(`GET\n\n\n\nx-amz-date:${date}\n/bucket/k`) })).toBe('ok');
    expect(await get({ date, authorization: sign(`GET\n\n\n${date}\n/bucket/k`) }, new Date(NOW.getTime() + 16 * 60e3))).toBe('RequestTimeTooSkewed');
    expect(await get({ date, authorization: sign(`GET\n\n\n${date}\n/bucket/k`) }, new Date(NOW.getTime() - 16 * 60e3))).toBe('RequestTimeTooSkewed');
    for (const bad of ['Bad Date', '', 'Tue, 07 Jul 1950 21:53:04 GMT']) {
      expect(await get({ 'x-amz-date': bad, authorization: sign(`GET\n\n\n\nx-amz-date:${bad}\n/bucket/k`) }), bad).toBe('AccessDenied');
    }
    expect(await get({ authorization: sign('GET\n\n\n\n/bucket/k') })).toBe('AccessDenied');
    expect(await get({ date, authorization: 'AWS HAHAHA' })).toBe('InvalidArgument');
    expect(await get({ date, authorization: `AWS AKIDNOBODY:${sign('x').split(':')[1]}` })).toBe('InvalidAccessKeyId');
  });

  it('a request to a bucket alone may be signed over /bucket or /bucket/ (botocore signs the latter); a key never gains a slash', async () => {
    const date = NOW.toUTCString();
    const sign = (resource: string) => `AWS ${ACCESS_KEY}:${createHmac('sha1', SECRET).update(`PUT\n\n\n${date}\n${resource}`).digest('base64')}`;
    const put = (rawUrl: string, resource: string) =>
      outcome(new Request('http://' + HOST + rawUrl, { method: 'PUT', headers: { date, authorization: sign(resource) } }), options(rawUrl));
    expect(await put('/bucket', '/bucket/')).toBe('ok');
    expect(await put('/bucket', '/bucket')).toBe('ok');
    expect(await put('/bucket/', '/bucket')).toBe('ok');
    expect(await put('/bucket/k', '/bucket/k/')).toBe('SignatureDoesNotMatch');
    expect(await put('/bucket/k/', '/bucket/k')).toBe('SignatureDoesNotMatch');
  });

  it('Content-MD5, Content-Type, x-amz-* headers and sub-resources are signed; other query parameters must be inert', async () => {
    const date = NOW.toUTCString();
    const toSign = `PUT\nnAHUNOqZ4j6dkbQ5W2aO4g==\ntext/plain\n${date}\nx-amz-meta-a:1\n/bucket/k?tagging`;
    const authorization = `AWS ${ACCESS_KEY}:${createHmac('sha1', SECRET).update(toSign).digest('base64')}`;
    const headers = { date, authorization, 'content-md5': 'nAHUNOqZ4j6dkbQ5W2aO4g==', 'content-type': 'text/plain', 'x-amz-meta-a': '1' };
    const put = (rawUrl: string, h: Record<string, string>) =>
      outcome(
        new Request('http://' + HOST + rawUrl, { method: 'PUT', headers: h, body: streamOf(new TextEncoder().encode('x')), duplex: 'half' } as RequestInit),
        options(rawUrl),
      );
    expect(await put('/bucket/k?tagging', headers)).toBe('ok');
    expect(await put('/bucket/k?acl', headers)).toBe('SignatureDoesNotMatch');
    expect(await put('/bucket/k?tagging&x-id=PutObjectTagging', headers)).toBe('ok');
    expect(await put('/bucket/k?tagging&frobnicate=1', headers)).toBe('AccessDenied');
    expect(await put('/bucket/k?tagging', { ...headers, 'content-type': 'text/html' })).toBe('SignatureDoesNotMatch');
    expect(await put('/bucket/k?tagging', { ...headers, 'x-amz-meta-b': '2' })).toBe('SignatureDoesNotMatch');
  });
});

describe('SigV4 presigned URLs', () => {
  async function presign(expiresIn: number, over: { secret?: string } = {}) {
    const presigned = await smithySigner(over.secret).presign(
      // As @aws-sdk/s3-request-presigner does: the payload of a presigned URL is UNSIGNED-PAYLOAD.
      {
        method: 'GET',
        protocol: 'http:',
        hostname: HOST,
        path: '/bucket/k',
        query: { 'x-id': 'GetObject' },
        headers: { host: HOST, 'X-Amz-Content-Sha256': 'UNSIGNED-PAYLOAD' },
      },
      { signingDate: NOW, expiresIn },
    );
    return '/bucket/k?' + wireQuery(Object.entries(presigned.query as Record<string, string>));
  }

  it('valid until X-Amz-Expires, at most a week, not before its date', async () => {
    const rawUrl = await presign(604800);
    const run = (url: string, now: Date) => outcome(new Request('http://' + HOST + url), options(url, { now }));
    expect(await run(rawUrl, new Date(NOW.getTime() + 604799e3))).toBe('ok');
    expect(await run(rawUrl, new Date(NOW.getTime() + 604801e3))).toBe('AccessDenied');
    expect(await run(rawUrl, new Date(NOW.getTime() - 14 * 60e3))).toBe('ok');
    expect(await run(rawUrl, new Date(NOW.getTime() - 16 * 60e3))).toBe('AccessDenied');
    const tooLong = rawUrl.replace('X-Amz-Expires=604800', 'X-Amz-Expires=604801');
    expect(await run(tooLong, NOW)).toBe('AuthorizationQueryParametersError');
  });

  it('missing or malformed parameters -> AuthorizationQueryParametersError', async () => {
    const rawUrl = await presign(60);
    for (const [pattern, replacement] of [
      [/X-Amz-Algorithm=[^&]+/, 'X-Amz-Algorithm=AWS4-HMAC-SHA1'],
      [/&X-Amz-Date=[^&]+/, ''],
      [/X-Amz-Date=[^&]+/, 'X-Amz-Date=2026-03-01'],
      [/X-Amz-Expires=\d+/, 'X-Amz-Expires=-5'],
      [/&X-Amz-SignedHeaders=[^&]+/, ''],
      [/X-Amz-Signature=\w+/, 'X-Amz-Signature=xyz'],
      [/X-Amz-Credential=[^&]+/, 'X-Amz-Credential=AKID%2F20260301'],
      [/X-Amz-SignedHeaders=[^&]+/, 'X-Amz-SignedHeaders=x-id'],
    ] as const) {
      const url = rawUrl.replace(pattern, replacement);
      expect(url).not.toBe(rawUrl);
      expect(await outcome(new Request('http://' + HOST + url), options(url)), url).toBe('AuthorizationQueryParametersError');
    }
  });

  it('a negative X-Amz-Expires says so', async () => {
    const url = (await presign(60)).replace(/X-Amz-Expires=\d+/, 'X-Amz-Expires=-5');
    await expect(verifyAt(new Request('http://' + HOST + url), options(url))).rejects.toMatchObject({
      code: 'AuthorizationQueryParametersError',
      message: 'X-Amz-Expires must be non-negative',
    });
  });

  it('the payload line is UNSIGNED-PAYLOAD, as on AWS: a URL signed over the empty digest fails', async () => {
    const presigned = await smithySigner().presign(
      { method: 'GET', protocol: 'http:', hostname: HOST, path: '/bucket/k', query: {}, headers: { host: HOST } },
      { signingDate: NOW, expiresIn: 60 },
    );
    const rawUrl = '/bucket/k?' + wireQuery(Object.entries(presigned.query as Record<string, string>));
    expect(await outcome(new Request('http://' + HOST + rawUrl), options(rawUrl))).toBe('SignatureDoesNotMatch');
  });

  it('wrong secret, changed query, changed path -> SignatureDoesNotMatch', async () => {
    const forged = await presign(60, { secret: 'guess' });
    expect(await outcome(new Request('http://' + HOST + forged), options(forged))).toBe('SignatureDoesNotMatch');
    const rawUrl = await presign(60);
    for (const url of [rawUrl.replace('x-id=GetObject', 'x-id=PutObject'), rawUrl + '&versionId=1', rawUrl.replace('/bucket/k', '/bucket/K')]) {
      expect(await outcome(new Request('http://' + HOST + url), options(url)), url).toBe('SignatureDoesNotMatch');
    }
  });
});
