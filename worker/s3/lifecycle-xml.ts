/**
 * The LifecycleConfiguration document: parsed and validated into model/lifecycle.ts's rules, and
 * rendered back in the form it was written (legacy rule-level <Prefix>, or <Filter>).
 * Spec: S3 PutBucketLifecycleConfiguration, "Lifecycle configuration elements". Errors as AWS:
 * 1 to 1000 <Rule>s (MalformedXML); ID at most 255 characters and unique (InvalidArgument; an
 * absent ID gets a generated one, a UUID); Status Enabled or Disabled (MalformedXML); both <Prefix> and
 * <Filter> in one rule, or neither (MalformedXML); at least one action (InvalidRequest); Days,
 * NoncurrentDays, DaysAfterInitiation positive integers, NewerNoncurrentVersions 1 to 100
 * (InvalidArgument); Date ISO 8601 at midnight UTC (InvalidArgument; unparsable: MalformedXML);
 * exactly one of Days, Date, ExpiredObjectDeleteMarker in <Expiration> (MalformedXML);
 * ExpiredObjectDeleteMarker or AbortIncompleteMultipartUpload with tag filters (InvalidRequest).
 * Transitions (issue 44): <Transition> with exactly one of Days (0 or more) and Date, and a
 * StorageClass; <NoncurrentVersionTransition> with NoncurrentDays (0 or more), an optional
 * NewerNoncurrentVersions and a StorageClass (MalformedXML without one; whether the class is
 * configured is the store's to say: InvalidStorageClass); at most one transition per class in a
 * rule (InvalidArgument).
 * Beyond AWS (as RGW): a <Filter> may hold several of Prefix, Tag, And, ObjectSize*: all must
 * hold (docs/COMPATIBILITY.md "Lifecycle").
 */
import { S3Error } from '../model/errors.ts';
import type { LifecycleFilter, LifecycleRule } from '../model/lifecycle.ts';
import type { Tag } from '../model/tagging.ts';
import { el, group, xmlDocument } from './xml.ts';
import { childText, childrenNamed, expectRoot, malformedXml, parseXml, type XmlElement } from './xml-parse.ts';

export const MAX_LIFECYCLE_RULES = 1000;
const MAX_ID_CHARS = 255;

const invalid = (message: string, name?: string, value?: string) =>
  new S3Error('InvalidArgument', message, name === undefined ? undefined : { ArgumentName: name, ...(value === undefined ? {} : { ArgumentValue: value }) });

function one(parent: XmlElement, name: string): XmlElement | undefined {
  const found = childrenNamed(parent, name);
  if (found.length > 1) throw malformedXml(`<${name}> repeated in <${parent.name}>`);
  return found[0];
}

/** A positive integer (InvalidArgument otherwise; not a number at all: MalformedXML). */
function positive(text: string, name: string, what: string): number {
  const t = text.trim();
  if (!/^-?\d+$/.test(t)) throw malformedXml(`${name} must be an integer`);
  const n = Number(t);
  if (!(n > 0) || !Number.isSafeInteger(n)) throw invalid(`'${name}' for ${what} must be a positive integer`, name, t);
  return n;
}

