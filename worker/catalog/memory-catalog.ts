/**
 * MemoryCatalog: the Catalog in Maps inside one isolate, for Node tests of the engine and as the
 * reference the Durable Object catalog is held to (test/catalog/contract.ts runs both). Every
 * mutation checks and writes with no await in between, so it is atomic like the real one.
 * Values are cloned in and out, as Durable Object RPC would, so callers cannot alias state.
 * Known gaps: no persistence; listings sort the whole bucket (fine for tests).
 */
import { S3Error } from '../model/errors.ts';
import type { CodedUnit, ObjectManifest } from '../format/manifest.ts';
import { checkWriteConditions } from '../model/conditions.ts';
import { compareKeys, listPage } from '../model/listing.ts';
import type * as S from '../model/object-store.ts';
import { afterUpload, listRanges, objectsResult, sortedRowsFetch, startBound, uploadsResult } from './range-list.ts';
import type { CorsRule } from '../model/cors.ts';
import type { Tag } from '../model/tagging.ts';
import { COMPLETED_UPLOAD_MEMORY_MS, completedUpload, garbageUnitIds, DEFAULT_GARBAGE_GRACE_MS, newUploadId, supersededUnits, unitsOf, unusedPartUnits, withMissing, withRepaired, withTagsRecorded, type CatalogOptions } from './rules.ts';
import { advanceScrub, noScrubYet } from './scrub-progress.ts';
import { DEAD_LETTER_ATTEMPTS, type BucketHealth, type Catalog, type CompletedUpload, type DegradedUnit, type GarbageUnits, type PartRecord, type ScrubCursor, type ScrubProgress, type UploadRecord } from './types.ts';
import { degradedUnitsOf, usageOf } from './usage.ts';

interface UploadState {
  record: UploadRecord;
  parts: Map<number, PartRecord>;
}

interface BucketState {
  info: S.BucketInfo;
  objects: Map<string, ObjectManifest>;
  uploads: Map<string, UploadState>;
  /** Unit id -> expiry (ms) of writes not yet committed. */
  reservations: Map<string, number>;
  scrub: ScrubProgress;
  scrubCursor: ScrubCursor | null;
  cors: CorsRule[] | null;
  tagging: Tag[] | null;
  /** Upload id -> result and time (ms) of uploads completed recently. */
  completed: Map<string, { result: CompletedUpload; at: number }>;
}

const clone = <T>(v: T): T => structuredClone(v);

export class MemoryCatalog implements Catalog {
  private readonly buckets = new Map<string, BucketState>();
  private readonly garbage: { notBefore: number; entry: GarbageUnits }[] = [];
  /** Failed repair attempts per `bucket key unitId` (no executor here: nothing is scheduled). */
  private readonly repairAttempts = new Map<string, { attempts: number; lastError: string }>();
  private readonly graceMs: number;

  constructor(options: CatalogOptions = {}) {
    this.graceMs = options.garbageGraceMs ?? DEFAULT_GARBAGE_GRACE_MS;
  }

  private bucket(name: string): BucketState {
    const b = this.buckets.get(name);
    if (!b) throw new S3Error('NoSuchBucket', undefined, { BucketName: name });
    return b;
  }

  private upload(bucket: string, key: string, uploadId: string): UploadState {
    const u = this.bucket(bucket).uploads.get(uploadId);
    if (!u || u.record.key !== key) throw new S3Error('NoSuchUpload', undefined, { UploadId: uploadId });
    return u;
  }

  /** Queues units that just lost their last reference, after the grace delay. */
  private supersede(bucket: string, units: CodedUnit[]): void {
    if (units.length > 0) this.garbage.push({ notBefore: Date.now() + this.graceMs, entry: clone({ bucket, units }) });
  }

  async listBucketRecords(): Promise<S.BucketInfo[]> {
    return [...this.buckets.values()].map((b) => clone(b.info)).sort((a, b) => compareKeys(a.name, b.name));
  }

  async insertBucket(bucket: string, region: string): Promise<void> {
    if (this.buckets.has(bucket)) throw new S3Error('BucketAlreadyOwnedByYou', undefined, { BucketName: bucket });
    this.buckets.set(bucket, { info: { name: bucket, creationDate: new Date(), region }, objects: new Map(), uploads: new Map(), reservations: new Map(), scrub: noScrubYet(), scrubCursor: null, cors: null, tagging: null, completed: new Map() });
  }

  async getBucket(bucket: string): Promise<S.BucketInfo> {
    return clone(this.bucket(bucket).info);
  }

