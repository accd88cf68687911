/**
 * S3 Object Lock: the retention and legal hold of one object version, a bucket's lock
 * configuration (default retention), and the rules that say what a locked version refuses.
 * Pure logic: the catalog applies these rules inside its atomic step (catalog/sql-objects.ts),
 * so every caller that removes or replaces a version (S3, lifecycle, collector, rebuild, admin)
 * meets the same check; s3/object-lock.ts reads and writes the wire forms.
 * Spec: S3 User Guide "Locking objects with Object Lock"; S3 API PutObjectRetention,
 * PutObjectLegalHold, PutObjectLockConfiguration. A version is locked while its retain-until date
 * is in the future or its legal hold is ON. COMPLIANCE: nobody removes it or shortens its
 * retention or changes its mode; GOVERNANCE: only a request with x-amz-bypass-governance-retention
 * (from a key allowed to bypass) does. A legal hold blocks deletion whatever the mode.
 */
import { S3Error } from './errors.ts';

export type RetentionMode = 'GOVERNANCE' | 'COMPLIANCE';
export type LegalHoldStatus = 'ON' | 'OFF';

export const RETENTION_MODES: readonly RetentionMode[] = ['GOVERNANCE', 'COMPLIANCE'];

/** A version's retention: its mode and retain-until date (ISO 8601, UTC). */
export interface Retention {
  mode: RetentionMode;
  retainUntil: string;
}

/** What ObjectMetadata records of a version's lock; absent fields: none set. */
export interface ObjectLockState {
  mode?: RetentionMode;
  retainUntil?: string;
  legalHold?: LegalHoldStatus;
}

/** A bucket's default retention: mode and exactly one of days or years. */
export interface DefaultRetention {
  mode: RetentionMode;
  days?: number;
  years?: number;
}

/** A lock-enabled bucket's configuration (the bucket's `object-lock` state row); rule null: no default. */
export interface ObjectLockConfig {
  rule: DefaultRetention | null;
}

/** The retention a lock state holds, if any. */
export function retentionOf(lock: ObjectLockState | undefined): Retention | null {
  return lock?.mode && lock.retainUntil ? { mode: lock.mode, retainUntil: lock.retainUntil } : null;
}

/** Whether the retention is still running at `now`. */
const running = (r: Retention | null, now: number): r is Retention => r !== null && Date.parse(r.retainUntil) > now;

/** Why a version may not be removed or replaced at `now` (null: it may). `bypass`: governance bypass asked by an allowed key. */
export function lockRefusal(lock: ObjectLockState | undefined, bypass: boolean, now: number): string | null {
  if (lock?.legalHold === 'ON') return 'the version has a legal hold';
  const r = retentionOf(lock);
  if (!running(r, now)) return null;
  if (r.mode === 'COMPLIANCE') return `the version is under COMPLIANCE retention until ${r.retainUntil}`;
  return bypass ? null : `the version is under GOVERNANCE retention until ${r.retainUntil}`;
}

/** Throws AccessDenied (as S3 answers a delete of a locked version) unless the version may go. */
export function assertRemovable(lock: ObjectLockState | undefined, bypass: boolean, now: number): void {
  const why = lockRefusal(lock, bypass, now);
  if (why !== null) throw new S3Error('AccessDenied', `Access Denied because object protected by object lock (${why}).`);
}

/**
 * PutObjectRetention's rule: a running COMPLIANCE retention may only be extended in the same
 * mode; a running GOVERNANCE one may be extended in the same mode by anyone, and shortened,
 * removed or changed to COMPLIANCE only with bypass. An expired retention may be replaced freely.
 */
export function assertRetentionChange(lock: ObjectLockState | undefined, next: Retention | null, bypass: boolean, now: number): void {
  const current = retentionOf(lock);
  if (!running(current, now)) return;
  const extends_ = next !== null && next.mode === current.mode && Date.parse(next.retainUntil) >= Date.parse(current.retainUntil);
  if (extends_) return;
  if (current.mode === 'GOVERNANCE' && bypass) return;
  throw new S3Error(
    'AccessDenied',
    `Access Denied because object protected by object lock (${current.mode} retention until ${current.retainUntil} can only be extended${current.mode === 'GOVERNANCE' ? ' without x-amz-bypass-governance-retention' : ''}).`,
  );
}

/** The retain-until date a default rule gives a version written at `now`. */
export function defaultRetainUntil(rule: DefaultRetention, now: number): string {
  const d = new Date(now);
  if (rule.years !== undefined) d.setUTCFullYear(d.getUTCFullYear() + rule.years);
  else d.setUTCDate(d.getUTCDate() + (rule.days ?? 0));
  return d.toISOString();
}

/** `lock` with the bucket's default retention when the write named no retention of its own. */
export function withDefaultRetention(lock: ObjectLockState | undefined, config: ObjectLockConfig, now: number): ObjectLockState | undefined {
  if (!config.rule || lock?.mode) return lock;
  return { ...lock, mode: config.rule.mode, retainUntil: defaultRetainUntil(config.rule, now) };
}

/** A lock state with nothing set is no lock state. */
export function compactLock(lock: ObjectLockState): ObjectLockState | undefined {
  return lock.mode || lock.retainUntil || lock.legalHold ? lock : undefined;
}
