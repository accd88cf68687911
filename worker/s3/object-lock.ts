/**
 * Object Lock on the wire: GetObjectLockConfiguration, PutObjectLockConfiguration,
 * GetObjectRetention, PutObjectRetention, GetObjectLegalHold, PutObjectLegalHold; the
 * `x-amz-object-lock-*` headers of PutObject, CopyObject and CreateMultipartUpload (read here,
 * echoed on GET/HEAD), and `x-amz-bypass-governance-retention`.
 * Spec: S3 API reference of each operation; S3 User Guide "Object Lock". The rules a lock
 * enforces are model/object-lock.ts's, applied in the catalog's atomic step.
 * Errors as AWS answers them: a lock header, retention or legal hold on a bucket without lock is
 * InvalidRequest; mode and date must come together (InvalidArgument); a configuration with both
 * Days and Years, neither, an unknown Mode or ObjectLockEnabled other than Enabled is MalformedXML;
 * a default period below 1 or above the maximum is InvalidRetentionPeriod (RGW's code, which
 * ceph/s3-tests expects; AWS documents no code for it and was seen answering InvalidArgument:
 * docs/COMPATIBILITY.md "Object Lock"); a
 * RetainUntilDate in a document that is not a date is MalformedXML, in a header InvalidArgument;
 * a PutObject with lock headers needs Content-MD5 or an x-amz-checksum-* (InvalidRequest).
 * Bypass: S3 needs the s3:BypassGovernanceRetention permission; here the key's scope must grant
 * `bypass-governance` on the key (model/access.ts; issue 37: before, read, list, write and delete
 * on the whole bucket implied it), and the bucket policy must not deny s3:BypassGovernanceRetention;
 * anonymous requests never bypass. Without them the header is ignored, as S3 does (the delete of
 * a version under GOVERNANCE is then AccessDenied).
 * COMPLIANCE retention, which nobody can shorten, is bounded by `s3.maxRetentionDays`
 * (InvalidArgument past it; a default COMPLIANCE period past it is InvalidRetentionPeriod): a key
 * with `retention` cannot lock versions for longer than the operator allows. GOVERNANCE retention,
 * which a key with `bypass-governance` lifts, has AWS's bounds only.
 */
import { S3Error } from '../model/errors.ts';
import { readContentMd5 } from '../model/checksums.ts';
import {
  RETENTION_MODES,
  type DefaultRetention,
  type LegalHoldStatus,
  type ObjectLockState,
  type Retention,
  type RetentionMode,
} from '../model/object-lock.ts';
import type { ObjectMetadata } from '../model/object-store.ts';
import { readXmlBody } from './body.ts';
import { readChecksumRequest } from './checksum-headers.ts';
import type { S3Context } from './context.ts';
import { readVersionId } from './versioning.ts';
import { el, group, xmlDocument, xmlResponse } from './xml.ts';
import { childText, childrenNamed, expectRoot, malformedXml, parseXml, type XmlElement } from './xml-parse.ts';

const MAX_DAYS = 36_500;
const MAX_YEARS = 100;

const isMode = (value: string | undefined): value is RetentionMode => RETENTION_MODES.includes(value as RetentionMode);

/** An ISO 8601 date as S3 stores a retain-until date (UTC, milliseconds); null when it does not parse. */
function isoDate(value: string): string | null {
  const t = Date.parse(value.trim());
  return Number.isNaN(t) ? null : new Date(t).toISOString();
}

const DAY_MS = 86_400_000;

/** The latest date S3's timestamps can carry (four-digit years): a GOVERNANCE date's only bound. */
const LAST_DATE = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * The operator's bound on retention of `mode`, in days from now (s3.maxRetentionDays): a
 * COMPLIANCE date can be neither shortened nor removed by anyone, so it is bounded; a GOVERNANCE
 * date can be lifted by a key with `bypass-governance` (an unscoped key, the operator's, always
 * can), so like AWS it is not (Infinity). Bounds retain-until dates and default periods alike.
 */
function operatorBoundDays(mode: RetentionMode, maxRetentionDays: number): number {
  return mode === 'COMPLIANCE' ? maxRetentionDays : Number.POSITIVE_INFINITY;
}

/**
 * A retain-until date must lie in the future (InvalidArgument, as S3), at most `maxDays` ahead
 * (operatorBoundDays: finite for COMPLIANCE only) and within the date format (year 9999).
 */
function futureDate(iso: string, argument: string, maxDays: number): string {
  const t = Date.parse(iso);
  if (t <= Date.now()) throw new S3Error('InvalidArgument', 'The retain until date must be in the future!', { ArgumentName: argument, ArgumentValue: iso });
  if (t > Date.now() + maxDays * DAY_MS)
    throw new S3Error('InvalidArgument', `A COMPLIANCE retain until date must be at most ${maxDays} days in the future (this gateway's maximum retention).`, {
      ArgumentName: argument,
      ArgumentValue: iso,
    });
  if (t > LAST_DATE)
    throw new S3Error('InvalidArgument', 'The retain until date must be before the year 10000.', { ArgumentName: argument, ArgumentValue: iso });
  return iso;
}

