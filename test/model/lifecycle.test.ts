/**
 * The lifecycle rule evaluator (model/lifecycle.ts): due dates rounded to midnight UTC with real
 * days and unrounded with a debug day, filters (prefix, tags, sizes, all of them), current
 * versions, noncurrent versions with NewerNoncurrentVersions, expired object delete markers,
 * several rules (the earliest due wins), Disabled rules, uploads, and the x-amz-expiration value.
 */
import { describe, expect, it } from 'vitest';
import {
  configurationSettled,
  configurationSettleMs,
  DAY_MS,
  dueActions,
  dueAt,
  expirationHeader,
  objectExpiration,
  uploadAbortDue,
  type LifecycleRule,
  type VersionFacts,
} from '../../worker/model/lifecycle.ts';

const T0 = Date.parse('2026-01-01T10:30:00Z');
const v = (id: string, at: number, o: Partial<VersionFacts> = {}): VersionFacts => ({
  versionId: id,
  deleteMarker: false,
  lastModified: at,
  size: 100,
  tags: [],
  ...o,
});
const marker = (id: string, at: number): VersionFacts => v(id, at, { deleteMarker: true, size: 0 });
const rule = (r: Partial<LifecycleRule>): LifecycleRule => ({ id: 'r', status: 'Enabled', filter: {}, ...r });

describe('dueAt', () => {
  it('adds the days and rounds up to the next midnight UTC (AWS)', () => {
    expect(new Date(dueAt(T0, 3, DAY_MS)).toISOString()).toBe('2026-01-05T00:00:00.000Z');
    expect(dueAt(Date.parse('2026-01-01T00:00:00Z'), 1, DAY_MS)).toBe(Date.parse('2026-01-02T00:00:00Z'));
  });
  it('does not round with a debug day', () => {
    expect(dueAt(T0, 2, 10_000)).toBe(T0 + 20_000);
  });
});

describe('current versions', () => {
  const days1 = rule({ id: 'd1', prefix: 'logs/', expiration: { days: 1 } });
  it('expire once due, not before', () => {
    const due = Date.parse('2026-01-03T00:00:00Z');
    expect(dueActions([days1], 'logs/a', [v('a', T0)], due - 1, DAY_MS)).toEqual([]);
    expect(dueActions([days1], 'logs/a', [v('a', T0)], due, DAY_MS)).toEqual([{ kind: 'expire-current', ruleId: 'd1' }]);
  });
  it('respect the prefix', () => {
    expect(dueActions([days1], 'other/a', [v('a', T0)], T0 + 10 * DAY_MS, DAY_MS)).toEqual([]);
  });
  it('a Date rule expires everything matching on and after the date', () => {
    const r = rule({ id: 'date', expiration: { date: '2026-02-01T00:00:00.000Z' } });
    expect(dueActions([r], 'k', [v('a', T0)], Date.parse('2026-01-31T23:59:59Z'), DAY_MS)).toEqual([]);
    expect(dueActions([r], 'k', [v('a', T0)], Date.parse('2026-02-01T00:00:00Z'), DAY_MS)).toHaveLength(1);
  });
  it('Disabled rules do nothing', () => {
    expect(dueActions([{ ...days1, status: 'Disabled' }], 'logs/a', [v('a', T0)], T0 + 10 * DAY_MS, DAY_MS)).toEqual([]);
  });
  it('size bounds are strict and all conditions must hold', () => {
    const r = rule({
      id: 's',
      filter: { and: { prefix: 'p/', tags: [{ key: 't', value: '1' }], objectSizeGreaterThan: 100, objectSizeLessThan: 1000 } },
      expiration: { days: 1 },
    });
    const later = T0 + 5 * DAY_MS;
    const tagged = [{ key: 't', value: '1' }];
    expect(dueActions([r], 'p/x', [v('a', T0, { size: 500, tags: tagged })], later, DAY_MS)).toHaveLength(1);
    expect(dueActions([r], 'p/x', [v('a', T0, { size: 100, tags: tagged })], later, DAY_MS)).toEqual([]);
    expect(dueActions([r], 'p/x', [v('a', T0, { size: 1000, tags: tagged })], later, DAY_MS)).toEqual([]);
    expect(dueActions([r], 'p/x', [v('a', T0, { size: 500, tags: [{ key: 't', value: '2' }] })], later, DAY_MS)).toEqual([]);
    expect(dueActions([r], 'q/x', [v('a', T0, { size: 500, tags: tagged })], later, DAY_MS)).toEqual([]);
  });
  it('of several rules, the one due earliest is named', () => {
    const rules = [rule({ id: 'late', expiration: { days: 5 } }), rule({ id: 'early', expiration: { days: 2 } })];
    expect(dueActions(rules, 'k', [v('a', T0)], T0 + 10 * DAY_MS, DAY_MS)).toEqual([{ kind: 'expire-current', ruleId: 'early' }]);
  });
});

