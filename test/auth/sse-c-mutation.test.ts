/**
 * The mutation suite's SSE-C family (issue 37, "the security items are added to the mutation
 * suite"). The review found that an SSE-C object's ETag was its plaintext's MD5, shown to keys
 * that never had the customer key, and that conditional requests were evaluated before the key
 * was checked, so a keyless If-None-Match told a right guess (304) from a wrong one (200/400).
 *
 * Every request here is validly signed (the gate lets it through): what varies is one element of
 * what the client says about the object's key. Read kinds (HEAD, GET, ranged GET, GetObjectAttributes,
 * CopyObject and UploadPartCopy from the SSE-C source to an SSE-C destination) × key variants (the right key; none; another
 * key; the right key with a wrong MD5; the algorithm alone; a wrong algorithm; a short key) × conditions
 * (none, a right and a wrong guess in If-Match / If-None-Match, dates either side). For each answer:
 * - never a 500;
 * - the plaintext's MD5 and the plaintext appear in no header and no body, whatever the key;
 * - without the exact key: refused (4xx), and the same status and code whatever the condition, so
 *   no condition is an oracle;
 * - with the key: the condition decides, as S3 says (304 / 412 / 200), on the ETag the object shows.
 */
import {
  CreateMultipartUploadCommand,
  CopyObjectCommand,
  GetObjectAttributesCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { gateApp } from '../support/gate-app.ts';
import { sdk } from './mutation/bases.ts';
import { toRequest } from './mutation/wire.ts';

const B = 'vault';
const KEY = Buffer.alloc(32, 7);
const BODY = 'the secret contents, guessable by whoever wrote them';
const md5 = (b: string | Uint8Array) => createHash('md5').update(b).digest('hex');
const PLAIN_MD5 = md5(BODY);
const b64 = (b: Buffer) => b.toString('base64');

type KeyHeaders = { algorithm?: string; key?: string; keyMD5?: string };
/** One element of the customer key changed at a time; `right` alone is the key the object was written with. */
const KEY_VARIANTS: Record<string, KeyHeaders> = {
  right: { algorithm: 'AES256', key: b64(KEY), keyMD5: createHash('md5').update(KEY).digest('base64') },
  none: {},
  'another key': { algorithm: 'AES256', key: b64(Buffer.alloc(32, 9)), keyMD5: createHash('md5').update(Buffer.alloc(32, 9)).digest('base64') },
  'right key, wrong MD5': { algorithm: 'AES256', key: b64(KEY), keyMD5: createHash('md5').update('x').digest('base64') },
  'right key, no MD5': { algorithm: 'AES256', key: b64(KEY) },
  'algorithm alone': { algorithm: 'AES256' },
  'wrong algorithm': { algorithm: 'AES128', key: b64(KEY), keyMD5: createHash('md5').update(KEY).digest('base64') },
  'short key': { algorithm: 'AES256', key: b64(KEY.subarray(0, 16)), keyMD5: createHash('md5').update(KEY.subarray(0, 16)).digest('base64') },
};

type Condition = { name: string; match?: string; noneMatch?: string; modifiedSince?: Date; unmodifiedSince?: Date };
function conditions(etag: string): Condition[] {
  const past = new Date(Date.now() - 86400e3),
    future = new Date(Date.now() + 86400e3);
  return [
    { name: 'none' },
    { name: 'If-Match the plaintext MD5', match: `"${PLAIN_MD5}"` },
    { name: 'If-Match the ETag', match: etag },
    { name: 'If-None-Match the plaintext MD5', noneMatch: `"${PLAIN_MD5}"` },
    { name: 'If-None-Match the ETag', noneMatch: etag },
    { name: 'If-Modified-Since tomorrow', modifiedSince: future },
    { name: 'If-Unmodified-Since yesterday', unmodifiedSince: past },
  ];
}

/** What S3 answers a reader holding the key: the condition decides on the ETag the object shows. */
function expectedWithKey(c: Condition, etag: string, kind: string): number {
  const copy = kind === 'CopyObject' || kind === 'UploadPartCopy';
  if (c.match !== undefined && c.match !== etag) return 412;
  if (c.unmodifiedSince) return 412;
  if (c.noneMatch !== undefined && c.noneMatch === etag) return copy ? 412 : 304;
  if (c.modifiedSince && c.noneMatch === undefined) return copy ? 412 : 304;
  return kind === 'ranged GET' ? 206 : 200;
}

const READS: Record<string, (k: KeyHeaders, c: Condition, uploadId: string) => unknown> = {
  HEAD: (k, c) =>
    withKeyHeaders((i) => new HeadObjectCommand(i as never), {
      Bucket: B,
      Key: 's',
      ...sse(k),
      IfMatch: c.match,
      IfNoneMatch: c.noneMatch,
      IfModifiedSince: c.modifiedSince,
      IfUnmodifiedSince: c.unmodifiedSince,
    }),
  GET: (k, c) =>
    withKeyHeaders((i) => new GetObjectCommand(i as never), {
      Bucket: B,
      Key: 's',
      ...sse(k),
      IfMatch: c.match,
      IfNoneMatch: c.noneMatch,
      IfModifiedSince: c.modifiedSince,
      IfUnmodifiedSince: c.unmodifiedSince,
    }),
  'ranged GET': (k, c) =>
    withKeyHeaders((i) => new GetObjectCommand(i as never), {
      Bucket: B,
      Key: 's',
      Range: 'bytes=4-9',
      ...sse(k),
      IfMatch: c.match,
      IfNoneMatch: c.noneMatch,
      IfModifiedSince: c.modifiedSince,
      IfUnmodifiedSince: c.unmodifiedSince,
    }),
  GetObjectAttributes: (k, c) =>
    withKeyHeaders((i) => new GetObjectAttributesCommand(i as never), { Bucket: B, Key: 's', ObjectAttributes: ['ETag', 'ObjectSize', 'Checksum'], ...sse(k) }),
  CopyObject: (k, c) =>
    withKeyHeaders((i) => new CopyObjectCommand(i as never), {
      Bucket: B,
      Key: 'copy',
      CopySource: `${B}/s`,
      ...copySse(k),
      CopySourceIfMatch: c.match,
      CopySourceIfNoneMatch: c.noneMatch,
      CopySourceIfModifiedSince: c.modifiedSince,
      CopySourceIfUnmodifiedSince: c.unmodifiedSince,
    }),
  UploadPartCopy: (k, c, uploadId) =>
    withKeyHeaders((i) => new UploadPartCopyCommand(i as never), {
      Bucket: B,
      Key: 'mpu',
      UploadId: uploadId,
      PartNumber: 1,
      CopySource: `${B}/s`,
      ...copySse(k),
      CopySourceIfMatch: c.match,
      CopySourceIfNoneMatch: c.noneMatch,
      CopySourceIfModifiedSince: c.modifiedSince,
      CopySourceIfUnmodifiedSince: c.unmodifiedSince,
    }),
};

// The headers are set exactly as the variant says, just before signing: the SDK's own SSE-C step
// would otherwise compute the key's MD5 itself and mend the "wrong MD5" variants.
const sse = (k: KeyHeaders) => ({ sseHeaders: { prefix: 'x-amz-server-side-encryption-customer-', k } });
const copySse = (k: KeyHeaders) => ({ sseHeaders: { prefix: 'x-amz-copy-source-server-side-encryption-customer-', k } });

type Command = { input: Record<string, unknown>; middlewareStack: { add(m: unknown, o: unknown): void } };
function withKeyHeaders<C>(make: (input: Record<string, unknown>) => C, input: Record<string, unknown>): C {
  const { sseHeaders, ...rest } = input as { sseHeaders?: { prefix: string; k: KeyHeaders } };
  const command = make(rest) as Command;
  if (sseHeaders) {
    const { prefix, k } = sseHeaders;
    command.middlewareStack.add(
      (next: (a: { request: { headers: Record<string, string> } }) => unknown) => (args: { request: { headers: Record<string, string> } }) => {
        if (prefix.startsWith('x-amz-copy-source')) {
          // The copy's destination is SSE-C under the right key: nothing it shows may be an MD5 either.
          const right = KEY_VARIANTS.right!;
          args.request.headers['x-amz-server-side-encryption-customer-algorithm'] = right.algorithm!;
          args.request.headers['x-amz-server-side-encryption-customer-key'] = right.key!;
          args.request.headers['x-amz-server-side-encryption-customer-key-md5'] = right.keyMD5!;
        }
        if (k.algorithm !== undefined) args.request.headers[`${prefix}algorithm`] = k.algorithm;
        if (k.key !== undefined) args.request.headers[`${prefix}key`] = k.key;
        if (k.keyMD5 !== undefined) args.request.headers[`${prefix}key-md5`] = k.keyMD5;
        return next(args);
      },
      { step: 'build', priority: 'low', name: 'sseCustomerHeadersAsGiven' },
    );
  }
  return command as C;
}

describe('SSE-C under one-element changes of the customer key and the conditions', () => {
  it('no plaintext MD5 anywhere; without the exact key, one refusal whatever the condition; with it, the condition decides', async () => {
    const g = gateApp();
    await g.store.createBucket(B, { region: 'us-east-1' });
    const send = async (command: unknown) => {
      const plain = toRequest(await sdk(command, {}))!;
      // Over TLS, as an SSE-C key must travel (sse-transport.ts): the scheme is not signed.
      const res = await g.send(new Request(plain.url.replace(/^http:/, 'https:'), plain));
      const text = await res.text();
      return {
        status: res.status,
        code: /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? null,
        text,
        headers: [...res.headers].map(([n, v]) => `${n}: ${v}`).join('\n'),
      };
    };
    const put = await send(withKeyHeaders((i) => new PutObjectCommand(i as never), { Bucket: B, Key: 's', Body: BODY, ...sse(KEY_VARIANTS.right!) }));
    expect(put.status).toBe(200);
    const etag = /etag: (.*)/.exec(put.headers)![1]!;
    const created = await send(withKeyHeaders((i) => new CreateMultipartUploadCommand(i as never), { Bucket: B, Key: 'mpu', ...sse(KEY_VARIANTS.right!) }));
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created.text)![1]!;

    const failures: string[] = [];
    let requests = 0;
    for (const [kind, make] of Object.entries(READS)) {
      for (const [variant, k] of Object.entries(KEY_VARIANTS)) {
        const refusals = new Set<string>();
        // GetObjectAttributes takes no conditions in its SDK shape: it is sent once per variant.
        for (const c of kind === 'GetObjectAttributes' ? conditions(etag).slice(0, 1) : conditions(etag)) {
          const res = await send(make(k, c, uploadId));
          requests++;
          const what = `${kind}, key ${variant}, ${c.name}: ${res.status} ${res.code ?? ''}`;
          if (res.status >= 500) failures.push(`${what}: a 5xx`);
          if (res.headers.includes(PLAIN_MD5) || res.text.includes(PLAIN_MD5)) failures.push(`${what}: shows the plaintext's MD5`);
          if (variant !== 'right') {
            if (res.text.includes('guessable') || res.status < 400) failures.push(`${what}: let through without the key`);
            refusals.add(`${res.status} ${res.code}`);
          } else {
            const want = expectedWithKey(c, etag, kind);
            if (res.status !== want) failures.push(`${what}: wanted ${want}`);
          }
        }
        if (refusals.size > 1) failures.push(`${kind}, key ${variant}: the answer depends on the condition (${[...refusals].join(' / ')}): an oracle`);
      }
    }
    console.log(`SSE-C mutation family: ${requests} requests over ${Object.keys(READS).length} kinds, ${Object.keys(KEY_VARIANTS).length} key variants`);
    expect(failures).toEqual([]);
    expect(requests).toBeGreaterThan(250);
  });
});