/** The lock a write asks for with `x-amz-object-lock-mode`, `-retain-until-date` and `-legal-hold`; undefined: none. */
export function readLockHeaders(headers: Headers, maxRetentionDays: number): ObjectLockState | undefined {
  const mode = headers.get('x-amz-object-lock-mode');
  const until = headers.get('x-amz-object-lock-retain-until-date');
  const hold = headers.get('x-amz-object-lock-legal-hold');
  const lock: ObjectLockState = {};
  if ((mode === null) !== (until === null)) {
    throw new S3Error('InvalidArgument', 'x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied', {
      ArgumentName: mode === null ? 'x-amz-object-lock-mode' : 'x-amz-object-lock-retain-until-date',
    });
  }
  if (mode !== null && until !== null) {
    if (!isMode(mode)) throw new S3Error('InvalidArgument', 'Unknown wormMode directive.', { ArgumentName: 'x-amz-object-lock-mode', ArgumentValue: mode });
    const iso = isoDate(until);
    if (iso === null)
      throw new S3Error('InvalidArgument', 'The retain until date must be provided in ISO 8601 format', {
        ArgumentName: 'x-amz-object-lock-retain-until-date',
        ArgumentValue: until,
      });
    lock.mode = mode;
    lock.retainUntil = futureDate(iso, 'x-amz-object-lock-retain-until-date', operatorBoundDays(mode, maxRetentionDays));
  }
  if (hold !== null) {
    if (hold !== 'ON' && hold !== 'OFF')
      throw new S3Error('InvalidArgument', "Legal Hold must be either of 'ON' or 'OFF'", { ArgumentName: 'x-amz-object-lock-legal-hold', ArgumentValue: hold });
    lock.legalHold = hold;
  }
  return lock.mode || lock.legalHold ? lock : undefined;
}

/** `metadata` with the lock the request's headers ask for (PutObject, CreateMultipartUpload). */
export function withLockHeaders(metadata: ObjectMetadata, headers: Headers, maxRetentionDays: number): ObjectMetadata {
  const { objectLock: _none, ...rest } = metadata;
  const lock = readLockHeaders(headers, maxRetentionDays);
  return lock ? { ...rest, objectLock: lock } : rest;
}

/** PutObject with lock headers needs Content-MD5 or an x-amz-checksum-* (header or trailer), as S3 requires. */
export function assertLockedPutDigest(s3: S3Context, metadata: ObjectMetadata): void {
  if (!metadata.objectLock) return;
  // A checksum value in a header, or one announced in the trailer (verified at the body's end);
  // naming an algorithm alone (x-amz-sdk-checksum-algorithm) gives nothing to check.
  const checksum = readChecksumRequest(s3.headers, s3.auth.checksum);
  if (readContentMd5(s3.headers) === null && checksum?.expected == null && s3.auth.checksum === undefined) {
    throw new S3Error('InvalidRequest', 'Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object requests with Object Lock parameters');
  }
}

/** GET/HEAD response headers of a version's lock. */
export function lockResponseHeaders(lock: ObjectLockState | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (lock?.mode && lock.retainUntil) {
    out['x-amz-object-lock-mode'] = lock.mode;
    out['x-amz-object-lock-retain-until-date'] = lock.retainUntil;
  }
  if (lock?.legalHold) out['x-amz-object-lock-legal-hold'] = lock.legalHold;
  return out;
}

/** `x-amz-bypass-governance-retention: true` from a key allowed to bypass on each of `keys` (the
 *  request's own key by default; DeleteObjects names its entries'), the rule above. */
export function readBypass(s3: S3Context, keys: readonly string[] = [s3.key!]): boolean {
  if (s3.headers.get('x-amz-bypass-governance-retention')?.trim().toLowerCase() !== 'true') return false;
  const access = s3.auth.access;
  return (
    access !== undefined &&
    keys.every((key) => access.allowsObject('bypass-governance', s3.bucket!, key) && !s3.policy?.deniesObject(['s3:BypassGovernanceRetention'], key))
  );
}

/** CreateBucket's `x-amz-bucket-object-lock-enabled` (true/false; anything else InvalidArgument). */
export function readBucketLockEnabled(headers: Headers): boolean {
  const value = headers.get('x-amz-bucket-object-lock-enabled');
  if (value === null) return false;
  const v = value.trim().toLowerCase();
  if (v !== 'true' && v !== 'false')
    throw new S3Error('InvalidArgument', 'Invalid x-amz-bucket-object-lock-enabled value', {
      ArgumentName: 'x-amz-bucket-object-lock-enabled',
      ArgumentValue: value,
    });
  return v === 'true';
}

