/**
 * Rules the catalog applies inside its atomic step, written once (sql-objects.ts and
 * sql-multipart.ts call them): which units a commit, delete or completion leaves unreferenced,
 * when they may be deleted, and how a unit's shard states change. Conditions themselves are
 * worker/model/conditions.ts.
 */
import { S3Error } from '../model/errors.ts';
import type { ObjectMetadata, WriteConditions } from '../model/object-store.ts';
import type { Tag } from '../model/tagging.ts';
import { newId } from '../format/ids.ts';
import type { CodedUnit, ObjectManifest } from '../format/manifest.ts';
import type { CommitResult, CompletedUpload, GarbageUnits, PartRecord } from './types.ts';

/**
 * How long superseded shards stay readable: a GET that looked up the old manifest just before a
 * commit may still be streaming its shards. One hour covers any read a Worker can still be doing.
 */
export const DEFAULT_GARBAGE_GRACE_MS = 60 * 60 * 1000;

export interface CatalogOptions {
  /** Delay before superseded units may be deleted (default DEFAULT_GARBAGE_GRACE_MS). */
  garbageGraceMs?: number;
  /** Most versions (delete markers included) one key may hold before a write adding one is refused (default DEFAULT_MAX_VERSIONS_PER_KEY). */
  maxVersionsPerKey?: number;
}

export const DEFAULT_MAX_VERSIONS_PER_KEY = 10_000;

/** A write's conditions as the catalog checks them: the client's, plus the gateway's per-key version cap. */
export type CatalogWriteConditions = WriteConditions & { maxVersions?: number };

/**
 * The refusal of a write that would give `key` more than `max` versions. Not an AWS limit (S3 has
 * none): a gateway's, so that one key cannot grow without bound (its versions are read whole by
 * the lifecycle job and by a key's version listing). 400 InvalidRequest, saying what to do.
 */
export function tooManyVersions(key: string, max: number): S3Error {
  return new S3Error(
    'InvalidRequest',
    `Key '${key}' already has ${max} versions, the most this gateway keeps per key (config maxVersionsPerKey): delete noncurrent versions, or let a lifecycle NoncurrentVersionExpiration rule delete them, before writing more.`,
    { Key: key },
  );
}

/** The coded units an object's bytes live in (none for inline objects). */
export function unitsOf(manifest: ObjectManifest | null | undefined): CodedUnit[] {
  return manifest?.storage.kind === 'coded' ? manifest.storage.units : [];
}

/**
 * Units of `previous` that `next` (the manifest replacing it, or null on delete) does not reuse.
 * Known gap: a unit is assumed to belong to one object only; sharing units between objects (a
 * CopyObject that copies the manifest instead of the bytes) would need reference counts here.
 */
export function supersededUnits(previous: ObjectManifest | null | undefined, next: ObjectManifest | null): CodedUnit[] {
  const kept = new Set(unitsOf(next).map((u) => u.unitId));
  return unitsOf(previous).filter((u) => !kept.has(u.unitId));
}

/** Adds `shards` to the unit's `missing` list (in place); false when the manifest has no such unit or nothing changes. */
export function withMissing(manifest: ObjectManifest, unitId: string, shards: number[]): boolean {
  const unit = unitsOf(manifest).find((u) => u.unitId === unitId);
  const added = unit ? shards.filter((i) => Number.isInteger(i) && i >= 0 && i < unit.k + unit.m && !unit.missing.includes(i)) : [];
  if (!unit || added.length === 0) return false;
  unit.missing = [...unit.missing, ...added].sort((a, b) => a - b);
  return true;
}

/** `metadata` with `tags` instead of its own (none when empty). */
export function withTags(metadata: ObjectMetadata, tags: Tag[]): ObjectMetadata {
  const { tags: _old, ...rest } = metadata;
  return tags.length ? { ...rest, tags } : rest;
}

/**
 * Sets the object's tags in `manifest` (in place) and marks the unit that carries its tag record:
 * the first coded unit of an object written in one piece. Returns that unit, or null when the
 * object has none (inline: no shards; multipart: a rebuild cannot restore it anyway).
 */
export function withTagsRecorded(manifest: ObjectManifest, tags: Tag[]): CodedUnit | null {
  manifest.metadata = withTags(manifest.metadata, tags);
  const first = manifest.partsCount ? undefined : unitsOf(manifest)[0];
  if (!first) return null;
  first.tagRecord = true;
  return first;
}

/** Takes `shards` off unit `unitId`'s missing list in `manifest` (in place); false if nothing changed. */
/**
 * Moves shard `shard` of unit `unitId` from backend `from` to `to` in `manifest` (in place): false
 * when the manifest has no such unit or the shard is not on `from` (someone else changed it). A
 * shard recorded missing is missing no more: the mover rebuilt it at `to`.
 */
export function withMovedShard(manifest: ObjectManifest, unitId: string, shard: number, from: string, to: string): boolean {
  const unit = unitsOf(manifest).find((u) => u.unitId === unitId);
  if (!unit || unit.placement[shard] !== from || unit.placement.includes(to)) return false;
  unit.placement = unit.placement.map((id, i) => (i === shard ? to : id));
  unit.missing = unit.missing.filter((i) => i !== shard);
  return true;
}

export function withRepaired(manifest: ObjectManifest, unitId: string, shards: number[]): boolean {
  const unit = unitsOf(manifest).find((u) => u.unitId === unitId);
  if (!unit || !unit.missing.some((i) => shards.includes(i))) return false;
  unit.missing = unit.missing.filter((i) => !shards.includes(i));
  return true;
}

/**
 * Units of an upload's `parts` that the completed `manifest` does not use. InvalidPart when the
 * manifest names a unit that is no longer a part of the upload: the part was replaced after the
 * engine read it, and its old unit is already queued for deletion, so committing would publish an
 * object whose shards are about to go.
 */
export function unusedPartUnits(manifest: ObjectManifest, parts: PartRecord[], uploadId: string): CodedUnit[] {
  const current = new Set(parts.flatMap((p) => p.units.map((u) => u.unitId)));
  for (const unit of unitsOf(manifest)) {
    if (!current.has(unit.unitId)) {
      throw new S3Error('InvalidPart', undefined, { UploadId: uploadId, PartNumber: String(unit.partNumber ?? '') });
    }
  }
  const used = new Set(unitsOf(manifest).map((u) => u.unitId));
  return parts.flatMap((p) => p.units).filter((u) => !used.has(u.unitId));
}

/**
 * How long a completed multipart upload's result is remembered, so that a repeated
 * CompleteMultipartUpload answers 200 with the same ETag (SDKs retry Complete after a timeout,
 * possibly after backing off for minutes). One day: far beyond any retry, and a small row each.
 */
export const COMPLETED_UPLOAD_MEMORY_MS = 24 * 60 * 60 * 1000;

/** The remembered result of a completion. */
export function completedUpload(manifest: ObjectManifest, commit: CommitResult): CompletedUpload {
  return { key: manifest.key, etag: manifest.etag, checksum: manifest.checksum, size: manifest.size, lastModified: manifest.lastModified, ...commit };
}

/** Upload ids sort by creation time (newId), so ordering a key's uploads by id orders them by
 *  initiation, as ListMultipartUploads requires, and upload-id-marker compares lexicographically. */
export const newUploadId = (): string => newId();

/** Every unit id a garbage entry names: units with their placement, and bare reserved ids. */
export function garbageUnitIds(entry: GarbageUnits): string[] {
  return [...entry.units.map((u) => u.unitId), ...(entry.unitIds ?? [])];
}
