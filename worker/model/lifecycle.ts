/**
 * S3 lifecycle rules as stored (a bucket's `lifecycle` state row, JSON) and what they decide: the
 * pure evaluator the lifecycle job (upkeep/lifecycle.ts) and the x-amz-expiration header use.
 * Spec: S3 PutBucketLifecycleConfiguration and "Lifecycle configuration elements":
 * - Expiration Days: a current version expires at its creation plus Days, rounded up to the next
 *   midnight UTC; Date: on that date (midnight UTC); in a versioned bucket expiring the current
 *   version means a DeleteObject (a delete marker), elsewhere the object goes.
 * - ExpiredObjectDeleteMarker: a current delete marker with no other version of its key is
 *   removed. A Days/Date rule removes such a marker too once it is as old as the rule says (what
 *   RGW and ceph/s3-tests expect; AWS documents the same for Days).
 * - NoncurrentVersionExpiration: a version expires NoncurrentDays after it became noncurrent
 *   (when its successor was written), rounded up to midnight, unless it is among the
 *   NewerNoncurrentVersions newest noncurrent versions.
 * - AbortIncompleteMultipartUpload: DaysAfterInitiation after the upload began.
 * - Transition (issue 44): a current version moves to StorageClass at its creation plus Days
 *   (rounded up to midnight) or on Date; NoncurrentVersionTransition: a noncurrent version
 *   NoncurrentDays after it became noncurrent, unless among the NewerNoncurrentVersions newest.
 *   Of the transitions due for a version, the one due last wins (30 days to STANDARD_IA, 90 to
 *   GLACIER: GLACIER after 90); nothing is done when the version has that class already, or
 *   when an expiration of it is due (the expiration is).
 * - Filter: prefix, tags (all must be on the version), object size bounds (strict), all of them
 *   must hold (see docs/COMPATIBILITY.md "Lifecycle" for what is accepted beyond AWS).
 * Several rules: the earliest due action wins. Disabled rules do nothing.
 * The length of a day is a parameter: 86 400 000 ms in production; shorter under the local
 * debug setting (SHARDGATE_LIFECYCLE_DAY_SECONDS), where, as with RGW's rgw_lc_debug_interval,
 * there is no rounding to a "midnight" (an age of Days short days is enough).
 */
import type { Tag } from './tagging.ts';

export const DAY_MS = 86_400_000;

/**
 * How long a new or changed configuration settles before the job acts on it: five minutes (AWS:
 * "expect a delay of a few minutes before the configuration fully takes effect"), or half a
 * lifecycle day where a day is shorter (the tests' short day, whose local timer runs every half
 * day). So a client that sets rules and then reads at once (ceph/s3-tests'
 * test_lifecycle_expiration_date lists right after setting a rule whose Date is long past) sees
 * the bucket as it was, not a race with the job; after that, rules act at the job's next run.
 */
export function configurationSettleMs(dayMs: number): number {
  return Math.min(5 * 60_000, dayMs / 2);
}

/** Whether a configuration stored at `setAt` (null: by a release that did not record it, long ago) has settled at `now`. */
export function configurationSettled(setAt: number | null, now: number, dayMs: number): boolean {
  return setAt === null || now - setAt >= configurationSettleMs(dayMs);
}

/** A rule's filter, in the form it was written (GET answers it back in that form). */
export interface LifecycleFilter {
  prefix?: string;
  tag?: Tag;
  and?: { prefix?: string; tags: Tag[]; objectSizeGreaterThan?: number; objectSizeLessThan?: number };
  objectSizeGreaterThan?: number;
  objectSizeLessThan?: number;
}

export interface LifecycleRule {
  id: string;
  status: 'Enabled' | 'Disabled';
  /** The legacy rule-level <Prefix> (exclusive with `filter`); neither: the rule had an empty <Filter/>. */
  prefix?: string;
  filter?: LifecycleFilter;
  expiration?: { days?: number; date?: string; expiredObjectDeleteMarker?: boolean };
  noncurrentVersionExpiration?: { noncurrentDays: number; newerNoncurrentVersions?: number };
  abortIncompleteMultipartUpload?: { daysAfterInitiation: number };
  /** Issue 44: each moves a current version to its storage class (Days or Date). */
  transitions?: { days?: number; date?: string; storageClass: string }[];
  noncurrentVersionTransitions?: { noncurrentDays: number; newerNoncurrentVersions?: number; storageClass: string }[];
}

/** The conditions of a rule's filter, flattened: every one must hold. */
export interface RuleConditions {
  prefixes: string[];
  tags: Tag[];
  sizeGreaterThan?: number;
  sizeLessThan?: number;
}

