/**
 * A bucket's request-path settings (what the gate needs before a handler acts: the bucket
 * policy, public access block, default encryption, the owning account: model/account.ts, and its Object Ownership and ACL: model/acl.ts) and how they reach every isolate without a catalog call of their own.
 *
 * Each setting is a state row of the bucket's catalog instance (catalog/durable-object.ts). Their
 * `stamp` is '' when every one is absent and otherwise a digest of their values, computed by the
 * instance from what it stores: so a stamp names one content (no counter to restart when a bucket
 * is deleted and created again, nothing to keep in step when a row is restored from a journal).
 *
 * An isolate keeps the settings it last saw per bucket (absent: the '' stamp, no settings). A
 * request is checked at the gate against that view, then every catalog call it makes on the
 * request path carries the stamp it was checked against (`SettingsFence`, through
 * `requestFence`): the instance compares it with its own before doing anything, in the same
 * synchronous step as the operation, and when they differ answers with its current settings
 * instead of acting. The request is then checked again against those (AccessDenied throws, nothing
 * was done) and the call repeated with their stamp. So a bucket with no settings costs no call,
 * a change costs each isolate one repeated call, and no request acts on settings older than the
 * ones its bucket held when the catalog acted.
 *
 * To carry one more setting: add its state row's name to REQUEST_SETTINGS, store it with the
 * instance's plain setState, and read `settings.rows.<name>` where the request path needs it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * State rows the request path needs, delivered with the catalog's replies. Append only: the stamp
 * leaves out trailing absent rows (settings-stamp.ts), so a row added at the end keeps the stamps
 * of buckets that do not have it.
 */
export const REQUEST_SETTINGS = ['policy', 'public-access-block', 'encryption', 'owner', 'ownership', 'acl'] as const;
export type RequestSettingName = (typeof REQUEST_SETTINGS)[number];

export interface BucketSettings {
  /** '' when every row is absent; else a digest of their values (catalog/settings-stamp.ts). */
  stamp: string;
  /** Each row's stored text; null when absent. */
  rows: Record<RequestSettingName, string | null>;
}

export const NO_SETTINGS: BucketSettings = Object.freeze({
  stamp: '',
  rows: Object.freeze({ policy: null, 'public-access-block': null, encryption: null, owner: null, ownership: null, acl: null }),
});

/** What a request promises the catalog: which settings it was checked against. */
export interface SettingsFence {
  /** The stamp the request was checked against for `bucket`; undefined: its calls there are not fenced. */
  stampFor(bucket: string): string | undefined;
  /**
   * `bucket` holds `settings` now, not what the request was checked against: check it again
   * (AccessDenied throws), after which stampFor(bucket) answers their stamp.
   */
  changed(bucket: string, settings: BucketSettings): Promise<void>;
}

/** The fence of the request being served (set around its handler by s3/policy-gate.ts). */
export const requestFence = new AsyncLocalStorage<SettingsFence>();

const NO_FENCE: SettingsFence = { stampFor: () => undefined, changed: async () => {} };

/** Runs `fn` with no fence (the gate's own reads while it checks a request). */
export function unfenced<T>(fn: () => T): T {
  return requestFence.run(NO_FENCE, fn);
}
