/**
 * Every request captured from real clients (sdk-js-v3, boto3 over https, awscli 2.9 over http)
 * passes the gate at its captured time, and its decoded body is the payload the client sent;
 * tampered variants fail with AWS's error codes.
 */

import { describe, expect, it } from 'vitest';
import { verifyAt, type VerifyAtOptions as VerifyOptions } from './helpers/verify.ts';
import { decodeAwsChunkedSimple, sha256hex } from './helpers/aws-chunked-encode.ts';
import { checksumOf, testCreateHasher } from './helpers/checksums.ts';
import { latin1, readAll } from './helpers/streams.ts';
import { FIXTURE_ACCESS_KEY, FIXTURE_SECRET, header, toRequest, wireRequests, type WireRequest } from './helpers/wire.ts';

const credentials = new Map([
  ['SOMEOTHERKEY', 'another secret'],
  [FIXTURE_ACCESS_KEY, FIXTURE_SECRET],
]);

function opts(w: WireRequest, over: Partial<VerifyOptions> = {}): VerifyOptions {
  return { rawUrl: w.target, credentials, now: w.capturedAt, createHasher: testCreateHasher, ...over };
}

const isChunked = (w: WireRequest) => (header(w, 'x-amz-content-sha256') ?? '').startsWith('STREAMING-');

/** The payload the client meant: the aws-chunked data, or the body itself. */
function payloadOf(w: WireRequest): Uint8Array {
  return isChunked(w) ? decodeAwsChunkedSimple(w.body).data : w.body;
}

async function bodyOf(verified: { body: ReadableStream<Uint8Array> | null }): Promise<Uint8Array> {
  return verified.body ? (await readAll(verified.body)).bytes : new Uint8Array(0);
}

