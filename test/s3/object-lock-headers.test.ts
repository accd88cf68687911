// The Object Lock request headers as s3/object-lock.ts reads them (AWS's errors for bad input),
// the gateway's maximum retention (s3.maxRetentionDays), and who may bypass GOVERNANCE
// retention: a key whose scope grants bypass-governance on the key (issue 37: read, list, write
// and delete on the whole bucket no longer imply it); never an anonymous request.

import { describe, expect, it } from 'vitest';
import { Access, FULL_ACCESS } from '../../worker/model/access.ts';
import type { S3Error } from '../../worker/model/errors.ts';
import type { S3Context } from '../../worker/s3/context.ts';
import { assertLockedPutDigest, readBucketLockEnabled, readBypass, readDefaultRetention, readLockHeaders } from '../../worker/s3/object-lock.ts';
import { parseXml } from '../../worker/s3/xml-parse.ts';

const future = new Date(Date.now() + 86_400_000);
const lockHeaders = (headers: Headers, maxDays = 36_500) => readLockHeaders(headers, maxDays);
const h = (o: Record<string, string>) => new Headers(o);
const code = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as S3Error).code;
  }
  return 'ok';
};

describe('x-amz-object-lock-* on a write', () => {
  it('reads mode, date and legal hold', () => {
    expect(
      lockHeaders(
        h({ 'x-amz-object-lock-mode': 'COMPLIANCE', 'x-amz-object-lock-retain-until-date': future.toISOString(), 'x-amz-object-lock-legal-hold': 'ON' }),
      ),
    ).toEqual({ mode: 'COMPLIANCE', retainUntil: future.toISOString(), legalHold: 'ON' });
    expect(lockHeaders(h({}))).toBeUndefined();
    expect(lockHeaders(h({ 'x-amz-object-lock-legal-hold': 'OFF' }))).toEqual({ legalHold: 'OFF' });
  });

  it.each([
    [{ 'x-amz-object-lock-mode': 'GOVERNANCE' }],
    [{ 'x-amz-object-lock-retain-until-date': future.toISOString() }],
    [{ 'x-amz-object-lock-mode': 'governance', 'x-amz-object-lock-retain-until-date': future.toISOString() }],
    [{ 'x-amz-object-lock-mode': 'GOVERNANCE', 'x-amz-object-lock-retain-until-date': 'tomorrow' }],
    [{ 'x-amz-object-lock-mode': 'GOVERNANCE', 'x-amz-object-lock-retain-until-date': '2001-01-01T00:00:00Z' }],
    [{ 'x-amz-object-lock-legal-hold': 'on' }],
  ])('%o is InvalidArgument', (headers) => {
    expect(code(() => lockHeaders(h(headers)))).toBe('InvalidArgument');
  });

  it('x-amz-bucket-object-lock-enabled is true, false or InvalidArgument', () => {
    expect(readBucketLockEnabled(h({ 'x-amz-bucket-object-lock-enabled': 'True' }))).toBe(true);
    expect(readBucketLockEnabled(h({ 'x-amz-bucket-object-lock-enabled': 'false' }))).toBe(false);
    expect(readBucketLockEnabled(h({}))).toBe(false);
    expect(code(() => readBucketLockEnabled(h({ 'x-amz-bucket-object-lock-enabled': 'yes' })))).toBe('InvalidArgument');
  });
});

