/**
 * rebuildCatalog: recovers a bucket's catalog entries from the shards on the backends alone, for
 * the day a catalog entry (or the whole catalog) is lost. With `journal`, the bucket's catalog
 * journal is imported first (journal-restore.ts: everything the catalog held as of its last
 * segment, into a bucket holding no version), and the shard headers then add the writes newer
 * than it, each as its key's newest version; what follows describes the headers' part. Every shard header names its bucket, key
 * and unit geometry and every footer its MD5, checksum and shard digests, so each single-PUT
 * object's manifest can be rebuilt; the newest unit per key wins, and keys the catalog still
 * has are left alone (a key whose newest version is a delete marker too: it was deleted). Rebuild never resurrects: units the catalog still holds for deletion
 * (deleted or superseded versions not yet collected) or reserves for writes in flight are
 * ignored, whatever shards of them remain, and a unit with fewer than k shards left is reported
 * unrecoverable instead of being listed as an object no GET could read. A body cut into column segments (wide codes) comes back with its own ETag
 * and checksum, from its last segment's footer. Known gaps: multipart objects (their part list
 * lives only in the catalog) and inline objects (no shards) cannot be recovered this way; a body
 * cut into striped segments (wide codes before column units) comes back with a multipart-style
 * ETag and without its client checksum.
 * Object Lock: a header holds the lock given on the write (metadata.objectLock), restored with
 * the version; a bucket whose catalog lost its lock configuration gets lock (and versioning
 * Enabled) back from the first locked version restored, without its default rule.
 * Tags: a header holds the tags of the write; an object whose tags were changed later has a tag
 * record beside its first unit's shards (engine/tag-record.ts), and its newest copy wins.
 */
import { createHash } from 'node:crypto';
import { scanUnits, type OpenedInfo } from './unit-scan.ts';
import { restoreFromJournal, type JournalRestore, type RestoreCatalog } from './journal-restore.ts';
import type { Backend } from '../../backends/types.ts';
import type { ObjectCatalog, UpkeepCatalog } from '../catalog/ports.ts';

/** What a rebuild writes and reads: versions committed and looked up, bucket state, the ids held for deletion, a journal restored. */
export type RebuildCatalog = ObjectCatalog & Pick<UpkeepCatalog, 'pendingUnitIds'> & RestoreCatalog;
import { S3Error } from '../model/errors.ts';
import { toHex } from '../model/bytes.ts';
import type { ObjectMetadata } from '../model/object-store.ts';
import type { KeyRing } from '../format/seal.ts';
import { newId } from '../format/ids.ts';
import type { CodedUnit, ObjectManifest } from '../format/manifest.ts';
import { readTagRecord } from '../engine/index.ts';
import { withTags } from '../catalog/rules.ts';

export interface RebuildResult {
  /** The catalog journal's part (journal-restore.ts): absent when not asked for. */
  journal?: JournalRestore;
  restored: string[];
  kept: string[];
  unrecoverable: { unitId: string; reason: string }[];
  /** Units found on the backends that the catalog holds for deletion or reserves: not restored. */
  retired: string[];
  /**
   * Backends whose listing did not answer (unit-scan.ts), for the journal or the shard headers:
   * restored from the others (their shards recorded missing where headers were read); a write
   * (or a journal segment) stored only on them was not seen. Absent when every backend answered.
   */
  unlisted?: string[];
}

interface Candidate {
  info: OpenedInfo;
  units: CodedUnit[];
  etag: string;
  checksum: NonNullable<CodedUnit['checksum']> | null;
}