/** Resolves to the S3 error code a request fails with, wherever it fails (gate or body), or 'ok'. */
async function outcome(request: Request, options: VerifyOptions): Promise<string> {
  try {
    await bodyOf(await verifyAt(request, options));
    return 'ok';
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}

const all = wireRequests();

describe('captured fixtures', () => {
  it('are all parsed (50 requests from three clients)', () => {
    expect(all.length).toBe(50);
    expect(new Set(all.map((w) => w.client))).toEqual(new Set(['sdk-js-v3', 'boto3-trixie-https', 'awscli-2.9-http']));
  });

  it.each(all.map((w) => [w.name, w] as const))('%s passes the gate with its captured time', async (_, w) => {
    const verified = await verifyAt(toRequest(w), opts(w));
    expect(verified.accessKeyId).toBe(FIXTURE_ACCESS_KEY);
    const body = await bodyOf(verified);
    const payload = payloadOf(w);
    expect(body.length).toBe(payload.length);
    expect(sha256hex(body)).toBe(sha256hex(payload));
    if (w.decodedLength !== null) expect(body.length).toBe(w.decodedLength);

    // What the client declared about its body holds for the bytes the gate let through.
    const contentSha = header(w, 'x-amz-content-sha256');
    if (contentSha && /^[0-9a-f]{64}$/.test(contentSha)) expect(sha256hex(body)).toBe(contentSha);
    const crcHeader = header(w, 'x-amz-checksum-crc32');
    if (crcHeader) expect(checksumOf('CRC32', body)).toBe(crcHeader);
    const trailer = isChunked(w) ? decodeAwsChunkedSimple(w.body).trailers : [];
    for (const line of trailer) {
      const [name, value] = line.split(':');
      const alg = name === 'x-amz-checksum-crc32' ? 'CRC32' : name === 'x-amz-checksum-sha256' ? 'SHA256' : null;
      expect(alg).not.toBeNull();
      expect(checksumOf(alg!, body)).toBe(value);
      expect(verified.checksum).toMatchObject({ algorithm: alg, location: 'trailer', expectedBase64: value });
      expect(await verified.checksum!.declared).toBe(value);
    }
    if (isChunked(w)) expect(verified.contentEncoding).toBeNull();
  });

  it.each(all.filter((w) => w.body.length > 200).map((w) => [w.name, w] as const))('%s decodes the same whatever the split of its body', async (_, w) => {
    const expected = sha256hex(payloadOf(w));
    for (const pieces of [[1, 2, 3, 5, 7, 11, 13, 4096], [65535], [1048577], [w.body.length]]) {
      const verified = await verifyAt(toRequest(w, { pieces }), opts(w));
      expect(sha256hex(await bodyOf(verified))).toBe(expected);
    }
  });
});

describe('tampered fixtures fail', () => {
  const signedHeaderAuth = all.filter((w) => header(w, 'authorization'));
  const presigned = all.filter((w) => !header(w, 'authorization'));

  it('there are header-auth, SigV4-presigned and SigV2-presigned captures', () => {
    expect(signedHeaderAuth.length).toBeGreaterThan(40);
    expect(presigned.map((w) => w.name)).toEqual([
      'boto3-trixie-https/014-GET-GetObject',
      'boto3-trixie-https/015-PUT-PutObject',
      'sdk-js-v3/021-GET-GetObject',
      'sdk-js-v3/022-PUT-PutObject',
    ]);
  });

  it.each(all.map((w) => [w.name, w] as const))('%s: wrong secret -> SignatureDoesNotMatch', async (_, w) => {
    const wrong = new Map([[FIXTURE_ACCESS_KEY, FIXTURE_SECRET.replace('EXAMPLE', 'EXAMPLF')]]);
    expect(await outcome(toRequest(w), opts(w, { credentials: wrong }))).toBe('SignatureDoesNotMatch');
  });

  it.each(all.map((w) => [w.name, w] as const))('%s: unknown access key -> InvalidAccessKeyId', async (_, w) => {
    expect(await outcome(toRequest(w), opts(w, { credentials: new Map([['AKIDOTHER', FIXTURE_SECRET]]) }))).toBe('InvalidAccessKeyId');
  });

  it.each(signedHeaderAuth.map((w) => [w.name, w] as const))('%s: a changed signed header -> SignatureDoesNotMatch', async (_, w) => {
    const signed = /SignedHeaders=([^,]+)/.exec(header(w, 'authorization')!)![1].split(';');
    // A header whose value only the signature protects (not one whose change fails earlier).
    const name = signed.find((h) => !['host', 'x-amz-date', 'x-amz-content-sha256', 'content-length', 'x-amz-decoded-content-length'].includes(h)) ?? 'host';
    const value = header(w, name)!;
    // Keep the value well-formed (Content-MD5 stays base64 of 16 bytes), only different.
    const changed = name === 'host' ? value.replace(/\d$/, (d) => String((Number(d) + 1) % 10)) : (value[0] === 'A' ? 'B' : 'A') + value.slice(1);
    expect(await outcome(toRequest(w, { headers: { [name]: changed } }), opts(w))).toBe('SignatureDoesNotMatch');
  });

  it.each(signedHeaderAuth.map((w) => [w.name, w] as const))('%s: a changed path -> SignatureDoesNotMatch', async (_, w) => {
    const target = w.target.replace('/capbucket', '/capbucket2');
    expect(await outcome(toRequest({ ...w, target }), opts({ ...w, target }))).toBe('SignatureDoesNotMatch');
  });

  it.each(signedHeaderAuth.map((w) => [w.name, w] as const))('%s: 16 minutes of clock skew -> RequestTimeTooSkewed', async (_, w) => {
    for (const skew of [16 * 60e3, -16 * 60e3]) {
      const now = new Date(w.capturedAt.getTime() + skew);
      expect(await outcome(toRequest(w), opts(w, { now }))).toBe('RequestTimeTooSkewed');
    }
    // 14 minutes is within the allowed skew.
    expect(await outcome(toRequest(w), opts(w, { now: new Date(w.capturedAt.getTime() + 14 * 60e3) }))).toBe('ok');
  });

  const withBody = all.filter((w) => w.body.length > 0);

  it.each(withBody.map((w) => [w.name, w] as const))('%s: a flipped payload byte fails unless nothing vouches for it', async (_, w) => {
    const body = w.body.slice();
    // The first payload byte: after the first chunk header for aws-chunked, else byte 0.
    const at = isChunked(w) ? body.indexOf(0x0a) + 1 : 0;
    body[at] ^= 0x01;
    const contentSha = header(w, 'x-amz-content-sha256') ?? '';
    const expected = /^[0-9a-f]{64}$/.test(contentSha)
      ? 'XAmzContentSHA256Mismatch'
      : header(w, 'x-amz-checksum-crc32') || header(w, 'x-amz-trailer')
        ? 'BadDigest'
        : 'ok'; // UNSIGNED-PAYLOAD without a checksum, SigV2: nothing in the request covers the bytes
    expect(await outcome(toRequest(w, { body }), opts(w))).toBe(expected);
  });

  it('the only captures whose payload nothing vouches for are unsigned and checksum-less', () => {
    const unguarded = withBody.filter((w) => {
      const sha = header(w, 'x-amz-content-sha256') ?? '';
      return !/^[0-9a-f]{64}$/.test(sha) && !header(w, 'x-amz-checksum-crc32') && !header(w, 'x-amz-trailer');
    });
    expect(unguarded.map((w) => w.name)).toEqual([
      'boto3-trixie-https/015-PUT-PutObject', // SigV2 presigned PUT
      'sdk-js-v3/022-PUT-PutObject', // SigV4 presigned PUT (its query checksum is of an EMPTY body: ignored)
      'sdk-js-v3/024-PUT-PutObject', // WHEN_REQUIRED: UNSIGNED-PAYLOAD, no checksum
    ]);
  });

  const chunked = all.filter(isChunked);

  it.each(chunked.map((w) => [w.name, w] as const))('%s: a wrong trailer checksum -> BadDigest', async (_, w) => {
    const text = new TextDecoder().decode(w.body.subarray(w.body.length - 120));
    const m = /x-amz-checksum-(\w+):([A-Za-z0-9+/=]+)\r\n/.exec(text)!;
    const value = m[2];
    // Same length, other value (change one base64 digit that is not padding).
    const other = (value[0] === 'A' ? 'B' : 'A') + value.slice(1);
    const body = replaceTail(w.body, value, other);
    expect(await outcome(toRequest(w, { body }), opts(w))).toBe('BadDigest');
    // Not base64 of the right size: malformed trailer.
    expect(await outcome(toRequest(w, { body: replaceTail(w.body, value, value.slice(2)) }), opts(w))).toBe('MalformedTrailerError');
    // Trailer removed altogether (the only integrity check of this mode).
    const noTrailer = replaceTail(w.body, `x-amz-checksum-${m[1]}:${value}\r\n`, '');
    expect(await outcome(toRequest(w, { body: noTrailer }), opts(w))).toBe('MalformedTrailerError');
  });

  it.each(chunked.map((w) => [w.name, w] as const))('%s: a truncated body -> IncompleteBody', async (_, w) => {
    for (const cut of [1, 2, 3, 20, w.body.length - 10]) {
      const body = w.body.subarray(0, w.body.length - cut);
      expect(await outcome(toRequest(w, { body }), opts(w))).toBe('IncompleteBody');
    }
  });

  it.each(chunked.map((w) => [w.name, w] as const))('%s: trailing garbage and a wrong decoded length fail', async (_, w) => {
    const garbage = new Uint8Array(w.body.length + 3);
    garbage.set(w.body);
    garbage.set([0x61, 0x62, 0x63], w.body.length);
    expect(await outcome(toRequest(w, { body: garbage }), opts(w))).toBe('InvalidRequest');
    const declared = Number(header(w, 'x-amz-decoded-content-length'));
    // The header is signed: a different value fails the signature...
    expect(await outcome(toRequest(w, { headers: { 'x-amz-decoded-content-length': String(declared + 1) } }), opts(w))).toBe('SignatureDoesNotMatch');
  });

  it.each(all.filter((w) => !isChunked(w) && w.body.length > 0 && header(w, 'content-length')).map((w) => [w.name, w] as const))(
    '%s: a body shorter than Content-Length -> IncompleteBody',
    async (_, w) => {
      const code = await outcome(toRequest(w, { body: w.body.subarray(0, w.body.length - 1) }), opts(w));
      expect(code).toBe('IncompleteBody');
    },
  );

  it('SigV4 presigned: expired, not yet valid, and X-Amz-Expires beyond a week', async () => {
    for (const w of presigned.filter((p) => p.target.includes('X-Amz-Expires=300'))) {
      const late = new Date(w.capturedAt.getTime() + 301e3);
      expect(await outcome(toRequest(w), opts(w, { now: late }))).toBe('AccessDenied');
      expect(await outcome(toRequest(w), opts(w, { now: new Date(w.capturedAt.getTime() + 299e3) }))).toBe('ok');
      const early = new Date(w.capturedAt.getTime() - 16 * 60e3);
      expect(await outcome(toRequest(w), opts(w, { now: early }))).toBe('AccessDenied');
      const target = w.target.replace('X-Amz-Expires=300', 'X-Amz-Expires=604801');
      expect(await outcome(toRequest({ ...w, target }), opts({ ...w, target }))).toBe('AuthorizationQueryParametersError');
      // A longer (still legal) expiry than was signed fails the signature.
      const longer = w.target.replace('X-Amz-Expires=300', 'X-Amz-Expires=3600');
      expect(await outcome(toRequest({ ...w, target: longer }), opts({ ...w, target: longer }))).toBe('SignatureDoesNotMatch');
    }
  });

  it('SigV2 presigned: expired, and Expires changed', async () => {
    const v2 = presigned.filter((p) => p.target.includes('AWSAccessKeyId='));
    expect(v2.length).toBe(2);
    for (const w of v2) {
      const expires = Number(/Expires=(\d+)/.exec(w.target)![1]);
      expect(await outcome(toRequest(w), opts(w, { now: new Date(expires * 1000 + 1000) }))).toBe('AccessDenied');
      expect(await outcome(toRequest(w), opts(w, { now: new Date(expires * 1000 - 1000) }))).toBe('ok');
      const target = w.target.replace(`Expires=${expires}`, `Expires=${expires + 3600}`);
      expect(await outcome(toRequest({ ...w, target }), opts({ ...w, target }))).toBe('SignatureDoesNotMatch');
    }
  });

  it('presigned URLs: an added unsigned x-amz-* header that changes the request -> AccessDenied', async () => {
    for (const w of presigned) {
      const request = toRequest(w, { headers: { 'x-amz-copy-source': '/capbucket/secret.txt' } });
      // SigV2 puts x-amz-* headers into its string to sign, so there the signature no longer matches.
      const expected = w.target.includes('AWSAccessKeyId=') ? 'SignatureDoesNotMatch' : 'AccessDenied';
      expect(await outcome(request, opts(w))).toBe(expected);
    }
  });

  it('requests without credentials are refused unless anonymous access is allowed', async () => {
    const w = all.find((x) => x.name === 'sdk-js-v3/025-GET-GetObject')!;
    const anonymous = toRequest(w, { headers: { authorization: null } });
    expect(await outcome(anonymous, opts(w))).toBe('AccessDenied');
    const verified = await verifyAt(toRequest(w, { headers: { authorization: null } }), opts(w, { allowAnonymous: true }));
    expect(verified.accessKeyId).toBeNull();
    expect(verified.authType).toBe('anonymous');
  });
});

/** Replaces the last occurrence of `from` (ASCII) in the tail of `body` by `to`. */
function replaceTail(body: Uint8Array, from: string, to: string): Uint8Array {
  const tailStart = Math.max(0, body.length - 200);
  const tail = latin1(body.subarray(tailStart));
  const at = tail.lastIndexOf(from);
  if (at < 0) throw new Error('not found: ' + from);
  const head = body.subarray(0, tailStart + at);
  const after = body.subarray(tailStart + at + from.length);
  const mid = new TextEncoder().encode(to);
  const out = new Uint8Array(head.length + mid.length + after.length);
  out.set(head);
  out.set(mid, head.length);
  out.set(after, head.length + mid.length);
  return out;
}