export function conditionsOf(rule: LifecycleRule): RuleConditions {
  const f = rule.filter ?? {};
  const prefixes = [rule.prefix, f.prefix, f.and?.prefix].filter((p): p is string => p !== undefined && p !== '');
  const tags = [...(f.tag ? [f.tag] : []), ...(f.and?.tags ?? [])];
  const gt = [f.objectSizeGreaterThan, f.and?.objectSizeGreaterThan].filter((n): n is number => n !== undefined);
  const lt = [f.objectSizeLessThan, f.and?.objectSizeLessThan].filter((n): n is number => n !== undefined);
  return { prefixes, tags, ...(gt.length ? { sizeGreaterThan: Math.max(...gt) } : {}), ...(lt.length ? { sizeLessThan: Math.min(...lt) } : {}) };
}

/** One stored version of a key as the evaluator sees it. */
export interface VersionFacts {
  /** The id S3 shows ('null' for the null version). */
  versionId: string;
  deleteMarker: boolean;
  /** Creation time (ms since the epoch). */
  lastModified: number;
  size: number;
  tags: Tag[];
  /** An object version's ETag (quoted): the job expires a current version only while it still has it. */
  etag?: string;
  /** An object version's storage class (absent: STANDARD). */
  storageClass?: string;
}

const hasTag = (tags: Tag[], t: Tag) => tags.some((x) => x.key === t.key && x.value === t.value);

/** Whether `rule` applies to this version of `key`. Delete markers have no size or tags: a rule with tag conditions never applies to one; size bounds are not judged for them. */
export function ruleMatches(c: RuleConditions, key: string, v: Pick<VersionFacts, 'deleteMarker' | 'size' | 'tags'>): boolean {
  if (!c.prefixes.every((p) => key.startsWith(p))) return false;
  if (v.deleteMarker) return c.tags.length === 0;
  if (!c.tags.every((t) => hasTag(v.tags, t))) return false;
  if (c.sizeGreaterThan !== undefined && !(v.size > c.sizeGreaterThan)) return false;
  if (c.sizeLessThan !== undefined && !(v.size < c.sizeLessThan)) return false;
  return true;
}

/** `startMs` plus `days`, rounded up to the next midnight UTC with real days (AWS); unrounded with a debug day. */
export function dueAt(startMs: number, days: number, dayMs: number): number {
  const t = startMs + days * dayMs;
  return dayMs === DAY_MS ? Math.ceil(t / DAY_MS) * DAY_MS : t;
}

/** When a current version (not a delete marker) expires under `rule`, or null if never. */
function currentDue(rule: LifecycleRule, lastModified: number, dayMs: number): number | null {
  const e = rule.expiration;
  if (!e) return null;
  if (e.days !== undefined) return dueAt(lastModified, e.days, dayMs);
  if (e.date !== undefined) return Date.parse(e.date);
  return null;
}

export type LifecycleAction =
  /** DeleteObject without a version id: a delete marker in a versioned bucket, the object gone otherwise. */
  | { kind: 'expire-current'; ruleId: string }
  /** DeleteObject of this version (a noncurrent version, or an expired object delete marker). */
  | { kind: 'delete-version'; versionId: string; ruleId: string; marker: boolean }
  /** Rewrite this version (current or not) under `storageClass`'s policy (issue 44). */
  | { kind: 'transition'; versionId: string; ruleId: string; storageClass: string };

/**
 * What is due now for one key, given all its versions newest first (the first is current).
 * At most one action per version; a key whose current version expires keeps its noncurrent
 * versions for later passes to judge (they became noncurrent earlier and are judged on that).
 */
export function dueActions(rules: LifecycleRule[], key: string, versions: VersionFacts[], now: number, dayMs: number): LifecycleAction[] {
  const enabled = rules.filter((r) => r.status === 'Enabled').map((r) => ({ r, c: conditionsOf(r) }));
  if (!enabled.length || !versions.length) return [];
  const out: LifecycleAction[] = [];
  const [current, ...older] = versions as [VersionFacts, ...VersionFacts[]];
  if (!current.deleteMarker) {
    const rule = earliest(enabled, key, current, (r) => currentDue(r, current.lastModified, dayMs), now);
    if (rule) out.push({ kind: 'expire-current', ruleId: rule });
    else {
      const t = latestTransition(
        enabled,
        key,
        current,
        (r) =>
          (r.transitions ?? []).map((x) => ({
            at: x.days !== undefined ? dueAt(current.lastModified, x.days, dayMs) : Date.parse(x.date!),
            storageClass: x.storageClass,
          })),
        now,
      );
      if (t) out.push({ kind: 'transition', versionId: current.versionId, ruleId: t.ruleId, storageClass: t.storageClass });
    }
  } else if (older.length === 0) {
    // An expired object delete marker: ExpiredObjectDeleteMarker removes it now; Days/Date once it is that old.
    const rule = earliest(
      enabled,
      key,
      current,
      (r) => (r.expiration?.expiredObjectDeleteMarker ? current.lastModified : currentDue(r, current.lastModified, dayMs)),
      now,
    );
    if (rule) out.push({ kind: 'delete-version', versionId: current.versionId, ruleId: rule, marker: true });
  }
  // Noncurrent versions: version i became noncurrent when version i-1 (its successor) was written.
  older.forEach((v, i) => {
    const successor = versions[i]!;
    const rank = i + 1; // 1: the newest noncurrent version
    const rule = earliest(
      enabled,
      key,
      v,
      (r) => {
        const n = r.noncurrentVersionExpiration;
        if (!n || rank <= (n.newerNoncurrentVersions ?? 0)) return null;
        return dueAt(successor.lastModified, n.noncurrentDays, dayMs);
      },
      now,
    );
    if (rule) out.push({ kind: 'delete-version', versionId: v.versionId, ruleId: rule, marker: v.deleteMarker });
    else if (!v.deleteMarker) {
      const t = latestTransition(
        enabled,
        key,
        v,
        (r) =>
          (r.noncurrentVersionTransitions ?? [])
            .filter((x) => rank > (x.newerNoncurrentVersions ?? 0))
            .map((x) => ({ at: dueAt(successor.lastModified, x.noncurrentDays, dayMs), storageClass: x.storageClass })),
        now,
      );
      if (t) out.push({ kind: 'transition', versionId: v.versionId, ruleId: t.ruleId, storageClass: t.storageClass });
    }
  });
  return out;
}