export async function rebuildCatalog(
  bucket: string,
  backends: Backend[],
  catalog: RebuildCatalog,
  ring?: KeyRing,
  options: { journal?: boolean; merge?: boolean } = {},
): Promise<RebuildResult> {
  // The journal first: every version, delete marker, inline object, part list and setting it held.
  const journal = options.journal ? await restoreFromJournal(bucket, backends, catalog, ring, { merge: options.merge }) : undefined;
  // Once it is in, a write the shard headers show and the journal did not know, newer than the
  // journal, is a write after its last segment: it becomes the key's newest version.
  const after = journal?.asOf && !journal.skipped ? journal.asOf : null;
  const result: RebuildResult = { ...(journal ? { journal } : {}), restored: [], kept: [], unrecoverable: [], retired: [] };
  const pending = new Set(await catalog.pendingUnitIds(bucket));
  const scan = await scanUnits(bucket, backends, ring, (unitId) => pending.has(unitId));
  result.retired.push(...scan.skipped);
  const unlisted = [...new Set([...(journal?.unlisted ?? []), ...scan.unlisted])];
  if (unlisted.length) result.unlisted = unlisted;
  result.unrecoverable.push(...scan.unrecoverable);
  const tagRecords = scan.tagRecords;
  const newest = new Map<string, Candidate>();
  const segments = new Map<string, { info: OpenedInfo; unit: CodedUnit }[]>();
  for (const { info, unit } of scan.units) {
    const h = info.header;
    if (h.segment) {
      const list = segments.get(h.segment.writeId) ?? [];
      segments.set(h.segment.writeId, [...list, { info, unit }]);
      continue;
    }
    offer(h.key, { info, units: [unit], etag: `"${unit.md5}"`, checksum: unit.checksum ?? null });
  }
  // A body cut into segments comes back whole or not at all. Column segments: the last one's
  // footer holds the write's MD5 (the ETag) and checksum. Striped segments (written before
  // column units existed) each hold their own MD5, so the body gets a multipart-style ETag (MD5
  // of the segments' MD5s, "-N").
  for (const [writeId, parts] of segments) {
    const count = parts[0]!.info.header.segment!.count;
    parts.sort((a, b) => a.info.header.segment!.index - b.info.header.segment!.index);
    if (parts.length !== count || parts.some((p, i) => p.info.header.segment!.index !== i)) {
      result.unrecoverable.push({
        unitId: writeId,
        reason: `segmented write: ${parts.length} of ${count} segments found${result.retired.length ? ' (units held for deletion are not counted)' : ''}`,
      });
      continue;
    }
    const last = parts[count - 1]!;
    if (last.unit.layout === 'column') {
      for (const p of parts.slice(0, -1)) p.unit.md5 = '';
      offer(parts[0]!.info.header.key, { info: last.info, units: parts.map((p) => p.unit), etag: `"${last.unit.md5}"`, checksum: last.unit.checksum ?? null });
      continue;
    }
    const md5s = parts.map((p) => Uint8Array.from(p.unit.md5.match(/../g)!.map((x) => parseInt(x, 16))));
    const etag = `"${toHex(createHash('md5').update(Buffer.concat(md5s)).digest())}-${count}"`;
    offer(parts[0]!.info.header.key, { info: last.info, units: parts.map((p) => p.unit), etag, checksum: null });
  }
  // Newest write wins: by time, then by id (ids sort in creation order within an isolate).
  function age(c: { info: OpenedInfo }): string {
    return `${c.info.header.createdAt} ${c.info.header.segment?.writeId ?? c.info.header.unitId}`;
  }
  function offer(key: string, candidate: Candidate) {
    const prev = newest.get(key);
    if (!prev || age(prev) < age(candidate)) newest.set(key, candidate);
  }
  let lockEnabled = false;
  for (const [key, { info, units, etag, checksum }] of newest) {
    const size = units.reduce((n, u) => n + u.size, 0);
    // Without the ACL the version was written with: a later PutObjectAcl is not in the header, so
    // a grant revoked since must not come back; the bucket owner's alone is what fails closed.
    const { acl: _writtenAcl, ...written } = (info.header.metadata as ObjectMetadata | undefined) ?? { user: {} };
    let metadata: ObjectMetadata = written;
    const holders = tagRecords.get(units[0]!.unitId);
    const first = units[0]!;
    const dek = first.seal && ring ? await ring.open(first.seal).catch(() => undefined) : undefined;
    const record = holders ? await readTagRecord(holders, bucket, first.unitId, dek) : null;
    if (record) metadata = withTags(metadata, record.tags);
    if (holders) units[0]!.tagRecord = true; // the collector deletes the record with the unit
    const manifest: ObjectManifest = {
      format: 1,
      bucket,
      key,
      versionId: newId(Date.parse(info.header.createdAt)),
      size,
      etag,
      lastModified: info.header.createdAt,
      metadata,
      checksum,
      storage: { kind: 'coded', units },
    };
    const current = await catalog.getVersion(bucket, key, null);
    const newer =
      after !== null &&
      info.header.createdAt > after &&
      !(current.kind === 'object' && current.manifest.storage.kind === 'coded' && current.manifest.storage.units.some((u) => u.unitId === units[0]!.unitId));
    // A key whose newest version is a delete marker is not lost: committing would resurrect it.
    if (current.kind === 'marker' && !newer) {
      result.kept.push(key);
      continue;
    }
    // A locked version was written in a lock-enabled bucket: a catalog that lost that says so again
    // (lock on, versioning Enabled) rather than refuse the version or restore it unlocked.
    if (metadata.objectLock && !lockEnabled && !(lockEnabled = (await catalog.getObjectLock(bucket)) !== null)) {
      await catalog.setVersioning(bucket, 'Enabled');
      await catalog.setObjectLock(bucket, null);
      lockEnabled = true;
    }
    try {
      // `restoring`: the shards are on the backends already; a bucket quota never refuses them.
      await catalog.commitManifest(bucket, key, manifest, newer ? { restoring: true } : { ifNoneMatch: '*', restoring: true });
      result.restored.push(key);
    } catch (err) {
      if (!(err instanceof S3Error && err.code === 'PreconditionFailed')) throw err;
      result.kept.push(key);
    }
  }
  return result;
}