/** ISO 8601 date at midnight UTC ('2017-09-27' or '2017-09-27T00:00:00(.000)Z'), as an ISO string. */
function midnightDate(text: string, name: string): string {
  const t = text.trim();
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(Z|[+-]00:?00)?)?$/.exec(t);
  const ms = m ? Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4] ?? '00'}:${m[5] ?? '00'}:${m[6] ?? '00'}Z`) : NaN;
  if (!m || Number.isNaN(ms) || new Date(ms).getUTCDate() !== Number(m[3])) throw malformedXml(`${name} must be an ISO 8601 date`);
  if (ms % 86_400_000 !== 0) throw invalid(`'${name}' must be at midnight GMT`, name, t);
  return new Date(ms).toISOString();
}

function size(text: string, name: string): number {
  const t = text.trim();
  if (!/^\d{1,16}$/.test(t)) throw malformedXml(`${name} must be a non-negative integer`);
  return Number(t);
}

function tagOf(e: XmlElement): Tag {
  const key = childText(e, 'Key');
  if (key === undefined) throw malformedXml('a Tag needs a Key');
  return { key, value: childText(e, 'Value') ?? '' };
}

function parseFilter(f: XmlElement): LifecycleFilter {
  const out: LifecycleFilter = {};
  const prefix = childText(f, 'Prefix');
  if (prefix !== undefined) out.prefix = prefix;
  const tag = one(f, 'Tag');
  if (tag) out.tag = tagOf(tag);
  const gt = childText(f, 'ObjectSizeGreaterThan');
  if (gt !== undefined) out.objectSizeGreaterThan = size(gt, 'ObjectSizeGreaterThan');
  const lt = childText(f, 'ObjectSizeLessThan');
  if (lt !== undefined) out.objectSizeLessThan = size(lt, 'ObjectSizeLessThan');
  const and = one(f, 'And');
  if (and) {
    const a: NonNullable<LifecycleFilter['and']> = { tags: childrenNamed(and, 'Tag').map(tagOf) };
    const p = childText(and, 'Prefix');
    if (p !== undefined) a.prefix = p;
    const agt = childText(and, 'ObjectSizeGreaterThan');
    if (agt !== undefined) a.objectSizeGreaterThan = size(agt, 'ObjectSizeGreaterThan');
    const alt = childText(and, 'ObjectSizeLessThan');
    if (alt !== undefined) a.objectSizeLessThan = size(alt, 'ObjectSizeLessThan');
    out.and = a;
  }
  const tags = [...(out.tag ? [out.tag] : []), ...(out.and?.tags ?? [])];
  if (new Set(tags.map((t) => t.key)).size !== tags.length) throw invalid('Duplicate Tag Keys are not allowed');
  const gts = [out.objectSizeGreaterThan, out.and?.objectSizeGreaterThan].filter((n) => n !== undefined);
  const lts = [out.objectSizeLessThan, out.and?.objectSizeLessThan].filter((n) => n !== undefined);
  if (gts.length && lts.length && Math.max(...gts) >= Math.min(...lts))
    throw invalid('ObjectSizeGreaterThan must be less than ObjectSizeLessThan', 'ObjectSizeGreaterThan');
  return out;
}

function parseExpiration(e: XmlElement): NonNullable<LifecycleRule['expiration']> {
  const days = childText(e, 'Days');
  const date = childText(e, 'Date');
  const marker = childText(e, 'ExpiredObjectDeleteMarker')?.trim();
  if ([days, date, marker].filter((x) => x !== undefined).length !== 1)
    throw malformedXml('Expiration takes exactly one of Days, Date and ExpiredObjectDeleteMarker');
  if (days !== undefined) return { days: positive(days, 'Days', 'Expiration action') };
  if (date !== undefined) return { date: midnightDate(date, 'Date') };
  if (marker !== 'true' && marker !== 'false') throw malformedXml('ExpiredObjectDeleteMarker is true or false');
  return { expiredObjectDeleteMarker: marker === 'true' };
}

/** A non-negative integer of days (a transition may be due at once: 0). */
function days(text: string, name: string): number {
  const t = text.trim();
  if (!/^\d{1,9}$/.test(t)) throw malformedXml(`${name} must be a non-negative integer`);
  return Number(t);
}

function storageClassOf(t: XmlElement): string {
  const sc = childText(t, 'StorageClass')?.trim();
  if (!sc) throw malformedXml(`<${t.name}> needs a StorageClass`);
  return sc;
}

function onePerClass(classes: string[]): void {
  if (new Set(classes).size !== classes.length) throw invalid("'StorageClass' must be different for each transition of a rule", 'StorageClass');
}

/** Transitions of current versions (Days or Date) and of noncurrent ones. */
function parseTransitions(r: XmlElement, rule: LifecycleRule): void {
  const current = childrenNamed(r, 'Transition').map((t) => {
    const d = childText(t, 'Days');
    const date = childText(t, 'Date');
    if ((d === undefined) === (date === undefined)) throw malformedXml('Transition takes exactly one of Days and Date');
    const storageClass = storageClassOf(t);
    return d !== undefined ? { days: days(d, 'Days'), storageClass } : { date: midnightDate(date!, 'Date'), storageClass };
  });
  const noncurrent = childrenNamed(r, 'NoncurrentVersionTransition').map((t) => {
    const d = childText(t, 'NoncurrentDays');
    if (d === undefined) throw malformedXml('NoncurrentVersionTransition needs NoncurrentDays');
    const out: NonNullable<LifecycleRule['noncurrentVersionTransitions']>[number] = {
      noncurrentDays: days(d, 'NoncurrentDays'),
      storageClass: storageClassOf(t),
    };
    const newer = childText(t, 'NewerNoncurrentVersions');
    if (newer !== undefined) {
      const n = positive(newer, 'NewerNoncurrentVersions', 'NoncurrentVersionTransition action');
      if (n > 100) throw invalid("'NewerNoncurrentVersions' must be at most 100", 'NewerNoncurrentVersions', newer.trim());
      out.newerNoncurrentVersions = n;
    }
    return out;
  });
  onePerClass(current.map((t) => t.storageClass));
  onePerClass(noncurrent.map((t) => t.storageClass));
  if (current.length) rule.transitions = current;
  if (noncurrent.length) rule.noncurrentVersionTransitions = noncurrent;
}

function parseRule(r: XmlElement): LifecycleRule {
  const id = childText(r, 'ID');
  if (id !== undefined && id.length > MAX_ID_CHARS) throw invalid(`ID length should not exceed allowed limit of ${MAX_ID_CHARS}`, 'ID', id);
  const status = childText(r, 'Status')?.trim();
  if (status !== 'Enabled' && status !== 'Disabled') throw malformedXml('Status is Enabled or Disabled');
  const prefix = childText(r, 'Prefix');
  const filter = one(r, 'Filter');
  if (prefix !== undefined && filter) throw malformedXml('a rule takes <Prefix> or <Filter>, not both');
  if (prefix === undefined && !filter) throw malformedXml('a rule needs <Filter> (or the legacy <Prefix>)');
  const rule: LifecycleRule = { id: id ?? crypto.randomUUID(), status };
  if (prefix !== undefined) rule.prefix = prefix;
  if (filter) rule.filter = parseFilter(filter);
  const expiration = one(r, 'Expiration');
  if (expiration) rule.expiration = parseExpiration(expiration);
  const noncurrent = one(r, 'NoncurrentVersionExpiration');
  if (noncurrent) {
    const days = childText(noncurrent, 'NoncurrentDays');
    if (days === undefined) throw malformedXml('NoncurrentVersionExpiration needs NoncurrentDays');
    rule.noncurrentVersionExpiration = { noncurrentDays: positive(days, 'NoncurrentDays', 'NoncurrentVersionExpiration action') };
    const newer = childText(noncurrent, 'NewerNoncurrentVersions');
    if (newer !== undefined) {
      const n = positive(newer, 'NewerNoncurrentVersions', 'NoncurrentVersionExpiration action');
      if (n > 100) throw invalid("'NewerNoncurrentVersions' must be at most 100", 'NewerNoncurrentVersions', newer.trim());
      rule.noncurrentVersionExpiration.newerNoncurrentVersions = n;
    }
  }
  const abort = one(r, 'AbortIncompleteMultipartUpload');
  if (abort) {
    const days = childText(abort, 'DaysAfterInitiation');
    if (days === undefined) throw malformedXml('AbortIncompleteMultipartUpload needs DaysAfterInitiation');
    rule.abortIncompleteMultipartUpload = { daysAfterInitiation: positive(days, 'DaysAfterInitiation', 'AbortIncompleteMultipartUpload action') };
  }
  parseTransitions(r, rule);
  const tagged = !!(rule.filter?.tag || rule.filter?.and?.tags.length);
  if (tagged && rule.expiration?.expiredObjectDeleteMarker)
    throw new S3Error('InvalidRequest', 'ExpiredObjectDeleteMarker cannot be specified with object tags');
  if (tagged && rule.abortIncompleteMultipartUpload) throw new S3Error('InvalidRequest', 'AbortIncompleteMultipartUpload cannot be specified with Tags');
  const acts =
    rule.expiration || rule.noncurrentVersionExpiration || rule.abortIncompleteMultipartUpload || rule.transitions || rule.noncurrentVersionTransitions;
  if (!acts) throw new S3Error('InvalidRequest', 'At least one action needs to be specified in a rule');
  return rule;
}

export function parseLifecycleConfiguration(xml: string): LifecycleRule[] {
  const rules = childrenNamed(expectRoot(parseXml(xml), 'LifecycleConfiguration'), 'Rule');
  if (rules.length === 0 || rules.length > MAX_LIFECYCLE_RULES) throw malformedXml(`1 to ${MAX_LIFECYCLE_RULES} Rule elements`);
  const parsed = rules.map(parseRule);
  const ids = new Set<string>();
  for (const r of parsed) {
    if (ids.has(r.id)) throw invalid('Rule ID must be unique. Found same ID for more than one rule', 'ID', r.id);
    ids.add(r.id);
  }
  return parsed;
}

const tagXml = (t: Tag) => group('Tag', el('Key', t.key), el('Value', t.value));

function filterXml(f: LifecycleFilter): string {
  const a = f.and;
  return group(
    'Filter',
    el('Prefix', f.prefix),
    f.tag ? tagXml(f.tag) : '',
    el('ObjectSizeGreaterThan', f.objectSizeGreaterThan),
    el('ObjectSizeLessThan', f.objectSizeLessThan),
    a
      ? group(
          'And',
          el('Prefix', a.prefix),
          ...a.tags.map(tagXml),
          el('ObjectSizeGreaterThan', a.objectSizeGreaterThan),
          el('ObjectSizeLessThan', a.objectSizeLessThan),
        )
      : '',
  );
}

export function lifecycleConfigurationXml(rules: LifecycleRule[]): string {
  const rule = (r: LifecycleRule) => {
    const e = r.expiration;
    const n = r.noncurrentVersionExpiration;
    return group(
      'Rule',
      el('ID', r.id),
      r.prefix !== undefined ? el('Prefix', r.prefix) : '',
      r.filter ? filterXml(r.filter) : '',
      el('Status', r.status),
      e ? group('Expiration', el('Days', e.days), el('Date', e.date), el('ExpiredObjectDeleteMarker', e.expiredObjectDeleteMarker)) : '',
      ...(r.transitions ?? []).map((t) => group('Transition', el('Days', t.days), el('Date', t.date), el('StorageClass', t.storageClass))),
      ...(r.noncurrentVersionTransitions ?? []).map((t) =>
        group(
          'NoncurrentVersionTransition',
          el('NoncurrentDays', t.noncurrentDays),
          el('NewerNoncurrentVersions', t.newerNoncurrentVersions),
          el('StorageClass', t.storageClass),
        ),
      ),
      n ? group('NoncurrentVersionExpiration', el('NoncurrentDays', n.noncurrentDays), el('NewerNoncurrentVersions', n.newerNoncurrentVersions)) : '',
      r.abortIncompleteMultipartUpload
        ? group('AbortIncompleteMultipartUpload', el('DaysAfterInitiation', r.abortIncompleteMultipartUpload.daysAfterInitiation))
        : '',
    );
  };
  return xmlDocument('LifecycleConfiguration', ...rules.map(rule));
}