/**
 * The transition of `v` due last by `now` among the matching rules' (the furthest one a version
 * has reached), unless `v` has its class already: null then, or when none is due.
 */
function latestTransition(
  rules: { r: LifecycleRule; c: RuleConditions }[],
  key: string,
  v: VersionFacts,
  due: (r: LifecycleRule) => { at: number; storageClass: string }[],
  now: number,
): { ruleId: string; storageClass: string } | null {
  let best: { at: number; ruleId: string; storageClass: string } | null = null;
  for (const { r, c } of rules) {
    if (!ruleMatches(c, key, v)) continue;
    for (const t of due(r)) if (t.at <= now && (best === null || t.at > best.at)) best = { ...t, ruleId: r.id };
  }
  return best && best.storageClass !== (v.storageClass ?? 'STANDARD') ? best : null;
}

/** The id of the matching rule whose action for `v` is due earliest, if one is due by `now`. */
function earliest(
  rules: { r: LifecycleRule; c: RuleConditions }[],
  key: string,
  v: VersionFacts,
  due: (r: LifecycleRule) => number | null,
  now: number,
): string | null {
  let best: { at: number; id: string } | null = null;
  for (const { r, c } of rules) {
    if (!ruleMatches(c, key, v)) continue;
    const at = due(r);
    if (at !== null && at <= now && (best === null || at < best.at)) best = { at, id: r.id };
  }
  return best?.id ?? null;
}

/**
 * Whether a multipart upload of `key` begun at `initiated` is due to be aborted. Only a rule's
 * prefix is judged: an upload has no tags or size yet, so a rule with tag or size conditions
 * aborts nothing (AWS refuses tags with this action; sizes: our conservative choice).
 */
export function uploadAbortDue(rules: LifecycleRule[], key: string, initiated: number, now: number, dayMs: number): string | null {
  let best: { at: number; id: string } | null = null;
  for (const r of rules) {
    const a = r.abortIncompleteMultipartUpload;
    if (r.status !== 'Enabled' || !a) continue;
    const c = conditionsOf(r);
    if (c.tags.length || c.sizeGreaterThan !== undefined || c.sizeLessThan !== undefined) continue;
    if (!c.prefixes.every((p) => key.startsWith(p))) continue;
    const at = dueAt(initiated, a.daysAfterInitiation, dayMs);
    if (at <= now && (best === null || at < best.at)) best = { at, id: r.id };
  }
  return best?.id ?? null;
}

/** When (ms) a lifecycle rule will expire a current object, and which rule: what x-amz-expiration states. */
export interface ObjectExpiration {
  date: number;
  ruleId: string;
}

/**
 * The x-amz-expiration of a current object: the earliest Days/Date expiration that applies, in
 * real days (as S3 states it). The one computation behind the header on GET, HEAD and the writes
 * (PutObject, CopyObject, CompleteMultipartUpload), made in the catalog call each already makes.
 */
export function objectExpiration(rules: LifecycleRule[], key: string, o: { lastModified: number; size: number; tags: Tag[] }): ObjectExpiration | null {
  let best: ObjectExpiration | null = null;
  for (const r of rules) {
    if (r.status !== 'Enabled' || !ruleMatches(conditionsOf(r), key, { deleteMarker: false, ...o })) continue;
    const at = currentDue(r, o.lastModified, DAY_MS);
    if (at !== null && (best === null || at < best.date)) best = { date: at, ruleId: r.id };
  }
  return best;
}

/** The header's value: `expiry-date="Fri, 23 Dec 2012 00:00:00 GMT", rule-id="..."`. */
export function expirationHeader(e: ObjectExpiration): string {
  return `expiry-date="${new Date(e.date).toUTCString()}", rule-id="${e.ruleId.replace(/["\\]/g, '\\$&')}"`;
}
