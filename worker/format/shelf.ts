/**
 * Shelves: the opaque name that stands for a bucket in shard keys once a key ring is configured
 * (docs/FORMAT.md, "Shard keys"), so that no backend learns a bucket's name from a listing.
 *
 * The contract:
 * - A shelf is 24 hex digits: the first 96 bits of HMAC-SHA-256(name key, bucket name), where the
 *   name key is HKDF-SHA-256(KEK, salt empty, info "shardgate shelf names") of one key of the ring.
 *   Without the KEK a backend operator cannot test a guess ("is there a bucket named payroll?").
 * - New units are shelved under the ring's active key. A unit's id records its shelf (ids.ts,
 *   shard-key.ts), so reads, repair, collection and moves never recompute it: after a rotation a
 *   bucket's new units go to a new shelf and its old ones stay where they are, readable.
 * - One bucket, one shelf per key: everything a listing by bucket needs (the rebuild, the cost
 *   report, `shardgate rescue --bucket`) is the bucket's shelves under every key of the ring,
 *   plus its legacy prefix (units written before shelves, or with no ring, are named by bucket).
 */

/** Hex digits of a shelf name. */
export const SHELF_DIGITS = 24;

const INFO = new TextEncoder().encode('shardgate shelf names');

/** The name key of one KEK (HMAC-SHA-256, derived once per KEK). */
export async function shelfNameKey(kek: Uint8Array): Promise<CryptoKey> {
  const base = await crypto.subtle.importKey('raw', kek, 'HKDF', false, ['deriveKey']);
  return crypto.subtle.deriveKey(
    { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: INFO },
    base,
    { name: 'HMAC', hash: 'SHA-256', length: 256 },
    false,
    ['sign'],
  );
}

/** The shelf of `bucket` under a name key. */
export async function shelfOf(nameKey: CryptoKey, bucket: string): Promise<string> {
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', nameKey, new TextEncoder().encode(bucket)));
  let hex = '';
  for (let i = 0; i < SHELF_DIGITS / 2; i++) hex += mac[i]!.toString(16).padStart(2, '0');
  return hex;
}
