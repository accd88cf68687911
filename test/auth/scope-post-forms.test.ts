/**
 * The scope mutation suite for browser form uploads (POST Object, issue 21): each scoped key of
 * mutation/scoped-gateway.ts (read-only; one bucket pattern `fz-*`; bucket fz under `dir/`)
 * signs forms (SigV4 and SigV2, signed here with node:crypto, apart from the gateway's code) for
 * keys in and out of its scope, and every form is sent as signed and mutated one element at a
 * time: the bucket posted to, the key (plain and `${filename}`), the policy text, the signature,
 * the access key, the credential's region and date, an added field, field-name case, the file's
 * size, duplicate fields, mixed schemes, a key in the URL, virtual-hosted addressing.
 * Each mutation says whether the policy still holds for the form as sent and what it would store;
 * the oracle (mutation/scoped-gateway.ts, written apart from worker/model/access.ts) says whether
 * the scope allows `write` there. For each answer:
 * - never a 5xx other than 501 NotImplemented;
 * - let through only if the policy holds AND the scope allows it, and then it stored exactly the
 *   file, under exactly that bucket and key;
 * - refused: the store (buckets, objects, uploads, parts) exactly as before; a valid form outside
 *   the scope is AccessDenied.
 */
import { readBytes } from '../support/read-bytes.ts';
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { snapshotStore } from './helpers/store-snapshot.ts';
import { BUCKET, HOST } from './mutation/bases.ts';
import { oracleAllows, SCOPES, scopedGateway, type TestScope } from './mutation/scoped-gateway.ts';

const OTHER_BUCKET = 'fz-forms';
const BASE_DOMAIN = 's3.gw.test';
const DATE = new Date(Date.now() + 0).toISOString().replace(/[-:]|\.\d{3}/g, ''); // yyyymmddThhmmssZ
const DAY = DATE.slice(0, 8);
const EXPIRES = new Date(Date.now() + 3600_000).toISOString();

type Scheme = 'v4' | 'v2';
interface Form {
  url: string;
  fields: [string, string][];
  file: { name: string; data: string };
}

function policyOf(bucket: string, extra: unknown[] = []): string {
  return Buffer.from(
    JSON.stringify({
      expiration: EXPIRES,
      conditions: [{ bucket }, ['starts-with', '$key', ''], ['content-length-range', 0, 64], ['starts-with', '$x-amz-meta-m', ''], ...extra],
    }),
  ).toString('base64');
}

