/**
 * SigV4 step by step: AWS's published examples (S3 API reference, "Signature Calculations for
 * the Authorization Header" and "... Query String Parameters"), edge cases of each step, and a
 * cross-check against two independent signers (aws4fetch, @smithy/signature-v4) on keys and
 * queries with spaces, '+', '%', unicode, '//', and value-less flags.
 */

import { getCanonicalHeaders, getCanonicalQuery } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import { toHex } from '../../worker/model/bytes.ts';
import {
  canonicalHeaders,
  canonicalHeaderValue,
  canonicalQuery,
  canonicalRequest,
  canonicalUri,
  credentialScope,
  deriveSigningKey,
  signature,
  signingKey,
  stringToSign,
} from '../../worker/auth/sigv4.ts';
import { parseQuery } from '../../worker/model/request.ts';
import { verifyAt } from './helpers/verify.ts';
import { sha256hex } from './helpers/aws-chunked-encode.ts';
import { testCreateHasher } from './helpers/checksums.ts';
import { ACCESS_KEY, aws4fetchSigner, SECRET, smithySigner, wirePath, wireQuery } from './helpers/signers.ts';
import { readAll } from './helpers/streams.ts';

const DOC_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const DOC_KEY = 'AKIAIOSFODNN7EXAMPLE';
const EMPTY = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

describe('AWS published examples', () => {
  it('signing key derivation (IAM example, 20120215/us-east-1/iam)', async () => {
    const key = await deriveSigningKey('wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', '20120215', 'us-east-1', 'iam');
    expect(toHex(key)).toBe('f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d');
  });

  it('GET object: canonical request, string to sign, signature', async () => {
    const headers = new Headers({
      host: 'examplebucket.s3.amazonaws.com',
      range: 'bytes=0-9',
      'x-amz-content-sha256': EMPTY,
      'x-amz-date': '20130524T000000Z',
    });
    const signed = ['host', 'range', 'x-amz-content-sha256', 'x-amz-date'];
    const canonical = canonicalRequest(
      'GET',
      canonicalUri('/test.txt'),
      canonicalQuery(parseQuery('')),
      canonicalHeaders(signed, (n) => headers.get(n)),
      signed.join(';'),
      EMPTY,
    );
    expect(canonical).toBe(
      'GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n' +
        `x-amz-content-sha256:${EMPTY}\nx-amz-date:20130524T000000Z\n\n` +
        `host;range;x-amz-content-sha256;x-amz-date\n${EMPTY}`,
    );
    const toSign = await stringToSign('20130524T000000Z', credentialScope('20130524', 'us-east-1', 's3'), canonical);
    expect(toSign).toBe(
      'AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972',
    );
    const key = await signingKey(DOC_SECRET, '20130524', 'us-east-1', 's3');
    expect(await signature(key, toSign)).toBe('f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41');
  });

  const docCredentials = new Map([[DOC_KEY, DOC_SECRET]]);
  const docNow = new Date('2013-05-24T00:00:00Z');
  const docScope = `Credential=${DOC_KEY}/20130524/us-east-1/s3/aws4_request`;

  async function gate(rawUrl: string, init: RequestInit) {
    return verifyAt(new Request('http://examplebucket.s3.amazonaws.com' + rawUrl, init), {
      rawUrl,
      credentials: docCredentials,
      now: docNow,
      createHasher: testCreateHasher,
    });
  }

  it('GET object passes the gate; the same with another byte range does not', async () => {
    const headers = {
      host: 'examplebucket.s3.amazonaws.com',
      range: 'bytes=0-9',
      'x-amz-content-sha256': EMPTY,
      'x-amz-date': '20130524T000000Z',
      authorization: `AWS4-HMAC-SHA256 ${docScope},SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41`,
    };
    expect((await gate('/test.txt', { headers })).accessKeyId).toBe(DOC_KEY);
    await expect(gate('/test.txt', { headers: { ...headers, range: 'bytes=0-10' } })).rejects.toMatchObject({ code: 'SignatureDoesNotMatch' });
  });

  it('PUT object: a "$" in the key, a Date header signed beside x-amz-date, a signed payload', async () => {
    const body = 'Welcome to Amazon S3.';
    const headers = {
      host: 'examplebucket.s3.amazonaws.com',
      date: 'Fri, 24 May 2013 00:00:00 GMT',
      'x-amz-date': '20130524T000000Z',
      'x-amz-storage-class': 'REDUCED_REDUNDANCY',
      'x-amz-content-sha256': '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072',
      authorization: `AWS4-HMAC-SHA256 ${docScope},SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd`,
    };
    expect(canonicalUri('/test$file.text')).toBe('/test%24file.text');
    const verified = await gate('/test$file.text', { method: 'PUT', headers, body });
    expect(new TextDecoder().decode((await readAll(verified.body!)).bytes)).toBe(body);
    // The same request with the '$' already encoded on the wire names the same key.
    await gate('/test%24file.text', { method: 'PUT', headers, body });
  });

  it('GET bucket lifecycle: a value-less sub-resource (?lifecycle)', async () => {
    expect(canonicalQuery(parseQuery('lifecycle'))).toBe('lifecycle=');
    const headers = {
      host: 'examplebucket.s3.amazonaws.com',
      'x-amz-date': '20130524T000000Z',
      'x-amz-content-sha256': EMPTY,
      authorization: `AWS4-HMAC-SHA256 ${docScope},SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543`,
    };
    await gate('/?lifecycle', { headers });
    await gate('/?lifecycle=', { headers });
    await expect(gate('/?lifecycle=x', { headers })).rejects.toMatchObject({ code: 'SignatureDoesNotMatch' });
  });

  it('GET bucket (list objects): query sorted by name (?max-keys=2&prefix=J)', async () => {
    const headers = {
      host: 'examplebucket.s3.amazonaws.com',
      'x-amz-date': '20130524T000000Z',
      'x-amz-content-sha256': EMPTY,
      authorization: `AWS4-HMAC-SHA256 ${docScope},SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7`,
    };
    await gate('/?max-keys=2&prefix=J', { headers });
    await gate('/?prefix=J&max-keys=2', { headers });
  });

  it('presigned GET (X-Amz-Expires=86400)', async () => {
    const query =
      'X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request' +
      '&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host' +
      '&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404';
    const verified = await gate('/test.txt?' + query, { headers: { host: 'examplebucket.s3.amazonaws.com' } });
    expect(verified.authType).toBe('sigv4-query');
  });
});

