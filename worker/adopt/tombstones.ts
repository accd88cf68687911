/**
 * Tombstones of an adopted bucket: the record that a key was deleted through shardgate, so the
 * read-through and the merged listing never bring it back from the source (issue 41, "writes
 * win"). A tombstone is an empty object under a reserved prefix of the same bucket, written
 * through the store's own put path: durable, seen by every isolate, in the key's own catalog
 * (docs/PARTITIONS.md), with no schema change. Reads, listings and writes through the adopting
 * store never show or accept keys under the prefix (docs/ADOPTION.md says what else sees them).
 * A tombstone outlives a later PUT of its key: the catalog's object wins over both the source and
 * the tombstone, and a delete of it writes the tombstone again.
 */
import type { ObjectStore } from '../model/object-store.ts';
import { S3Error } from '../model/errors.ts';

import { RESERVED_PREFIX } from '../model/reserved-keys.ts';

export const TOMBSTONE_PREFIX = `${RESERVED_PREFIX}tombstone/`;

export const tombstoneKey = (key: string) => TOMBSTONE_PREFIX + key;
/** Keys the gateway keeps for itself in a bucket with a source: tombstones, write-through's retry records. */
export const isReserved = (key: string) => key.startsWith(RESERVED_PREFIX);

export class Tombstones {
  constructor(private readonly store: ObjectStore) {}

  async has(bucket: string, key: string): Promise<boolean> {
    try {
      await this.store.headObject(bucket, tombstoneKey(key), { conditions: {} });
      return true;
    } catch (err) {
      if (err instanceof S3Error && err.code === 'NoSuchKey') return false;
      throw err;
    }
  }

  async record(bucket: string, key: string): Promise<void> {
    await this.store.putObject(bucket, tombstoneKey(key), new Blob([]).stream(), {
      contentLength: 0,
      metadata: { user: {} },
      checksum: null,
      conditions: {},
    });
  }

  /** Tombstoned keys from `prefix`, after `startAfter`, ascending: one catalog listing page of at most `limit`. */
  async page(bucket: string, prefix: string, startAfter: string | null, limit: number): Promise<{ keys: string[]; more: boolean }> {
    const page = await this.store.listObjects(bucket, {
      prefix: TOMBSTONE_PREFIX + prefix,
      delimiter: null,
      startAfter: startAfter === null ? null : TOMBSTONE_PREFIX + startAfter,
      maxKeys: limit,
    });
    return { keys: page.objects.map((o) => o.key.slice(TOMBSTONE_PREFIX.length)), more: page.isTruncated };
  }
}