function signingKey(secret: string, day: string, region: string): Buffer {
  let key = createHmac('sha256', 'AWS4' + secret)
    .update(day)
    .digest();
  for (const part of [region, 's3', 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  return key;
}

/** A signed form for `key` in `bucket`, by `who`. */
function signedForm(
  who: { accessKeyId: string; secret: string },
  scheme: Scheme,
  bucket: string,
  key: string,
  opts: { region?: string; day?: string } = {},
): Form {
  const region = opts.region ?? 'us-east-1';
  const day = opts.day ?? DAY;
  if (scheme === 'v4') {
    const credential = `${who.accessKeyId}/${day}/${region}/s3/aws4_request`;
    const policy = policyOf(bucket, [
      { 'x-amz-algorithm': 'AWS4-HMAC-SHA256' },
      { 'x-amz-credential': credential },
      { 'x-amz-date': `${day}${DATE.slice(8)}` },
    ]);
    const signature = createHmac('sha256', signingKey(who.secret, day, region))
      .update(policy)
      .digest('hex');
    return {
      url: `http://${HOST}/${bucket}`,
      fields: [
        ['key', key],
        ['x-amz-meta-m', 'v'],
        ['x-amz-algorithm', 'AWS4-HMAC-SHA256'],
        ['x-amz-credential', credential],
        ['x-amz-date', `${day}${DATE.slice(8)}`],
        ['policy', policy],
        ['x-amz-signature', signature],
      ],
      file: { name: 'up.txt', data: 'form body' },
    };
  }
  const policy = policyOf(bucket);
  return {
    url: `http://${HOST}/${bucket}`,
    fields: [
      ['key', key],
      ['x-amz-meta-m', 'v'],
      ['AWSAccessKeyId', who.accessKeyId],
      ['policy', policy],
      ['signature', createHmac('sha1', who.secret).update(policy).digest('base64')],
    ],
    file: { name: 'up.txt', data: 'form body' },
  };
}

async function toRequest(f: Form): Promise<Request> {
  const fd = new FormData();
  for (const [k, v] of f.fields) fd.append(k, v);
  fd.append('file', new Blob([f.file.data]), f.file.name);
  const r = new Response(fd);
  const body = new Uint8Array(await r.arrayBuffer());
  return new Request(f.url, { method: 'POST', body, headers: { 'content-type': r.headers.get('content-type')!, 'content-length': String(body.length) } });
}

const setField = (f: Form, name: string, value: string): Form => ({ ...f, fields: f.fields.map(([k, v]) => [k, k === name ? value : v]) });
const field = (f: Form, name: string) => f.fields.find(([k]) => k === name)?.[1];
const sigField = (s: Scheme) => (s === 'v4' ? 'x-amz-signature' : 'signature');

interface Variant {
  name: string;
  form: Form;
  /** Whether the policy and signature still hold for the form as sent. */
  valid: boolean;
  /** Where it would store. */
  bucket: string;
  key: string;
}

function variants(scope: TestScope, scheme: Scheme, bucket: string, key: string): Variant[] {
  const who = { accessKeyId: scope.accessKeyId, secret: scope.secret };
  const base = signedForm(who, scheme, bucket, key);
  const other = bucket === BUCKET ? OTHER_BUCKET : BUCKET;
  const otherScope = SCOPES.find((s) => s !== scope)!;
  const flip = (s: string) => (s[0] === 'a' ? 'b' : 'a') + s.slice(1);
  const policy = field(base, 'policy')!;
  const tampered = (edit: (doc: { expiration: string; conditions: unknown[] }) => void) => {
    const doc = JSON.parse(Buffer.from(policy, 'base64').toString());
    edit(doc);
    return setField(base, 'policy', Buffer.from(JSON.stringify(doc)).toString('base64'));
  };
  const out: Variant[] = [
    { name: 'as signed', form: base, valid: true, bucket, key },
    { name: 'posted to the other bucket', form: { ...base, url: `http://${HOST}/${other}` }, valid: false, bucket: other, key },
    { name: 'virtual-hosted', form: { ...base, url: `http://${bucket}.${BASE_DOMAIN}/` }, valid: true, bucket, key },
    { name: 'a key in the URL (not a form upload)', form: { ...base, url: `http://${HOST}/${bucket}/${key}` }, valid: false, bucket, key },
    { name: 'signature flipped', form: setField(base, sigField(scheme), flip(field(base, sigField(scheme))!)), valid: false, bucket, key },
    { name: 'policy: later expiration, not re-signed', form: tampered((d) => (d.expiration = '2099-01-01T00:00:00Z')), valid: false, bucket, key },
    { name: 'policy: other bucket, not re-signed', form: tampered((d) => (d.conditions[0] = { bucket: other })), valid: false, bucket, key },
    { name: 'policy: a condition dropped, not re-signed', form: tampered((d) => d.conditions.splice(2, 1)), valid: false, bucket, key },
    { name: 'an extra field', form: { ...base, fields: [...base.fields, ['x-amz-meta-extra', 'e']] }, valid: false, bucket, key },
    { name: 'an ignored extra field', form: { ...base, fields: [...base.fields, ['x-ignore-note', 'e']] }, valid: true, bucket, key },
    { name: 'field names upper-cased', form: { ...base, fields: base.fields.map(([k, v]) => [k === 'key' ? 'KEY' : k, v]) }, valid: true, bucket, key },
    { name: 'the key field twice', form: { ...base, fields: [...base.fields, ['key', 'dir/again']] }, valid: false, bucket, key },
    { name: 'no key field', form: { ...base, fields: base.fields.filter(([k]) => k !== 'key') }, valid: false, bucket, key },
    { name: 'a file over content-length-range', form: { ...base, file: { name: 'up.txt', data: 'x'.repeat(65) } }, valid: false, bucket, key },
    {
      name: 'the key from the file name',
      form: { ...setField(base, 'key', 'dir/${filename}'), file: { name: 'chosen.txt', data: 'form body' } },
      valid: true,
      bucket,
      key: 'dir/chosen.txt',
    },
    {
      name: 'a file name with a path (basename only)',
      form: { ...setField(base, 'key', '${filename}'), file: { name: 'dir/../obj', data: 'form body' } },
      valid: true,
      bucket,
      key: 'obj',
    },
  ];
  for (const k of ['obj', 'dir/obj.txt', 'dir/new', 'other/new', 'dirx'])
    out.push({ name: `key changed to ${k}`, form: setField(base, 'key', k), valid: true, bucket, key: k });
  if (scheme === 'v4') {
    const credential = field(base, 'x-amz-credential')!;
    out.push(
      {
        name: 'credential of another key',
        form: setField(base, 'x-amz-credential', credential.replace(scope.accessKeyId, otherScope.accessKeyId)),
        valid: false,
        bucket,
        key,
      },
      { name: 'credential region changed', form: setField(base, 'x-amz-credential', credential.replace('us-east-1', 'eu-west-1')), valid: false, bucket, key },
      { name: 'signed for another region', form: signedForm(who, 'v4', bucket, key, { region: 'eu-west-1' }), valid: false, bucket, key },
      { name: 'x-amz-date of another day', form: setField(base, 'x-amz-date', '20200101T000000Z'), valid: false, bucket, key },
      {
        name: 'SigV2 fields added',
        form: { ...base, fields: [...base.fields, ['AWSAccessKeyId', scope.accessKeyId], ['signature', 'AAAA']] },
        valid: false,
        bucket,
        key,
      },
      { name: 'algorithm changed', form: setField(base, 'x-amz-algorithm', 'AWS4-HMAC-SHA512'), valid: false, bucket, key },
    );
  } else {
    out.push(
      { name: 'access key of another key', form: setField(base, 'AWSAccessKeyId', otherScope.accessKeyId), valid: false, bucket, key },
      { name: 'signature removed', form: { ...base, fields: base.fields.filter(([k]) => k !== 'signature') }, valid: false, bucket, key },
      {
        name: 'a policy signed by another key',
        form: signedForm({ accessKeyId: scope.accessKeyId, secret: otherScope.secret }, 'v2', bucket, key),
        valid: false,
        bucket,
        key,
      },
    );
  }
  return out;
}

describe('POST forms under scopes: a mutated form never gets past its policy or its scope', { timeout: 600_000 }, () => {
  for (const scope of SCOPES) {
    it(scope.name, async () => {
      const failures: string[] = [];
      let count = 0;
      let stored = 0;
      for (const scheme of ['v4', 'v2'] as const) {
        for (const [bucket, key] of [
          [BUCKET, 'dir/form.txt'],
          [BUCKET, 'form.txt'],
          [OTHER_BUCKET, 'dir/form.txt'],
        ] as const) {
          for (const v of variants(scope, scheme, bucket, key)) {
            const g = await scopedGateway();
            await g.store.createBucket(OTHER_BUCKET, { region: 'us-east-1' });
            const what = `${scope.name}, ${scheme}, form for ${bucket}/${key}: ${v.name}`;
            const before = await snapshotStore(g.catalog);
            const res = await g.send(await toRequest(v.form));
            const text = await res.text();
            const code = /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? String(res.status);
            count++;
            const allowed = v.valid && oracleAllows(scope, { action: 'write', bucket: v.bucket, key: v.key });
            if (res.status >= 500 && res.status !== 501) failures.push(`${what}: ${res.status} ${code}`);
            else if (res.status < 300) {
              stored++;
              if (!allowed) failures.push(`${what}: let through (${res.status}), but the oracle says no`);
              else {
                const obj = await g.store.getObject(v.bucket, v.key, { conditions: {} }).catch(() => null);
                const body = obj ? new TextDecoder().decode(await readBytes(obj.body)) : null; // lent chunks: copied as read
                if (body !== v.form.file.data) failures.push(`${what}: stored ${JSON.stringify(body)} at ${v.bucket}/${v.key}`);
              }
            } else {
              if (allowed) failures.push(`${what}: refused (${code}), but it is valid and in scope`);
              if ((await snapshotStore(g.catalog)) !== before) failures.push(`${what}: refused (${code}) but the store changed`);
              if (v.valid && !allowed && code !== 'AccessDenied') failures.push(`${what}: out of scope but ${code}, not AccessDenied`);
            }
          }
        }
      }
      expect(failures).toEqual([]);
      expect(count).toBeGreaterThanOrEqual(100);
      console.log(`${scope.name}: ${count} form variants, ${stored} let through, 0 bypasses`);
    });
  }
});