describe('noncurrent versions', () => {
  // Newest first: c (current, written at T0+3d), b (noncurrent since c), a (noncurrent since b).
  const versions = [v('c', T0 + 3 * DAY_MS), v('b', T0 + 2 * DAY_MS), v('a', T0)];
  it('count their days from when they became noncurrent', () => {
    const r = rule({ id: 'nc', noncurrentVersionExpiration: { noncurrentDays: 2 } });
    // a became noncurrent at T0+2d (10:30) -> due 2026-01-06T00:00; b at T0+3d -> due 2026-01-07T00:00.
    expect(dueActions([r], 'k', versions, Date.parse('2026-01-05T23:59:59Z'), DAY_MS)).toEqual([]);
    expect(dueActions([r], 'k', versions, Date.parse('2026-01-06T00:00:00Z'), DAY_MS)).toEqual([
      { kind: 'delete-version', versionId: 'a', ruleId: 'nc', marker: false },
    ]);
    expect(dueActions([r], 'k', versions, Date.parse('2026-01-07T00:00:00Z'), DAY_MS).map((a) => a.kind === 'delete-version' && a.versionId)).toEqual([
      'b',
      'a',
    ]);
  });
  it('keep the NewerNoncurrentVersions newest', () => {
    const r = rule({ id: 'nc', noncurrentVersionExpiration: { noncurrentDays: 1, newerNoncurrentVersions: 1 } });
    expect(dueActions([r], 'k', versions, T0 + 30 * DAY_MS, DAY_MS)).toEqual([{ kind: 'delete-version', versionId: 'a', ruleId: 'nc', marker: false }]);
  });
  it('never touch the current version', () => {
    const r = rule({ noncurrentVersionExpiration: { noncurrentDays: 1 } });
    expect(dueActions([r], 'k', [v('c', T0)], T0 + 30 * DAY_MS, DAY_MS)).toEqual([]);
  });
});

describe('delete markers', () => {
  it('ExpiredObjectDeleteMarker removes a marker that is the only version left, at once', () => {
    const r = rule({ id: 'm', expiration: { expiredObjectDeleteMarker: true } });
    expect(dueActions([r], 'k', [marker('m1', T0)], T0, DAY_MS)).toEqual([{ kind: 'delete-version', versionId: 'm1', ruleId: 'm', marker: true }]);
    expect(dueActions([r], 'k', [marker('m1', T0), v('a', T0 - 1)], T0 + 9 * DAY_MS, DAY_MS)).toEqual([]);
  });
  it('a Days rule removes a lone marker once it is as old as the rule says', () => {
    const r = rule({ id: 'd5', expiration: { days: 5 } });
    expect(dueActions([r], 'k', [marker('m1', T0)], T0 + 4 * DAY_MS, DAY_MS)).toEqual([]);
    expect(dueActions([r], 'k', [marker('m1', T0)], T0 + 6 * DAY_MS, DAY_MS)).toHaveLength(1);
  });
  it('a rule with tag conditions never applies to a marker', () => {
    const r = rule({ filter: { tag: { key: 'a', value: 'b' } }, expiration: { days: 1 } });
    expect(dueActions([r], 'k', [marker('m1', T0)], T0 + 9 * DAY_MS, DAY_MS)).toEqual([]);
  });
});

describe('uploads', () => {
  const r = rule({ id: 'mp', prefix: 'up/', abortIncompleteMultipartUpload: { daysAfterInitiation: 2 } });
  it('are aborted DaysAfterInitiation after they began, by prefix', () => {
    expect(uploadAbortDue([r], 'up/a', T0, Date.parse('2026-01-03T23:59:59Z'), DAY_MS)).toBeNull();
    expect(uploadAbortDue([r], 'up/a', T0, Date.parse('2026-01-04T00:00:00Z'), DAY_MS)).toBe('mp');
    expect(uploadAbortDue([r], 'other/a', T0, T0 + 9 * DAY_MS, DAY_MS)).toBeNull();
  });
  it('a rule with size conditions aborts none (an upload has no size yet)', () => {
    const sized = rule({ filter: { objectSizeGreaterThan: 1 }, abortIncompleteMultipartUpload: { daysAfterInitiation: 1 } });
    expect(uploadAbortDue([sized], 'k', T0, T0 + 9 * DAY_MS, DAY_MS)).toBeNull();
  });
});

describe('x-amz-expiration', () => {
  it('names the earliest Days/Date rule, in real days, as S3 writes the header', () => {
    const rules = [
      rule({ id: 'late', expiration: { days: 30 } }),
      rule({ id: 'soon "quoted"', expiration: { days: 1 } }),
      rule({ id: 'nc', noncurrentVersionExpiration: { noncurrentDays: 1 } }),
    ];
    const e = objectExpiration(rules, 'k', { lastModified: T0, size: 1, tags: [] })!;
    expect(e).toEqual({ date: Date.parse('2026-01-03T00:00:00Z'), ruleId: 'soon "quoted"' });
    expect(expirationHeader(e)).toBe('expiry-date="Sat, 03 Jan 2026 00:00:00 GMT", rule-id="soon \\"quoted\\""');
  });
  it('is absent when no expiration rule applies', () => {
    expect(objectExpiration([rule({ prefix: 'x/', expiration: { days: 1 } })], 'k', { lastModified: T0, size: 1, tags: [] })).toBeNull();
  });
});

describe('a new configuration settles before the job acts on it', () => {
  it('five minutes with real days, half a day with a short test day', () => {
    expect(configurationSettleMs(DAY_MS)).toBe(5 * 60_000);
    expect(configurationSettleMs(10_000)).toBe(5_000);
    expect(configurationSettled(T0, T0 + 4_999, 10_000)).toBe(false);
    expect(configurationSettled(T0, T0 + 5_000, 10_000)).toBe(true);
    expect(configurationSettled(T0, T0 + 5 * 60_000 - 1, DAY_MS)).toBe(false);
  });
  it('a configuration stored without its time (an earlier release) counts as settled', () => {
    expect(configurationSettled(null, T0, DAY_MS)).toBe(true);
  });
});
