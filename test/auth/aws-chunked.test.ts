/**
 * The aws-chunked decoder: AWS's published examples (signed, signed with trailer, unsigned with
 * trailer), the same result whatever the split of the input, and failure (never silent success)
 * on truncation, bad framing, wrong lengths, wrong signatures, wrong or missing trailers.
 */

import { describe, expect, it } from 'vitest';
import { AwsChunkedDecoder, type AwsChunkedOptions, type ChunkSigning } from '../../worker/auth/aws-chunked.ts';
import type { ChecksumAlgorithm } from '../../worker/model/checksums.ts';
import { signingKey } from '../../worker/auth/sigv4.ts';
import { verifyAt } from './helpers/verify.ts';
import { seededBytes } from '../support/random.ts';
import { encodeAwsChunked, sha256hex, type ChunkSigner } from './helpers/aws-chunked-encode.ts';
import { checksumOf, testCreateHasher } from './helpers/checksums.ts';
import { concat, enc, fill, fromLatin1, latin1, randomSplit, readAll, streamOf, decodeStream } from './helpers/streams.ts';

// AWS's example (sigv4-streaming.html, sigv4-streaming-trailers.html): 65 KiB of 'a' in a
// 64 KiB and a 1 KiB chunk, signed by the documentation's example key on 2013-05-24.
const DOC_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const DOC_KEY = 'AKIAIOSFODNN7EXAMPLE';
const DOC_DATETIME = '20130524T000000Z';
const DOC_SCOPE = '20130524/us-east-1/s3/aws4_request';
const DOC_DATA = fill(66560, 'a');
const SEED = '4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9';
const CHUNK_SIGS = [
  'ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648',
  '0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497',
  'b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9',
];
const TRAILER_SEED = '106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e';
const TRAILER_CHUNK_SIGS = [
  'b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2',
  '1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7',
  '2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992',
];
const TRAILER_SIG = 'd81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435';

function docBody(sigs: string[], trailer = ''): Uint8Array {
  return concat([
    enc(`10000;chunk-signature=${sigs[0]}\r\n`),
    fill(65536, 'a'),
    enc(`\r\n400;chunk-signature=${sigs[1]}\r\n`),
    fill(1024, 'a'),
    enc(`\r\n0;chunk-signature=${sigs[2]}\r\n${trailer}\r\n`),
  ]);
}

const docTrailer = `x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:${TRAILER_SIG}\r\n`;

async function docSigning(seedSignature: string): Promise<ChunkSigning> {
  return { key: await signingKey(DOC_SECRET, '20130524', 'us-east-1', 's3'), datetime: DOC_DATETIME, scope: DOC_SCOPE, seedSignature };
}

/** Runs the decoder over `body` cut into `pieces`; resolves to output and pieces, or rejects. */
async function decode(body: Uint8Array, opts: AwsChunkedOptions, pieces?: number[]) {
  const decoder = new AwsChunkedDecoder(opts);
  const out = await readAll(decodeStream(streamOf(body, pieces), decoder));
  return { ...out, decoder };
}