describe('canonical URI', () => {
  it.each([
    ['', '/'],
    ['/', '/'],
    ['/bucket/key', '/bucket/key'],
    ['/b/a%20b', '/b/a%20b'],
    ['/b/a b', '/b/a%20b'],
    ['/b/a+b', '/b/a%2Bb'],
    ['/b/a%2Bb', '/b/a%2Bb'],
    ['/b/100%25', '/b/100%25'],
    ['/b/100%', '/b/100%25'],
    ['/b/%zz', '/b/%25zz'],
    ['/b/%7e%7E~', '/b/~~~'],
    ['/b/%c3%bc', '/b/%C3%BC'],
    ['/b/ü', '/b/%C3%BC'],
    ['/b/日本', '/b/%E6%97%A5%E6%9C%AC'],
    ['/b/😀', '/b/%F0%9F%98%80'],
    ["/b/!'()*", '/b/%21%27%28%29%2A'],
    ['/b/a%2Fb', '/b/a%2Fb'],
    ['/b//a//', '/b//a//'],
    ['/b/./a/../c', '/b/./a/../c'],
    ['/b/a-._~', '/b/a-._~'],
  ])('%j -> %j', (raw, expected) => {
    expect(canonicalUri(raw)).toBe(expected);
  });
});

describe('canonical query', () => {
  it.each([
    ['', ''],
    ['uploads', 'uploads='],
    ['uploads=', 'uploads='],
    ['delete=&x-id=DeleteObjects', 'delete=&x-id=DeleteObjects'],
    ['uploadId=x&partNumber=1', 'partNumber=1&uploadId=x'],
    // Upper case sorts before lower case (byte order), as AWS sorts.
    ['x-id=GetObject&X-Amz-Date=1', 'X-Amz-Date=1&x-id=GetObject'],
    ['prefix=a+b', 'prefix=a%20b'],
    ['prefix=a%20b', 'prefix=a%20b'],
    ['prefix=a%2Bb', 'prefix=a%2Bb'],
    ['prefix=100%25', 'prefix=100%25'],
    ['prefix=%C3%BC', 'prefix=%C3%BC'],
    ['prefix=ü', 'prefix=%C3%BC'],
    ['prefix=a/b', 'prefix=a%2Fb'],
    ['prefix=~-._', 'prefix=~-._'],
    ['a=1&&b=2&', 'a=1&b=2'],
    ['k%20ey=v', 'k%20ey=v'],
    ['key=a=b', 'key=a%3Db'],
  ])('%j -> %j', (raw, expected) => {
    expect(canonicalQuery(parseQuery(raw))).toBe(expected);
  });

  it('sorts a name given twice by value (the request view refuses that before signing)', () => {
    expect(
      canonicalQuery([
        ['b', '2'],
        ['a', '1'],
        ['a', '0'],
      ]),
    ).toBe('a=0&a=1&b=2');
    expect(() => parseQuery('b=2&a=1&a=0')).toThrow(expect.objectContaining({ code: 'InvalidArgument' }));
  });

  it('drops exactly the excluded parameter', () => {
    // (The request view refuses a name given twice in any case; canonicalQuery itself is exact.)
    const params = [
      ['X-Amz-Signature', 'abc'],
      ['x-amz-signature', 'def'],
      ['a', '1'],
    ] as const;
    expect(canonicalQuery(params, 'X-Amz-Signature')).toBe('a=1&x-amz-signature=def');
  });
});

