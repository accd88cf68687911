/**
 * SSE-KMS units in a rescue: their data keys are wrapped under a version of a named KMS key,
 * whose material is in the catalog's key table (rows `kms-key/<id>` of the bucket list), wrapped
 * under the gateway's keys. With no catalog, the table comes from the bucket list's journal
 * (catalog/journal-replay.ts): `ringWithJournalKeys` opens named kids with it, and `unlockNamed`
 * opens the shards the scan kept locked because their header is sealed under such a kid.
 */
import { replayJournal, type InstanceImage } from '../../worker/catalog/journal-replay.ts';
import { BUCKET_LIST_INSTANCE, JOURNAL_BUCKET } from '../../worker/format/journal.ts';
import { isNamedKid, SealError, type KeyRing } from '../../worker/format/seal.ts';
import { openHeader } from '../../worker/format/sealed-header.ts';
import { materialLabel, parseNamedKid, type KmsKeyRecord } from '../../worker/model/kms-key.ts';
import { errorMessage } from '../../worker/model/error-message.ts';
import { readJournal } from './journal.ts';
import { planObjects } from './plan.ts';
import { ShardIndex, type FoundShard, type LockedShard } from './scan.ts';

const ROW = 'kms-key/';

/** `ring`, opening named kids with the key table the bucket list's journal image holds (none: `ring` itself). */
export function ringWithJournalKeys(ring: KeyRing, listImage: InstanceImage): KeyRing {
  const keys = new Map<string, KmsKeyRecord>();
  for (const row of listImage.tables.get('state')?.values() ?? []) {
    const name = String(row.name);
    if (name.startsWith(ROW)) keys.set(name.slice(ROW.length), JSON.parse(String(row.value)) as KmsKeyRecord);
  }
  if (!keys.size) return ring;
  return ring.withNamedKeys(async (kid) => {
    const named = parseNamedKid(kid);
    const version = named && keys.get(named.id)?.versions.find((v) => v.version === named.version);
    if (!named || !version) throw new SealError(`the journal's key table has no KMS key version "${kid}"`);
    // Not yet: a rescue does not call Vault (it runs without the gateway's config and secrets).
    if (version.transit)
      throw new SealError(
        `KMS key version "${kid}" is wrapped by the Vault/OpenBao transit key ${version.transit.mount}/${version.transit.key}; a rescue cannot open it (restore the catalog and read through a gateway instead)`,
      );
    return ring.openSecret(version, materialLabel(named.id, named.version));
  });
}

/**
 * The locked shards sealed under a named kid that `ring` opens, moved to `shards` (those of
 * another bucket than `bucket`, when given, dropped as the scan drops them); the rest stay locked,
 * with the reason the key table gives.
 */
export async function unlockNamed(scan: { shards: FoundShard[]; locked: LockedShard[] }, ring: KeyRing, bucket?: string): Promise<number> {
  const still: LockedShard[] = [];
  let opened = 0;
  for (const l of scan.locked) {
    if (!l.raw.seal || !isNamedKid(l.raw.seal.kid)) {
      still.push(l);
      continue;
    }
    try {
      const header = await openHeader(l.raw, ring);
      opened++;
      if (bucket !== undefined && header.bucket !== bucket) continue;
      scan.shards.push({ source: l.source, sourceKey: l.sourceKey, size: l.size, header, raw: l.raw, headerLen: l.headerLen });
    } catch (err) {
      still.push({ ...l, reason: errorMessage(err) });
    }
  }
  scan.locked = still;
  return opened;
}

/**
 * For a reader that needs only the key table (verify): the bucket list's journal read from the
 * scan, its key table added to `ring`, and the shards it opens unlocked (a new index when any
 * did). Rescue reads the journal itself, for everything else it holds too.
 */
export async function withJournalKeyTable(
  scan: { shards: FoundShard[]; locked: LockedShard[] },
  index: ShardIndex,
  ring: KeyRing,
  bucket?: string,
): Promise<{ ring: KeyRing; index: ShardIndex }> {
  const plan = await planObjects(
    scan.shards.filter((s) => s.header.bucket === JOURNAL_BUCKET),
    index,
    '',
    ring,
    [],
    { everyWrite: true },
  );
  const listImage = replayJournal((await readJournal(plan.objects, index, ring)).segments).get(BUCKET_LIST_INSTANCE);
  const keyRing = listImage ? ringWithJournalKeys(ring, listImage) : ring;
  if (keyRing === ring || !(await unlockNamed(scan, keyRing, bucket))) return { ring: keyRing, index };
  return { ring: keyRing, index: new ShardIndex(scan.shards, scan.locked) };
}