  async removeBucket(bucket: string): Promise<void> {
    const b = this.bucket(bucket);
    if (b.objects.size > 0 || b.uploads.size > 0) throw new S3Error('BucketNotEmpty', undefined, { BucketName: bucket });
    for (const [id, expires] of b.reservations) this.garbage.push({ notBefore: expires, entry: { bucket, units: [], unitIds: [id] } });
    this.buckets.delete(bucket);
  }

  async getBucketCors(bucket: string): Promise<CorsRule[] | null> {
    return clone(this.bucket(bucket).cors);
  }

  async setBucketCors(bucket: string, rules: CorsRule[] | null): Promise<void> {
    this.bucket(bucket).cors = clone(rules);
  }

  async getBucketTagging(bucket: string): Promise<Tag[] | null> {
    return clone(this.bucket(bucket).tagging);
  }

  async setBucketTagging(bucket: string, tags: Tag[] | null): Promise<void> {
    this.bucket(bucket).tagging = clone(tags);
  }

  async setObjectTags(bucket: string, key: string, tags: Tag[]): Promise<CodedUnit | null> {
    const manifest = this.bucket(bucket).objects.get(key);
    if (!manifest) throw new S3Error('NoSuchKey', undefined, { Key: key });
    return clone(withTagsRecorded(manifest, clone(tags)));
  }

  async getManifest(bucket: string, key: string): Promise<ObjectManifest | null> {
    return clone(this.bucket(bucket).objects.get(key) ?? null);
  }

  async commitManifest(bucket: string, key: string, manifest: ObjectManifest, conditions: S.WriteConditions): Promise<void> {
    const objects = this.bucket(bucket).objects;
    checkWriteConditions(current(objects.get(key)), conditions, key);
    this.supersede(bucket, supersededUnits(objects.get(key), manifest));
    this.release(bucket, unitsOf(manifest));
    objects.set(key, clone(manifest));
  }

  async markRepaired(bucket: string, key: string, unitId: string, shards: number[]): Promise<void> {
    const manifest = this.bucket(bucket).objects.get(key);
    if (manifest) withRepaired(manifest, unitId, shards);
  }

  async markMissing(bucket: string, key: string, unitId: string, shards: number[]): Promise<void> {
    const manifest = this.bucket(bucket).objects.get(key);
    if (manifest) withMissing(manifest, unitId, shards);
  }

  async repairFailed(bucket: string, key: string, unitId: string, error: string): Promise<void> {
    this.bucket(bucket);
    const id = `${bucket} ${key} ${unitId}`;
    this.repairAttempts.set(id, { attempts: (this.repairAttempts.get(id)?.attempts ?? 0) + 1, lastError: error });
  }

  async repairSoon(bucket: string): Promise<void> {
    this.bucket(bucket); // NoSuchBucket; with no executor there is nothing to wake
  }

  async removeManifest(bucket: string, key: string, ifMatch?: string): Promise<void> {
    const objects = this.bucket(bucket).objects;
    if (ifMatch !== undefined) checkWriteConditions(current(objects.get(key)), { ifMatch }, key);
    this.supersede(bucket, supersededUnits(objects.get(key), null));
    objects.delete(key);
  }

  async listManifests(bucket: string, options: S.ListObjectsOptions): Promise<S.ListObjectsResult> {
    const sorted = [...this.bucket(bucket).objects.entries()].sort((a, b) => compareKeys(a[0], b[0]));
    return clone(objectsResult(listPage(sorted.map(([key, m]) => [key, summary(m)]), options)));
  }

  async insertUpload(bucket: string, key: string, options: { metadata: S.ObjectMetadata; checksum: S.MultipartChecksumSpec | null }): Promise<UploadRecord> {
    const record: UploadRecord = { key, uploadId: newUploadId(), initiated: new Date(), checksum: options.checksum, metadata: options.metadata };
    this.bucket(bucket).uploads.set(record.uploadId, { record: clone(record), parts: new Map() });
    return clone(record);
  }

  async getUpload(bucket: string, key: string, uploadId: string): Promise<UploadRecord> {
    return clone(this.upload(bucket, key, uploadId).record);
  }

  async putPart(bucket: string, key: string, uploadId: string, part: PartRecord): Promise<void> {
    const parts = this.upload(bucket, key, uploadId).parts;
    const replaced = parts.get(part.partNumber);
    const kept = new Set(part.units.map((u) => u.unitId));
    if (replaced) this.supersede(bucket, replaced.units.filter((u) => !kept.has(u.unitId)));
    this.release(bucket, part.units);
    parts.set(part.partNumber, clone(part));
  }

