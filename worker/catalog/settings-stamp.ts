/**
 * The stamp of a bucket's request-path settings (model/bucket-settings.ts), read from its state
 * rows: '' when none is set, else the first 128 bits of the SHA-256 of their values (base64url).
 * A digest of the content rather than a stored counter: it needs no row of its own (no schema or
 * journal change), survives a bucket deleted and created again and a catalog restored from its
 * journal, and two stamps are equal only when the settings are. The last digest is kept by its
 * input, so an instance answering many requests hashes a policy once per change.
 */
import { createHash } from 'node:crypto';
import { REQUEST_SETTINGS, NO_SETTINGS, type BucketSettings, type RequestSettingName } from '../model/bucket-settings.ts';

let last: { text: string; stamp: string } | undefined;

function digest(text: string): string {
  if (last?.text !== text) last = { text, stamp: createHash('sha256').update(text).digest('base64url').slice(0, 22) };
  return last.stamp;
}

/** The settings as `read` (a state row's value, or null) finds them. */
export function settingsOf(read: (name: RequestSettingName) => string | null): BucketSettings {
  const rows = Object.fromEntries(REQUEST_SETTINGS.map((name) => [name, read(name)])) as BucketSettings['rows'];
  if (REQUEST_SETTINGS.every((name) => rows[name] === null)) return NO_SETTINGS;
  // Trailing absent rows are left out: a bucket with only a policy keeps the stamp it had before
  // the public access block row was added (so an upgrade repeats no isolate's calls).
  const values = REQUEST_SETTINGS.map((name) => rows[name]);
  while (values.at(-1) === null) values.pop();
  return { stamp: digest(JSON.stringify(values)), rows };
}