describe('a PutObject with lock headers needs a digest', () => {
  const locked = { user: {}, objectLock: { legalHold: 'ON' as const } };
  const ctx = (headers: Record<string, string>, trailer?: object) => ({ headers: h(headers), auth: { checksum: trailer } }) as unknown as S3Context;
  it('Content-MD5, a checksum header or a trailer checksum', () => {
    expect(code(() => assertLockedPutDigest(ctx({ 'content-md5': '1B2M2Y8AsgTpgAmY7PhCfg==' }), locked))).toBe('ok');
    expect(code(() => assertLockedPutDigest(ctx({ 'x-amz-checksum-crc32': 'AAAAAA==' }), locked))).toBe('ok');
    expect(code(() => assertLockedPutDigest(ctx({}, { algorithm: 'CRC32', expected: null }), locked))).toBe('ok');
  });
  it('none, or only an algorithm named, is InvalidRequest; no lock needs none', () => {
    expect(code(() => assertLockedPutDigest(ctx({}), locked))).toBe('InvalidRequest');
    expect(code(() => assertLockedPutDigest(ctx({ 'x-amz-sdk-checksum-algorithm': 'CRC32' }), locked))).toBe('InvalidRequest');
    expect(code(() => assertLockedPutDigest(ctx({}), { user: {} }))).toBe('ok');
  });
});

describe('x-amz-bypass-governance-retention', () => {
  const ctx = (access: Access | undefined, bypass = 'true', denies = false) =>
    ({
      headers: h({ 'x-amz-bypass-governance-retention': bypass }),
      bucket: 'vault',
      key: 'a/doc',
      auth: { access },
      policy: { deniesObject: () => denies },
    }) as unknown as S3Context;
  const all = ['read', 'list', 'write', 'delete'] as const;

  it('applies for a key granted bypass-governance on the key (and the key without a scope)', () => {
    expect(readBypass(ctx(FULL_ACCESS))).toBe(true);
    expect(readBypass(ctx(new Access([{ buckets: ['vault'], actions: ['bypass-governance'] }])))).toBe(true);
    expect(readBypass(ctx(new Access([{ buckets: ['vault'], prefixes: ['a/'], actions: ['bypass-governance'] }])))).toBe(true);
    expect(readBypass(ctx(FULL_ACCESS, 'false'))).toBe(false);
  });

  it('never without it (every other action on the whole bucket included), past a policy Deny, nor for an anonymous request', () => {
    expect(readBypass(ctx(new Access([{ buckets: ['vault'], actions: all }])))).toBe(false);
    expect(readBypass(ctx(new Access([{ buckets: ['vault'], actions: ['read', 'list', 'write', 'delete', 'legal-hold', 'retention'] }])))).toBe(false);
    expect(readBypass(ctx(new Access([{ buckets: ['vault'], prefixes: ['b/'], actions: ['bypass-governance'] }])))).toBe(false);
    expect(readBypass(ctx(new Access([{ buckets: ['other'], actions: ['bypass-governance'] }])))).toBe(false);
    expect(readBypass(ctx(FULL_ACCESS, 'true', true))).toBe(false);
    expect(readBypass(ctx(undefined))).toBe(false);
  });
});

describe('the maximum retention (s3.maxRetentionDays)', () => {
  const at = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
  it('a retain-until date past it is InvalidArgument; at most it is kept', () => {
    expect(code(() => lockHeaders(h({ 'x-amz-object-lock-mode': 'COMPLIANCE', 'x-amz-object-lock-retain-until-date': '9999-12-31T00:00:00Z' })))).toBe(
      'InvalidArgument',
    );
    expect(code(() => lockHeaders(h({ 'x-amz-object-lock-mode': 'COMPLIANCE', 'x-amz-object-lock-retain-until-date': at(31) }), 30))).toBe('InvalidArgument');
    expect(lockHeaders(h({ 'x-amz-object-lock-mode': 'COMPLIANCE', 'x-amz-object-lock-retain-until-date': at(29) }), 30)?.mode).toBe('COMPLIANCE');
  });

  // GOVERNANCE is lifted by a key with bypass-governance, so only COMPLIANCE needs the operator's
  // bound; ceph/s3-tests' test_object_lock_put_obj_retention sets GOVERNANCE until 2140, as AWS allows.
  it('a GOVERNANCE date is not bounded by it, only by the date format (year 9999)', () => {
    const governance = (until: string) => lockHeaders(h({ 'x-amz-object-lock-mode': 'GOVERNANCE', 'x-amz-object-lock-retain-until-date': until }), 30);
    expect(governance(at(31))?.mode).toBe('GOVERNANCE');
    expect(governance('2140-01-01T00:00:00Z')).toEqual({ mode: 'GOVERNANCE', retainUntil: '2140-01-01T00:00:00.000Z' });
    expect(governance('9999-12-31T00:00:00Z')?.mode).toBe('GOVERNANCE');
    expect(code(() => governance('+010000-01-01T00:00:00Z'))).toBe('InvalidArgument');
  });

  it("a default period past it is refused for COMPLIANCE only; GOVERNANCE keeps AWS's 100 years", () => {
    const doc = (retention: string) =>
      parseXml(
        `<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>${retention}</DefaultRetention></Rule></ObjectLockConfiguration>`,
      );
    expect(code(() => readDefaultRetention(doc('<Mode>COMPLIANCE</Mode><Days>31</Days>'), 30))).toBe('InvalidRetentionPeriod');
    expect(readDefaultRetention(doc('<Mode>GOVERNANCE</Mode><Years>100</Years>'), 30)).toEqual({ mode: 'GOVERNANCE', years: 100 });
    expect(code(() => readDefaultRetention(doc('<Mode>GOVERNANCE</Mode><Years>101</Years>'), 30))).toBe('InvalidRetentionPeriod');
  });
});

