/**
 * The bucket settings a split bucket's partitions hold a copy of (docs/PARTITIONS.md). The root
 * owns every setting; a partition needs some of them inside its own transactions: versioning and
 * object lock decide what a commit writes, the quota (with each partition's share: quota.ts) what it may add, the policy, public access block, default encryption and owner are the stamp a
 * request is fenced by, logging rides on replies, lifecycle is read by upkeep where the versions
 * are, the notification rules are matched where a change commits. The root pushes them to each partition after every change, numbered by a generation
 * (a partition ignores a push older than the one it holds, so two pushes racing cannot leave an
 * older copy), with a pending row written before the push and cleared after: a push cut short
 * (an instance restarted, a partition unreachable) is redone by the root's alarm, so a copy is
 * behind only for the moments a change takes to propagate, as an S3 change takes effect when
 * its call returns.
 * `retiring` is set while the bucket is being deleted: every partition then refuses writes, so
 * the emptiness check over several partitions cannot be passed by a write (durable-catalog.ts
 * removeBucket).
 */
import { LIFECYCLE, LIFECYCLE_SET_AT } from './sql-lifecycle.ts';
import { PUBLIC_ACCESS_BLOCK_ROW } from '../model/public-access-block.ts';
import { QUOTA_ROW } from './quota.ts';
import { OWNER_ROW } from '../model/account.ts';
import { ACL_ROW, OWNERSHIP_ROW } from '../model/acl.ts';
import { DEFAULT_ENCRYPTION_ROW } from '../model/default-encryption.ts';

/** State row: set while a split bucket is being deleted (its value: when it started, ms). */
export const RETIRING = 'retiring';
/** State rows copied from the root to every partition. */
// 'notification': the event rules (sql-outbox.ts NOTIFICATION), matched where the change commits.
export const MIRRORED_STATE = [
  'versioning',
  'object-lock',
  'policy',
  PUBLIC_ACCESS_BLOCK_ROW,
  'logging',
  LIFECYCLE,
  LIFECYCLE_SET_AT,
  RETIRING,
  QUOTA_ROW,
  'notification',
  // The default encryption and the owning account (model/account.ts): part of the settings stamp
  // a request is fenced by (model/bucket-settings.ts), so a partition's stamp is its root's. Before
  // the default encryption was mirrored, a split bucket with one had partitions whose stamp
  // differed: every object request there was answered with their settings and repeated, and this
  // isolate's view of the bucket lost the default encryption its next write reads. A bucket split
  // before gets the row with its root's next change of a mirrored setting.
  DEFAULT_ENCRYPTION_ROW,
  OWNER_ROW,
  // Object Ownership and the bucket ACL (model/acl.ts): request-path settings too, for the same reason.
  OWNERSHIP_ROW,
  ACL_ROW,
] as const;
/** Root and partitions: the generation of the copy (a number). */
export const MIRROR_GENERATION = 'mirror-generation';
/** Root: a push not known to have reached every partition (its generation). */
export const MIRROR_PENDING = 'mirror-pending';

/** One push: the rows (null: absent) at a generation. */
export interface Mirror {
  generation: number;
  rows: Record<string, string | null>;
}

/** The mirrored rows as `read` finds them. */
export function mirrorRows(read: (name: string) => string | null): Record<string, string | null> {
  return Object.fromEntries(MIRRORED_STATE.map((name) => [name, read(name)]));
}

export function sameRows(a: Record<string, string | null>, b: Record<string, string | null>): boolean {
  return MIRRORED_STATE.every((name) => a[name] === b[name]);
}