  async listPartRecords(bucket: string, key: string, uploadId: string, partNumberMarker: number, maxParts: number) {
    const all = [...this.upload(bucket, key, uploadId).parts.values()].filter((p) => p.partNumber > partNumberMarker).sort((a, b) => a.partNumber - b.partNumber);
    const parts = all.slice(0, Math.max(0, maxParts));
    return { parts: clone(parts), isTruncated: all.length > parts.length };
  }

  async commitUpload(bucket: string, key: string, uploadId: string, manifest: ObjectManifest, conditions: S.WriteConditions): Promise<void> {
    const upload = this.upload(bucket, key, uploadId);
    const objects = this.bucket(bucket).objects;
    const unused = unusedPartUnits(manifest, [...upload.parts.values()], uploadId);
    checkWriteConditions(current(objects.get(key)), conditions, key);
    this.supersede(bucket, [...supersededUnits(objects.get(key), manifest), ...unused]);
    objects.set(key, clone(manifest));
    this.bucket(bucket).uploads.delete(uploadId);
    const completed = this.bucket(bucket).completed;
    const now = Date.now();
    for (const [id, c] of completed) if (c.at < now - COMPLETED_UPLOAD_MEMORY_MS) completed.delete(id);
    completed.set(uploadId, { result: completedUpload(manifest), at: now });
  }

  async getCompletedUpload(bucket: string, key: string, uploadId: string): Promise<CompletedUpload | null> {
    const c = this.bucket(bucket).completed.get(uploadId);
    return c && c.result.key === key && c.at >= Date.now() - COMPLETED_UPLOAD_MEMORY_MS ? clone(c.result) : null;
  }

  async removeUpload(bucket: string, key: string, uploadId: string): Promise<void> {
    const upload = this.upload(bucket, key, uploadId);
    this.supersede(bucket, [...upload.parts.values()].flatMap((p) => p.units));
    this.bucket(bucket).uploads.delete(uploadId);
  }

  async listUploadRecords(bucket: string, options: S.ListUploadsOptions): Promise<S.ListUploadsResult> {
    const rows: S.UploadInfo[] = [...this.bucket(bucket).uploads.values()]
      .map(({ record: { metadata: _m, ...info } }) => info)
      .sort((a, b) => compareKeys(a.key, b.key) || byUploadId(a, b));
    const { prefix, delimiter, keyMarker, uploadIdMarker, maxUploads } = options;
    const start = startBound(prefix, delimiter, keyMarker, uploadIdMarker);
    return clone(uploadsResult(listRanges(sortedRowsFetch(rows), afterUpload, { prefix, delimiter, start, maxEntries: maxUploads })));
  }

  async pendingUnitIds(bucket: string): Promise<string[]> {
    const b = this.bucket(bucket);
    return [...this.garbage.filter((g) => g.entry.bucket === bucket).flatMap((g) => garbageUnitIds(g.entry)), ...b.reservations.keys()];
  }

  async getScrubCursor(bucket: string): Promise<ScrubCursor | null> {
    return this.bucket(bucket).scrubCursor;
  }

  async setScrubCursor(bucket: string, cursor: ScrubCursor | null): Promise<void> {
    const b = this.bucket(bucket);
    const from = b.scrub.cursor;
    const upTo = cursor === null ? undefined : cursor.afterKey; // undefined: to the last key; null: none
    const checked = upTo === null ? 0 : [...b.objects.keys()].filter((k) => (from === null || compareKeys(k, from) > 0) && (upTo === undefined || compareKeys(k, upTo) <= 0)).length;
    b.scrub = advanceScrub(b.scrub, cursor, checked, Date.now());
    b.scrubCursor = cursor;
  }

  async bucketHealth(bucket: string, now: Date): Promise<BucketHealth> {
    const b = this.bucket(bucket);
    const totals = new Map<string, number>();
    for (const m of b.objects.values()) for (const [name, n] of usageOf(m)) totals.set(name, (totals.get(name) ?? 0) + n);
    const backends: BucketHealth['backends'] = {};
    for (const [name, n] of totals) {
      const m = /^(shards|stored):(.*)$/.exec(name);
      if (m) (backends[m[2]!] ??= { shards: 0, bytes: 0 })[m[1] === 'shards' ? 'shards' : 'bytes'] = n;
    }
    const degraded = await this.listDegradedUnits(bucket, null, Number.MAX_SAFE_INTEGER);
    const garbage = this.garbage.filter((g) => g.entry.bucket === bucket);
    const t = now.getTime();
    return {
      bucket,
      objects: totals.get('objects') ?? 0,
      bytes: totals.get('bytes') ?? 0,
      inlineBytes: totals.get('inline-bytes') ?? 0,
      backends,
      degradedObjects: new Set(degraded.map((d) => d.key)).size,
      degradedUnits: degraded.length,
      missingShards: degraded.reduce((n, d) => n + d.missing.length, 0),
      oldestDegradedAt: degraded.length ? Math.min(...degraded.map((d) => d.since)) : null,
      repairStuck: degraded.filter((d) => d.attempts >= DEAD_LETTER_ATTEMPTS).length,
      uploads: b.uploads.size,
      reservations: { held: b.reservations.size, expired: [...b.reservations.values()].filter((e) => e <= t).length },
      garbage: { queued: garbage.length, due: garbage.filter((g) => g.notBefore <= t).length },
      scrub: { ...b.scrub },
    };
  }