function period(retention: XmlElement, name: 'Days' | 'Years', max: number, maxDays: number): number | undefined {
  const text = childText(retention, name)?.trim();
  if (text === undefined) return undefined;
  if (!/^-?\d+$/.test(text)) throw malformedXml(`${name} is an integer`);
  const n = Number(text);
  if (n < 1)
    throw new S3Error('InvalidRetentionPeriod', 'Default retention period must be a positive integer value.', { ArgumentName: name, ArgumentValue: text });
  if (n > max)
    throw new S3Error('InvalidRetentionPeriod', `Default retention period must be at most ${max} ${name.toLowerCase()}.`, {
      ArgumentName: name,
      ArgumentValue: text,
    });
  const days = name === 'Years' ? n * 365 : n;
  if (days > maxDays)
    throw new S3Error('InvalidRetentionPeriod', `Default retention period must be at most ${maxDays} days (this gateway's maximum retention).`, {
      ArgumentName: name,
      ArgumentValue: text,
    });
  return n;
}

/** The Rule of an ObjectLockConfiguration document (null: none, lock enabled without a default). */
export function readDefaultRetention(root: XmlElement, maxRetentionDays: number): DefaultRetention | null {
  const rules = childrenNamed(root, 'Rule');
  if (rules.length === 0) return null;
  if (rules.length > 1) throw malformedXml('one Rule');
  const retention = childrenNamed(rules[0]!, 'DefaultRetention');
  if (retention.length !== 1) throw malformedXml('Rule with one DefaultRetention');
  const mode = childText(retention[0]!, 'Mode')?.trim();
  if (!isMode(mode)) throw malformedXml('Mode GOVERNANCE or COMPLIANCE');
  const maxDays = operatorBoundDays(mode, maxRetentionDays);
  const days = period(retention[0]!, 'Days', MAX_DAYS, maxDays);
  const years = period(retention[0]!, 'Years', MAX_YEARS, maxDays);
  if ((days === undefined) === (years === undefined)) throw malformedXml('exactly one of Days and Years');
  return days !== undefined ? { mode, days } : { mode, years: years! };
}

export async function PutObjectLockConfiguration(s3: S3Context): Promise<Response> {
  const root = expectRoot(parseXml(await readXmlBody(s3, { requireDigest: true })), 'ObjectLockConfiguration');
  if (childText(root, 'ObjectLockEnabled')?.trim() !== 'Enabled') throw malformedXml('ObjectLockEnabled Enabled');
  await s3.config.putObjectLockConfiguration(s3.bucket!, readDefaultRetention(root, s3.settings.maxRetentionDays));
  return new Response(null);
}

export async function GetObjectLockConfiguration(s3: S3Context): Promise<Response> {
  const { rule } = await s3.config.getObjectLockConfiguration(s3.bucket!);
  const period = rule ? (rule.days !== undefined ? el('Days', rule.days) : el('Years', rule.years!)) : '';
  return xmlResponse(
    xmlDocument(
      'ObjectLockConfiguration',
      el('ObjectLockEnabled', 'Enabled'),
      rule ? group('Rule', group('DefaultRetention', el('Mode', rule.mode), period)) : '',
    ),
  );
}

/** `<Retention>` with Mode and RetainUntilDate, or empty (removes the retention). */
function readRetention(root: XmlElement, maxRetentionDays: number): Retention | null {
  const mode = childText(root, 'Mode')?.trim();
  const until = childText(root, 'RetainUntilDate')?.trim();
  if (mode === undefined && until === undefined) return null;
  if (!isMode(mode)) throw malformedXml('Mode GOVERNANCE or COMPLIANCE');
  if (until === undefined) throw malformedXml('RetainUntilDate with Mode');
  const iso = isoDate(until);
  if (iso === null) throw malformedXml('RetainUntilDate in ISO 8601');
  return { mode, retainUntil: futureDate(iso, 'RetainUntilDate', operatorBoundDays(mode, maxRetentionDays)) };
}

export async function PutObjectRetention(s3: S3Context): Promise<Response> {
  const root = expectRoot(parseXml(await readXmlBody(s3, { requireDigest: true })), 'Retention');
  const versionId = readVersionId(s3.query);
  await s3.store.putObjectRetention(s3.bucket!, s3.key!, readRetention(root, s3.settings.maxRetentionDays), {
    ...(versionId === undefined ? {} : { versionId }),
    bypassGovernance: readBypass(s3),
  });
  return new Response(null);
}

export async function GetObjectRetention(s3: S3Context): Promise<Response> {
  const r = await s3.store.getObjectRetention(s3.bucket!, s3.key!, readVersionId(s3.query));
  return xmlResponse(xmlDocument('Retention', el('Mode', r.mode), el('RetainUntilDate', r.retainUntil)));
}

export async function PutObjectLegalHold(s3: S3Context): Promise<Response> {
  const root = expectRoot(parseXml(await readXmlBody(s3, { requireDigest: true })), 'LegalHold');
  const status = childText(root, 'Status')?.trim();
  if (status !== 'ON' && status !== 'OFF') throw malformedXml('Status ON or OFF');
  await s3.store.putObjectLegalHold(s3.bucket!, s3.key!, status satisfies LegalHoldStatus, readVersionId(s3.query));
  return new Response(null);
}

export async function GetObjectLegalHold(s3: S3Context): Promise<Response> {
  const status = await s3.store.getObjectLegalHold(s3.bucket!, s3.key!, readVersionId(s3.query));
  return xmlResponse(xmlDocument('LegalHold', el('Status', status)));
}