/** The S3 error code `decode` fails with, or 'ok'. */
async function failure(body: Uint8Array, opts: AwsChunkedOptions, pieces?: number[]): Promise<string> {
  try {
    await decode(body, opts, pieces);
    return 'ok';
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}

function checksum(alg: ChecksumAlgorithm, expectedBase64: string | null = null) {
  return { algorithm: alg, hasher: testCreateHasher(alg), expectedBase64 };
}

describe("AWS's published examples", () => {
  it('the test encoder reproduces the documented chunk and trailer signatures', () => {
    const signer: ChunkSigner = { secret: DOC_SECRET, datetime: DOC_DATETIME, region: 'us-east-1', seedSignature: SEED };
    expect(encodeAwsChunked(DOC_DATA, { sizes: [65536], signer }).chunkSignatures).toEqual(CHUNK_SIGS);
    const withTrailer = encodeAwsChunked(DOC_DATA, {
      sizes: [65536],
      signer: { ...signer, seedSignature: TRAILER_SEED },
      trailers: [['x-amz-checksum-crc32c', 'sOO8/Q==']],
    });
    expect(withTrailer.chunkSignatures).toEqual(TRAILER_CHUNK_SIGS);
    expect(withTrailer.trailerSignature).toBe(TRAILER_SIG);
    expect(withTrailer.body).toEqual(docBody(TRAILER_CHUNK_SIGS, docTrailer));
    expect(checksumOf('CRC32C', DOC_DATA)).toBe('sOO8/Q==');
  });

  it('STREAMING-AWS4-HMAC-SHA256-PAYLOAD through the whole gate, seed signature included', async () => {
    const headers = {
      host: 's3.amazonaws.com',
      'x-amz-date': DOC_DATETIME,
      'x-amz-storage-class': 'REDUCED_REDUNDANCY',
      authorization: `AWS4-HMAC-SHA256 Credential=${DOC_KEY}/${DOC_SCOPE},SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=${SEED}`,
      'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
      'content-encoding': 'aws-chunked',
      'x-amz-decoded-content-length': '66560',
      'content-length': '66824',
    };
    const body = docBody(CHUNK_SIGS);
    expect(body.length).toBe(66824);
    const run = (b: Uint8Array, pieces: number[]) =>
      verifyAt(
        new Request('https://s3.amazonaws.com/examplebucket/chunkObject.txt', {
          method: 'PUT',
          headers,
          body: streamOf(b, pieces),
          duplex: 'half',
        } as RequestInit),
        {
          rawUrl: '/examplebucket/chunkObject.txt',
          credentials: new Map([[DOC_KEY, DOC_SECRET]]),
          now: new Date('2013-05-24T00:05:00Z'),
          createHasher: testCreateHasher,
        },
      ).then((v) => readAll(v.body!));
    for (const seed of [1, 2, 3]) {
      const out = await run(body, randomSplit(body.length, seed, 70000));
      expect(out.bytes).toEqual(DOC_DATA);
    }
    const tampered = body.slice();
    tampered[66000] = 0x62; // a 'b' in the first chunk
    await expect(run(tampered, [8192])).rejects.toMatchObject({ code: 'SignatureDoesNotMatch' });
  });

  it('STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER through the whole gate', async () => {
    const headers = {
      host: 's3.amazonaws.com',
      'x-amz-date': DOC_DATETIME,
      'x-amz-storage-class': 'REDUCED_REDUNDANCY',
      authorization: `AWS4-HMAC-SHA256 Credential=${DOC_KEY}/${DOC_SCOPE},SignedHeaders=content-encoding;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer,Signature=${TRAILER_SEED}`,
      'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER',
      'content-encoding': 'aws-chunked',
      'x-amz-decoded-content-length': '66560',
      'x-amz-trailer': 'x-amz-checksum-crc32c',
    };
    const verified = await verifyAt(
      new Request('https://s3.amazonaws.com/examplebucket/chunkObject.txt', {
        method: 'PUT',
        headers,
        body: streamOf(docBody(TRAILER_CHUNK_SIGS, docTrailer), [1000]),
        duplex: 'half',
      } as RequestInit),
      {
        rawUrl: '/examplebucket/chunkObject.txt',
        credentials: new Map([[DOC_KEY, DOC_SECRET]]),
        now: new Date('2013-05-24T00:00:00Z'),
        createHasher: testCreateHasher,
      },
    );
    expect(verified.checksum).toMatchObject({ algorithm: 'CRC32C', location: 'trailer', expectedBase64: null });
    expect((await readAll(verified.body!)).bytes).toEqual(DOC_DATA);
    expect(verified.checksum!.expectedBase64).toBe('sOO8/Q==');
  });

  it('STREAMING-UNSIGNED-PAYLOAD-TRAILER as documented, ending `==\\n\\r\\n\\r\\n`', async () => {
    const data = fill(17408, 'a');
    const body = concat([
      enc('2000\r\n'),
      fill(8192, 'a'),
      enc('\r\n2000\r\n'),
      fill(8192, 'a'),
      enc('\r\n400\r\n'),
      fill(1024, 'a'),
      enc('\r\n0\r\nx-amz-checksum-crc32:s3SFCQ==\n\r\n\r\n'),
    ]);
    expect(checksumOf('CRC32', data)).toBe('s3SFCQ==');
    const opts = (): AwsChunkedOptions => ({
      decodedContentLength: 17408,
      trailer: true,
      trailerNames: ['x-amz-checksum-crc32'],
      checksum: checksum('CRC32'),
    });
    for (const seed of [1, 2, 3, 4]) {
      const out = await decode(body, opts(), randomSplit(body.length, seed, 3000));
      expect(out.bytes).toEqual(data);
      expect(out.decoder.trailers).toEqual([['x-amz-checksum-crc32', 's3SFCQ==']]);
    }
  });

  it('the documented signed bodies decode in any split; a wrong seed fails the first chunk', async () => {
    const body = docBody(TRAILER_CHUNK_SIGS, docTrailer);
    const opts = async (seed: string): Promise<AwsChunkedOptions> => ({
      decodedContentLength: 66560,
      signing: await docSigning(seed),
      trailer: true,
      trailerNames: ['x-amz-checksum-crc32c'],
      checksum: checksum('CRC32C'),
    });
    for (const pieces of [[1], [7], [100], [65536], [70000], randomSplit(body.length, 9, 5000)]) {
      expect((await decode(body, await opts(TRAILER_SEED), pieces)).bytes).toEqual(DOC_DATA);
    }
    expect(await failure(body, await opts(SEED))).toBe('SignatureDoesNotMatch');
    const plain = docBody(CHUNK_SIGS);
    const plainOpts = { decodedContentLength: 66560, signing: await docSigning(SEED), trailer: false, trailerNames: [] };
    expect((await decode(plain, plainOpts, [3])).bytes).toEqual(DOC_DATA);
  });
});

// ---------------------------------------------------------------------------------------------

const SIGNER: ChunkSigner = {
  secret: 'chunk test secret',
  datetime: '20260301T101500Z',
  region: 'eu-west-3',
  seedSignature: 'c'.repeat(64),
};

async function testSigning(): Promise<ChunkSigning> {
  return {
    key: await signingKey(SIGNER.secret, '20260301', 'eu-west-3', 's3'),
    datetime: SIGNER.datetime,
    scope: '20260301/eu-west-3/s3/aws4_request',
    seedSignature: SIGNER.seedSignature,
  };
}

type Mode = 'signed' | 'signed-trailer' | 'unsigned-trailer';
const MODES: Mode[] = ['signed', 'signed-trailer', 'unsigned-trailer'];

/** A body and matching decoder options in one of the three modes. */
async function fixture(mode: Mode, data: Uint8Array, sizes: number[], alg: ChecksumAlgorithm = 'CRC32') {
  const name = 'x-amz-checksum-' + alg.toLowerCase();
  const trailer = mode !== 'signed';
  const { body, chunkSignatures } = encodeAwsChunked(data, {
    sizes,
    signer: mode === 'unsigned-trailer' ? undefined : SIGNER,
    trailers: trailer ? [[name, checksumOf(alg, data)]] : [],
    trailerMode: trailer,
  });
  const signing = mode === 'unsigned-trailer' ? null : await testSigning();
  const opts = (over: Partial<AwsChunkedOptions> = {}): AwsChunkedOptions => ({
    decodedContentLength: data.length,
    signing,
    trailer,
    trailerNames: trailer ? [name] : [],
    checksum: trailer ? checksum(alg) : null,
    ...over,
  });
  return { body, opts, chunkSignatures, trailerName: name };
}

describe('any split of the input gives the same output', () => {
  const data = seededBytes(200_000, 7);
  it.each(MODES)('%s: random chunk sizes, random input splits', async (mode) => {
    for (const [sizes, label] of [
      [[65536], '64 KiB'],
      [[1048576], '1 MiB'],
      [[1, 2, 3, 8191, 100_000], 'odd sizes'],
    ] as const) {
      const f = await fixture(mode, data, [...sizes]);
      const expected = sha256hex(data);
      for (const split of [[1 << 20], [1], [17], [65535, 65537], randomSplit(f.body.length, 11, 30_000), randomSplit(f.body.length, 12, 300)]) {
        if (split[0] === 1 && label !== 'odd sizes') continue; // byte-at-a-time is covered once, it is slow
        const out = await decode(f.body, f.opts(), split);
        expect(sha256hex(out.bytes), `${mode} ${label} split ${split.slice(0, 3)}`).toBe(expected);
      }
    }
  });

  it.each(['CRC32', 'CRC32C', 'CRC64NVME', 'SHA1', 'SHA256'] as const)('every checksum algorithm verifies as a trailer (%s)', async (alg) => {
    const f = await fixture('signed-trailer', data, [65536], alg);
    expect(sha256hex((await decode(f.body, f.opts(), [40_000])).bytes)).toBe(sha256hex(data));
    const g = await fixture('unsigned-trailer', data, [65536], alg);
    const bad = g.body.slice();
    bad[100] ^= 1;
    expect(await failure(bad, g.opts())).toBe('BadDigest');
  });

  it('an empty payload is one zero-size chunk', async () => {
    for (const mode of MODES) {
      const f = await fixture(mode, new Uint8Array(0), [1]);
      expect((await decode(f.body, f.opts())).bytes.length).toBe(0);
    }
  });

  it('output is views of the input: one piece per chunk of data in each input piece, never more', async () => {
    const f = await fixture('unsigned-trailer', data, [1000]);
    const chunks = Math.ceil(data.length / 1000);
    const whole = await decode(f.body, f.opts(), [f.body.length]);
    expect(whole.pieces.length).toBe(chunks);
    const split = randomSplit(f.body.length, 5, 50_000);
    const out = await decode(f.body, f.opts(), split);
    expect(out.pieces.length).toBeLessThanOrEqual(split.length + chunks);
  });

  it('a large body streams through (24 MiB made on the fly, never held whole)', async () => {
    const chunk = fill(1 << 20, 'z');
    const total = 24;
    const hasher = testCreateHasher('SHA256');
    for (let i = 0; i < total; i++) hasher.update(chunk);
    const trailerValue = hasher.digestBase64();
    let sent = 0;
    const source = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent < total) {
          c.enqueue(enc(`100000\r\n`));
          c.enqueue(chunk);
          c.enqueue(enc('\r\n'));
          sent++;
        } else {
          c.enqueue(enc(`0\r\nx-amz-checksum-sha256:${trailerValue}\r\n\r\n`));
          c.close();
        }
      },
    });
    const decoder = new AwsChunkedDecoder({
      decodedContentLength: total << 20,
      trailer: true,
      trailerNames: ['x-amz-checksum-sha256'],
      checksum: checksum('SHA256'),
    });
    const reader = decodeStream(source, decoder).getReader();
    let received = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      received += value.length;
    }
    expect(received).toBe(total << 20);
  });
});