describe('PutObjectLockConfiguration: the default retention', () => {
  const doc = (retention: string) =>
    parseXml(
      `<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention>${retention}</DefaultRetention></Rule></ObjectLockConfiguration>`,
    );
  const read = (retention: string, maxDays = 36_500) => readDefaultRetention(doc(retention), maxDays);

  it('reads a mode with Days or Years', () => {
    expect(read('<Mode>GOVERNANCE</Mode><Days>1</Days>')).toEqual({ mode: 'GOVERNANCE', days: 1 });
    expect(read('<Mode>COMPLIANCE</Mode><Years>100</Years>')).toEqual({ mode: 'COMPLIANCE', years: 100 });
    expect(
      readDefaultRetention(parseXml('<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>'), 36_500),
    ).toBeNull();
  });

  // RGW's code, which ceph/s3-tests expects (test_object_lock_put_obj_lock_invalid_days/_years);
  // AWS documents none for this case (docs/COMPATIBILITY.md "Object Lock").
  it.each([
    ['Days 0', '<Mode>GOVERNANCE</Mode><Days>0</Days>', 'Days'],
    ['Years -1', '<Mode>GOVERNANCE</Mode><Years>-1</Years>', 'Years'],
    ['Days above 36500', '<Mode>COMPLIANCE</Mode><Days>36501</Days>', 'Days'],
    ['Years above 100', '<Mode>COMPLIANCE</Mode><Years>101</Years>', 'Years'],
    ['Days above the maximum of 30', '<Mode>COMPLIANCE</Mode><Days>31</Days>', 'Days', 30],
    ['Years above the maximum of 30 days', '<Mode>COMPLIANCE</Mode><Years>1</Years>', 'Years', 30],
  ] as [string, string, string, number?][])('%s is 400 InvalidRetentionPeriod naming the element', (_name, retention, argument, maxDays) => {
    let error: S3Error | undefined;
    try {
      read(retention, maxDays);
    } catch (e) {
      error = e as S3Error;
    }
    expect([error?.code, error?.status, error?.fields?.ArgumentName]).toEqual(['InvalidRetentionPeriod', 400, argument]);
  });

  it.each([
    ['both Days and Years', '<Mode>GOVERNANCE</Mode><Days>1</Days><Years>1</Years>'],
    ['neither', '<Mode>GOVERNANCE</Mode>'],
    ['a lower-case mode', '<Mode>governance</Mode><Days>1</Days>'],
    ['Days not an integer', '<Mode>GOVERNANCE</Mode><Days>1.5</Days>'],
  ])('%s is MalformedXML', (_name, retention) => {
    expect(code(() => read(retention))).toBe('MalformedXML');
  });
});