  async listDegradedUnits(bucket: string, after: { key: string; unitId: string } | null, limit: number): Promise<DegradedUnit[]> {
    const all = [...this.bucket(bucket).objects.entries()]
      .flatMap(([key, m]) => degradedUnitsOf(m).map((u) => {
        const tried = this.repairAttempts.get(`${bucket} ${key} ${u.unitId}`);
        return { key, unitId: u.unitId, missing: u.missing, since: Date.parse(m.lastModified), attempts: tried?.attempts ?? 0, ...(tried ? { lastError: tried.lastError } : {}) };
      }))
      .sort((a, b) => compareKeys(a.key, b.key) || (a.unitId < b.unitId ? -1 : a.unitId > b.unitId ? 1 : 0));
    const start = after ? all.findIndex((d) => compareKeys(d.key, after.key) > 0 || (d.key === after.key && d.unitId > after.unitId)) : 0;
    return start === -1 ? [] : all.slice(start, start + Math.max(0, limit));
  }

  async deletedBucketGarbage(now: Date): Promise<{ queued: number; due: number }> {
    const orphaned = this.garbage.filter((g) => !this.buckets.has(g.entry.bucket));
    return { queued: orphaned.length, due: orphaned.filter((g) => g.notBefore <= now.getTime()).length };
  }

  async prepareWrite(bucket: string, key: string, conditions: S.WriteConditions, unitIds: string[], expires: Date): Promise<void> {
    checkWriteConditions(current(this.bucket(bucket).objects.get(key)), conditions, key);
    await this.reserveUnits(bucket, unitIds, expires);
  }

  async reserveUnits(bucket: string, unitIds: string[], expires: Date): Promise<void> {
    const reservations = this.bucket(bucket).reservations;
    for (const id of unitIds) reservations.set(id, expires.getTime());
  }

  async releaseUnits(bucket: string, unitIds: string[]): Promise<void> {
    this.release(bucket, unitIds.map((unitId) => ({ unitId })));
  }

  private release(bucket: string, units: Pick<CodedUnit, 'unitId'>[]): void {
    for (const u of units) this.bucket(bucket).reservations.delete(u.unitId);
  }

  async queueGarbage(garbage: GarbageUnits, notBefore: Date): Promise<void> {
    this.garbage.push({ notBefore: notBefore.getTime(), entry: clone(garbage) });
  }

  async takeDueGarbage(now: Date, limit: number): Promise<GarbageUnits[]> {
    const due = this.garbage.filter((g) => g.notBefore <= now.getTime()).sort((a, b) => a.notBefore - b.notBefore).slice(0, Math.max(0, limit));
    for (const g of due) this.garbage.splice(this.garbage.indexOf(g), 1);
    const taken = due.map((g) => g.entry);
    for (const [bucket, state] of this.buckets) {
      if (taken.length >= limit) break;
      const expired = [...state.reservations].filter(([, t]) => t <= now.getTime()).sort((a, b) => a[1] - b[1]).slice(0, limit).map(([id]) => id);
      for (const id of expired) state.reservations.delete(id);
      if (expired.length) taken.push({ bucket, units: [], unitIds: expired });
    }
    return taken;
  }
}

const current = (m: ObjectManifest | undefined) => (m ? { etag: m.etag, lastModified: new Date(m.lastModified) } : undefined);

const summary = (m: ObjectManifest): S.ObjectSummary => ({ key: m.key, size: m.size, etag: m.etag, lastModified: new Date(m.lastModified), checksum: m.checksum });

const byUploadId = (a: S.UploadInfo, b: S.UploadInfo) => (a.uploadId < b.uploadId ? -1 : a.uploadId > b.uploadId ? 1 : 0);