describe('failures are never silent', () => {
  const small = seededBytes(300, 3);

  it.each(MODES)('%s: truncation at every length fails with IncompleteBody', async (mode) => {
    const f = await fixture(mode, small, [100, 1, 50]);
    for (let len = 0; len < f.body.length; len++) {
      expect(await failure(f.body.subarray(0, len), f.opts(), [7]), `length ${len}`).toBe('IncompleteBody');
    }
    expect(await failure(f.body, f.opts(), [7])).toBe('ok');
  });

  it.each(MODES)('%s: any single changed byte fails', async (mode) => {
    const f = await fixture(mode, small, [100, 1, 50]);
    const tolerated: number[] = [];
    for (let i = 0; i < f.body.length; i++) {
      const bad = f.body.slice();
      bad[i] ^= 0x01;
      if ((await failure(bad, f.opts(), [64])) === 'ok') tolerated.push(i);
    }
    // Data bytes fail the digest or signature, framing bytes the parser, the final CRLF as a
    // truncation or a malformed trailer line: no position may be accepted.
    expect(tolerated).toEqual([]);
  });

  it('a wrong chunk signature fails at that chunk, before later data is released', async () => {
    const data = seededBytes(3 * 65536, 4);
    const f = await fixture('signed', data, [65536]);
    const bad = f.body.slice();
    const firstSig = new TextDecoder().decode(bad.subarray(0, 100)).indexOf('chunk-signature=') + 'chunk-signature='.length;
    bad[firstSig] = bad[firstSig] === 0x61 ? 0x62 : 0x61;
    const reader = decodeStream(streamOf(bad, [4096]), new AwsChunkedDecoder(f.opts())).getReader();
    let released = 0;
    await expect(
      (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          released += value.length;
        }
      })(),
    ).rejects.toMatchObject({ code: 'SignatureDoesNotMatch' });
    expect(released).toBeLessThanOrEqual(65536);
  });

  it.each([0, 1, 2, 3])('chunk signature %i (of 3 chunks and the final one) replaced -> SignatureDoesNotMatch', async (index) => {
    const data = seededBytes(3000, 8);
    const f = await fixture('signed', data, [1000]);
    const text = latin1(f.body);
    const sig = f.chunkSignatures[index];
    const other = sig.slice(1) + sig[0]; // still 64 hex digits, another value
    const bad = fromLatin1(text.replace(sig, other));
    expect(await failure(bad, f.opts())).toBe('SignatureDoesNotMatch');
  });

  it('signed modes: a missing chunk-signature, a missing or wrong trailer signature', async () => {
    const data = seededBytes(500, 9);
    const f = await fixture('signed-trailer', data, [200]);
    const text = latin1(f.body);
    expect(await failure(fromLatin1(text.replace(/;chunk-signature=[0-9a-f]{64}/, '')), f.opts())).toBe('SignatureDoesNotMatch');
    expect(await failure(fromLatin1(text.replace(/x-amz-trailer-signature:[0-9a-f]{64}\r\n/, '')), f.opts())).toBe('SignatureDoesNotMatch');
    expect(await failure(fromLatin1(text.replace(/(x-amz-trailer-signature:)([0-9a-f])/, (_, p, d) => p + (d === '0' ? '1' : '0'))), f.opts())).toBe(
      'SignatureDoesNotMatch',
    );
    // The trailer value is covered by the trailer signature (checked before the checksum).
    expect(await failure(fromLatin1(text.replace(/(x-amz-checksum-crc32:)(.)/, (_, p, d) => p + (d === 'A' ? 'B' : 'A'))), f.opts())).toBe(
      'SignatureDoesNotMatch',
    );
  });

  it('trailers: wrong value, malformed value, undeclared, duplicated, missing, or in a mode without trailers', async () => {
    const data = seededBytes(500, 10);
    const crc = checksumOf('CRC32', data);
    const opts = (): AwsChunkedOptions => ({
      decodedContentLength: 500,
      trailer: true,
      trailerNames: ['x-amz-checksum-crc32'],
      checksum: checksum('CRC32'),
    });
    const body = (trailer: string) => concat([enc('1f4\r\n'), data, enc(`\r\n0\r\n${trailer}\r\n`)]);
    expect(await failure(body(`x-amz-checksum-crc32:${crc}\r\n`), opts())).toBe('ok');
    expect(await failure(body(`x-amz-checksum-crc32: ${crc}\r\n`), opts())).toBe('ok'); // one space tolerated
    expect(await failure(body(`X-Amz-Checksum-CRC32:${crc}\n`), opts())).toBe('ok'); // name case, bare \n
    expect(await failure(body(`x-amz-checksum-crc32:AAAAAA==\r\n`), opts())).toBe('BadDigest');
    expect(await failure(body(`x-amz-checksum-crc32:AAAA\r\n`), opts())).toBe('MalformedTrailerError');
    expect(await failure(body(`x-amz-checksum-crc32:${crc}\r\nx-amz-meta-x:1\r\n`), opts())).toBe('MalformedTrailerError');
    expect(await failure(body(`x-amz-checksum-crc32:${crc}\r\nx-amz-checksum-crc32:${crc}\r\n`), opts())).toBe('MalformedTrailerError');
    expect(await failure(body(`x-amz-checksum-sha256:${checksumOf('SHA256', data)}\r\n`), opts())).toBe('MalformedTrailerError');
    expect(await failure(body(''), opts())).toBe('MalformedTrailerError');
    expect(await failure(body(`no colon here\r\n`), opts())).toBe('MalformedTrailerError');
    // A blank line before the trailer is tolerated (seen in some encoders), only one.
    expect(await failure(body(`\r\nx-amz-checksum-crc32:${crc}\r\n`), opts())).toBe('ok');
    // A trailer where none was declared (signed mode without -TRAILER).
    const signedNoTrailer = await fixture('signed', data, [500]);
    const withTrailer = concat([signedNoTrailer.body.subarray(0, signedNoTrailer.body.length - 2), enc(`x-amz-checksum-crc32:${crc}\r\n\r\n`)]);
    expect(await failure(withTrailer, signedNoTrailer.opts())).toBe('MalformedTrailerError');
  });

  it('without a hasher the trailer value is only format-checked and handed on', async () => {
    const data = seededBytes(500, 10);
    const settled: Array<string | null> = [];
    const opts = (): AwsChunkedOptions => ({
      decodedContentLength: 500,
      trailer: true,
      trailerNames: ['x-amz-checksum-crc32'],
      checksum: { algorithm: 'CRC32', hasher: null, expectedBase64: null, settle: (v) => settled.push(v) },
    });
    const body = (trailer: string) => concat([enc('1f4\r\n'), data, enc(`\r\n0\r\n${trailer}\r\n`)]);
    expect(await failure(body('x-amz-checksum-crc32:AAAAAA==\r\n'), opts())).toBe('ok');
    expect(await failure(body('x-amz-checksum-crc32:AAAA\r\n'), opts())).toBe('MalformedTrailerError');
    expect(await failure(body(''), opts())).toBe('MalformedTrailerError');
    expect(settled).toEqual(['AAAAAA==', null, null]);
  });

  it('framing: bad sizes, missing CRLF, garbage after the end, overlong lines', async () => {
    const data = fill(20, 'q');
    const opts = (len: number | null = 20): AwsChunkedOptions => ({ decodedContentLength: len, trailer: false, trailerNames: [] });
    const ok = concat([enc('14\r\n'), data, enc('\r\n0\r\n\r\n')]);
    expect(await failure(ok, opts())).toBe('ok');
    expect(await failure(concat([enc('14\n'), data, enc('\n0\n\n')]), opts())).toBe('ok'); // bare LF line ends
    expect(await failure(concat([ok, enc('\r\n\r\n')]), opts())).toBe('ok'); // a few stray line ends
    expect(await failure(concat([ok, enc('\r\n\r\n\r\n')]), opts())).toBe('InvalidRequest');
    expect(await failure(concat([ok, enc('x')]), opts())).toBe('InvalidRequest');
    expect(await failure(concat([ok, ok]), opts())).toBe('InvalidRequest');
    expect(await failure(concat([enc('zz\r\n'), data, enc('\r\n0\r\n\r\n')]), opts())).toBe('InvalidRequest');
    expect(await failure(concat([enc(' 14\r\n'), data, enc('\r\n0\r\n\r\n')]), opts())).toBe('InvalidRequest');
    expect(await failure(concat([enc('\r\n'), data]), opts())).toBe('InvalidRequest');
    expect(await failure(concat([enc('14\r\n'), data, enc('XX0\r\n\r\n')]), opts())).toBe('InvalidRequest');
    expect(await failure(concat([enc('14\r\n'), data, enc('\r\r\n0\r\n\r\n')]), opts())).toBe('InvalidRequest');
    expect(await failure(concat([enc('14;' + 'x'.repeat(5000) + '\r\n'), data]), opts())).toBe('InvalidRequest');
    expect(await failure(concat([enc('14;novalue\r\n'), data, enc('\r\n0\r\n\r\n')]), opts())).toBe('InvalidRequest');
    expect(await failure(concat([enc('14;ext=1\r\n'), data, enc('\r\n0\r\n\r\n')]), opts())).toBe('ok'); // unknown extension
  });

  it('decoded length: more than declared fails at once, less fails at the end', async () => {
    const data = fill(20, 'q');
    const body = concat([enc('a\r\n'), data.subarray(0, 10), enc('\r\na\r\n'), data.subarray(10), enc('\r\n0\r\n\r\n')]);
    const opts = (len: number): AwsChunkedOptions => ({ decodedContentLength: len, trailer: false, trailerNames: [] });
    expect(await failure(body, opts(20))).toBe('ok');
    expect(await failure(body, opts(21))).toBe('IncompleteBody');
    expect(await failure(body, opts(19))).toBe('InvalidRequest');
    expect(await failure(body, opts(0))).toBe('InvalidRequest');
  });

  it('a failed decoder stays failed', async () => {
    const decoder = new AwsChunkedDecoder({ decodedContentLength: 1, trailer: false, trailerNames: [] });
    await expect(decoder.push(enc('zz\r\n'))).rejects.toMatchObject({ code: 'InvalidRequest' });
    await expect(decoder.push(enc('1\r\n'))).rejects.toMatchObject({ code: 'InvalidRequest' });
    await expect(decoder.finish()).rejects.toMatchObject({ code: 'InvalidRequest' });
  });
});