describe('canonical headers', () => {
  it('trims values and collapses runs of whitespace', () => {
    expect(canonicalHeaderValue('  a   b \t c  ')).toBe('a b c');
    const headers = new Headers({ 'x-amz-meta-a': '  one   two ', host: 'h' });
    expect(canonicalHeaders(['host', 'x-amz-meta-a', 'x-absent'], (n) => headers.get(n))).toBe('host:h\nx-amz-meta-a:one two\nx-absent:\n');
  });
});

describe('signing key cache', () => {
  it('returns the same key for the same secret/date/region/service and another otherwise', async () => {
    const a = signingKey('s', '20260101', 'us-east-1', 's3');
    expect(signingKey('s', '20260101', 'us-east-1', 's3')).toBe(a);
    expect(signingKey('s', '20260102', 'us-east-1', 's3')).not.toBe(a);
    expect(signingKey('t', '20260101', 'us-east-1', 's3')).not.toBe(a);
    const toSign = 'x';
    expect(await signature(await a, toSign)).toBe(
      await signature(
        await crypto.subtle.importKey('raw', await deriveSigningKey('s', '20260101', 'us-east-1', 's3'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']),
        toSign,
      ),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Cross-check with aws4fetch and @smithy/signature-v4.

const DATETIME = '20260301T101500Z';
const NOW = new Date('2026-03-01T10:15:00Z');
const HOST = 'gw.example.test:8787';

interface Case {
  name: string;
  key: string;
  query: Array<[string, string | null]>;
  /** aws4fetch parses the URL, which resolves `.`/`..`: skip it there. */
  dotSegments?: boolean;
}

const CASES: Case[] = [
  { name: 'plain key', key: 'photos/cat.jpg', query: [['x-id', 'GetObject']] },
  { name: 'spaces', key: 'my photos/a b  c.jpg', query: [['prefix', 'a b']] },
  {
    name: 'plus',
    key: 'a+b/c+d',
    query: [
      ['prefix', 'x+y'],
      ['delimiter', '+'],
    ],
  },
  { name: 'percent', key: '100%/50%25 off', query: [['prefix', '100%']] },
  { name: 'unicode', key: 'ünïcødé/日本語/😀.txt', query: [['prefix', 'ü/日本']] },
  { name: 'double slashes', key: 'a//b///c/', query: [] },
  { name: 'reserved characters', key: "q'uote!(x)*;,:@=&$#?[]", query: [['marker', "=&?#+ '"]] },
  { name: 'value-less flags', key: 'mpu.bin', query: [['uploads', null]] },
  {
    name: 'empty-valued flags',
    key: 'mpu.bin',
    query: [
      ['uploads', ''],
      ['x-id', 'CreateMultipartUpload'],
    ],
  },
  { name: 'delete flag on the bucket', key: '', query: [['delete', '']] },
  {
    name: 'upload part',
    key: 'big.bin',
    query: [
      ['partNumber', '3'],
      ['uploadId', 'a+b/c=='],
      ['x-id', 'UploadPart'],
    ],
  },
  { name: 'dot segments', key: 'a/./b/../c', query: [], dotSegments: true },
];

const credentials = new Map([[ACCESS_KEY, SECRET]]);
const gateOpts = (rawUrl: string) => ({ rawUrl, credentials, now: NOW, createHasher: testCreateHasher });

function target(c: Case): string {
  const q = wireQuery(c.query);
  return wirePath('bucket', c.key) + (q ? '?' + q : '');
}

describe('cross-check with aws4fetch', () => {
  it.each(CASES.filter((c) => !c.dotSegments).map((c) => [c.name, c] as const))('%s: same canonical request; the gate accepts it', async (_, c) => {
    const rawUrl = target(c);
    const body = 'payload of ' + c.name;
    const signer = aws4fetchSigner({
      method: 'PUT',
      url: 'http://' + HOST + rawUrl,
      headers: { 'content-type': 'text/plain', 'x-amz-content-sha256': sha256hex(body), 'x-amz-meta-note': '  spaced   out ' },
      body,
      datetime: DATETIME,
    });
    const signed = await signer.sign();
    // The URL aws4fetch will send is the one we built (it must not re-encode the path).
    expect(signed.url.pathname + signed.url.search).toBe(rawUrl);

    const headers = new Headers(signed.headers);
    const signedNames = signer.signedHeaders.split(';');
    const ours = canonicalRequest(
      'PUT',
      canonicalUri(rawUrl.split('?')[0]),
      canonicalQuery(parseQuery(rawUrl.split('?')[1] ?? '')),
      canonicalHeaders(signedNames, (n) => (n === 'host' ? HOST : headers.get(n))),
      signer.signedHeaders,
      sha256hex(body),
    );
    expect(ours).toBe(await signer.canonicalString());
    expect(await stringToSign(DATETIME, signer.credentialString, ours)).toBe(await signer.stringToSign());

    const request = new Request(signed.url, { method: 'PUT', headers: signed.headers, body });
    const verified = await verifyAt(request, gateOpts(rawUrl));
    expect(verified.accessKeyId).toBe(ACCESS_KEY);
    expect(new TextDecoder().decode((await readAll(verified.body!)).bytes)).toBe(body);
  });

  it.each(CASES.filter((c) => !c.dotSegments).map((c) => [c.name, c] as const))('%s: presigned (signQuery) is accepted', async (_, c) => {
    const signer = aws4fetchSigner({ method: 'GET', url: 'http://' + HOST + target(c), datetime: DATETIME, signQuery: true });
    const signed = await signer.sign();
    const rawUrl = signed.url.pathname + signed.url.search;
    const verified = await verifyAt(new Request(signed.url), gateOpts(rawUrl));
    expect(verified.authType).toBe('sigv4-query');
    // A changed parameter breaks it.
    const tampered = rawUrl.replace('X-Amz-Expires=86400', 'X-Amz-Expires=86399');
    await expect(verifyAt(new Request('http://' + HOST + tampered), gateOpts(tampered))).rejects.toMatchObject({
      code: 'SignatureDoesNotMatch',
    });
  });
});

describe('cross-check with @smithy/signature-v4', () => {
  function smithyRequest(c: Case, extraHeaders: Record<string, string> = {}) {
    const query: Record<string, string> = {};
    for (const [n, v] of c.query) query[n] = v ?? '';
    return {
      method: 'GET',
      protocol: 'http:',
      hostname: 'gw.example.test',
      port: 8787,
      path: wirePath('bucket', c.key),
      query,
      headers: { host: HOST, 'x-amz-content-sha256': EMPTY, 'x-amz-meta-tabs': 'a\t\tb', ...extraHeaders },
    };
  }

  it.each(CASES.map((c) => [c.name, c] as const))('%s: same canonical query and headers; the gate accepts it', async (_, c) => {
    const request = smithyRequest(c);
    expect(canonicalQuery(parseQuery(wireQuery(c.query)))).toBe(getCanonicalQuery(request));
    const theirs = getCanonicalHeaders(request);
    const names = Object.keys(theirs).sort();
    expect(canonicalHeaders(names, (n) => request.headers[n as keyof typeof request.headers] ?? null)).toBe(names.map((n) => `${n}:${theirs[n]}\n`).join(''));

    const signed = await smithySigner().sign(request, { signingDate: NOW });
    const rawUrl = target(c);
    const verified = await verifyAt(new Request('http://' + HOST + rawUrl, { headers: signed.headers }), gateOpts(rawUrl));
    expect(verified.accessKeyId).toBe(ACCESS_KEY);

    // Signed by another secret: refused.
    const forged = await smithySigner('not the secret').sign(request, { signingDate: NOW });
    await expect(verifyAt(new Request('http://' + HOST + rawUrl, { headers: forged.headers }), gateOpts(rawUrl))).rejects.toMatchObject({
      code: 'SignatureDoesNotMatch',
    });
  });

  it.each(CASES.map((c) => [c.name, c] as const))('%s: presigned is accepted until it expires', async (_, c) => {
    const request = smithyRequest(c, { 'X-Amz-Content-Sha256': 'UNSIGNED-PAYLOAD' });
    delete (request.headers as Record<string, string>)['x-amz-content-sha256'];
    delete (request.headers as Record<string, string>)['x-amz-meta-tabs'];
    const presigned = await smithySigner().presign(request, { signingDate: NOW, expiresIn: 600 });
    const query = Object.entries(presigned.query as Record<string, string>).map(([n, v]) => [n, v] as [string, string]);
    const rawUrl = wirePath('bucket', c.key) + '?' + wireQuery(query);
    const ok = await verifyAt(new Request('http://' + HOST + rawUrl, { headers: presigned.headers }), gateOpts(rawUrl));
    expect(ok.authType).toBe('sigv4-query');
    await expect(
      verifyAt(new Request('http://' + HOST + rawUrl, { headers: presigned.headers }), {
        ...gateOpts(rawUrl),
        now: new Date(NOW.getTime() + 601e3),
      }),
    ).rejects.toMatchObject({ code: 'AccessDenied', message: 'Request has expired' });
  });
});
