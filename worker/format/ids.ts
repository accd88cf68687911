/**
 * Ids of writes, units, versions and uploads: sortable and unique. Shard keys derive from unit
 * ids (shard-key.ts), so a new write never touches an older write's shards.
 */

let lastMs = 0;
let seq = 0;

/**
 * Sortable, unique ids: 12 hex digits of milliseconds, 4 of a sequence within the millisecond
 * (so ids from one isolate sort in creation order), then 12 random hex digits.
 */
export function newId(now = Date.now()): string {
  seq = now === lastMs ? (seq + 1) & 0xffff : 0;
  lastMs = now;
  const rand = crypto.getRandomValues(new Uint8Array(6));
  return now.toString(16).padStart(12, '0') + seq.toString(16).padStart(4, '0') + [...rand].map((b) => b.toString(16).padStart(2, '0')).join('');
}
