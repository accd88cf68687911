/**
 * DurableCatalog: the Catalog over CatalogObject Durable Objects (binding CATALOG, one instance
 * per bucket plus '__buckets__' for the bucket list). Object and multipart calls go straight to
 * the bucket's instance, which itself answers NoSuchBucket when it holds no bucket: the existence
 * check is inside the same transaction as the operation, so nothing is cached across requests
 * and an object can never be committed into a bucket that a deleteBucket has already emptied.
 * Bucket creation and deletion span two instances and are not atomic; see each for the gap.
 * Known gap: takeDueGarbage visits every bucket's instance in turn (one RPC per bucket).
 * A bucket's request-path settings (its policy) ride on the calls a request already makes: the
 * calls of fenced-methods.ts carry the stamp the request was checked against, and an instance
 * whose settings changed answers them instead of acting (model/bucket-settings.ts, `at`).
 */
import type { PreparedPart, SealRecord, SealRecordCursor, ShardMove, VersionAt, VersionRecord } from './types.ts';
import type { CodedUnit, ObjectManifest } from '../format/manifest.ts';
import type * as S from '../model/object-store.ts';
import type { CatalogObject } from './durable-object.ts';
import { DEFAULT_GARBAGE_GRACE_MS, DEFAULT_MAX_VERSIONS_PER_KEY, type CatalogOptions } from './rules.ts';
import { unwrap, type Fenced } from './rpc.ts';
import type { FencedMethod } from './fenced-methods.ts';
import { NO_SETTINGS, requestFence, type BucketSettings } from '../model/bucket-settings.ts';
import { S3Error } from '../model/errors.ts';
import type { VersionLookup } from './types.ts';
import type { BucketHealth, Catalog, CommitResult, ScrubCursor, UnitRecord, CompletedUpload, DegradedUnit, GarbageUnits, PartRecord, UploadRecord } from './types.ts';
import type { CorsRule } from '../model/cors.ts';
import type { Tag } from '../model/tagging.ts';
import type { DefaultRetention, ObjectLockConfig } from '../model/object-lock.ts';
import type { ObjectLockChange } from './types.ts';
import type { LifecycleRule, VersionFacts } from '../model/lifecycle.ts';
import type { LifecycleProgress, LifecycleRun } from './types.ts';
import type { CatalogLoss, JournalImportBatch, JournalKnown, JournalStatus, JournalTake } from './types.ts';
import { BUCKET_LIST_INSTANCE } from '../format/journal.ts';
import type { LogGroup } from '../model/bucket-logging.ts';
import type { AccessLogBatch, AppendResult } from './sql-access-log.ts';

/** The instance holding the bucket list. Bucket instances are named 'bucket:' + name, so no bucket collides with it. */
export const BUCKET_LIST = BUCKET_LIST_INSTANCE;

/** Buckets whose settings an isolate keeps (others cost a repeated call when they have some). */
const SETTINGS_SEEN_MAX = 4096;
/** Fenced tries of one call before the request fails (each answered with newer settings). */
const FENCED_ATTEMPTS = 3;

export class DurableCatalog implements Catalog {
  private readonly grace: number;
  private readonly maxVersions: number;

  constructor(
    private readonly ns: DurableObjectNamespace<CatalogObject>,
    options: CatalogOptions = {},
  ) {
    this.grace = options.garbageGraceMs ?? DEFAULT_GARBAGE_GRACE_MS;
    this.maxVersions = options.maxVersionsPerKey ?? DEFAULT_MAX_VERSIONS_PER_KEY;
  }

  /** The request-path settings this isolate last saw, by bucket (absent: none). Bounded. */
  private readonly seen = new Map<string, BucketSettings>();

  /** This isolate's view of the bucket's request-path settings: no call (model/bucket-settings.ts). */
  cachedBucketSettings(bucket: string): BucketSettings {
    return this.seen.get(bucket) ?? NO_SETTINGS;
  }

  /** The bucket's request-path settings as its instance holds them now (one call). NoSuchBucket. */
  async getBucketSettings(bucket: string): Promise<BucketSettings> {
    return this.saw(bucket, unwrap(await this.bucket(bucket).getBucketSettings(bucket)));
  }

  private saw(bucket: string, settings: BucketSettings): BucketSettings {
    this.seen.delete(bucket); // re-inserted last: the oldest goes first when full
    if (settings.stamp !== '') {
      if (this.seen.size >= SETTINGS_SEEN_MAX) this.seen.delete(this.seen.keys().next().value!);
      this.seen.set(bucket, settings);
    }
    return settings;
  }

  /**
   * Calls `method` of the bucket's instance. Inside a request whose fence covers the bucket, the
   * call carries the stamp the request was checked against; an instance holding other settings
   * does nothing and answers them: the request is checked again (AccessDenied throws) and the
   * call repeated with the new stamp. Settings changing on every try fail the request (503).
   */
  private async at<K extends FencedMethod>(bucket: string, method: K, ...args: Parameters<CatalogObject[K]>): Promise<Awaited<ReturnType<CatalogObject[K]>>> {
    type Result = Awaited<ReturnType<CatalogObject[K]>>;
    const stub = this.bucket(bucket);
    const fence = requestFence.getStore();
    let stamp = fence?.stampFor(bucket);
    if (fence === undefined || stamp === undefined) {
      return (await (stub[method] as unknown as (...a: unknown[]) => Promise<Result>)(...args));
    }
    for (let attempt = 0; attempt < FENCED_ATTEMPTS; attempt++) {
      const r = (await stub.fenced(stamp, method, args)) as Fenced<Result>;
      if (r.stale === undefined) return r.ran;
      this.saw(bucket, r.stale);
      await fence.changed(bucket, r.stale);
      stamp = fence.stampFor(bucket) ?? r.stale.stamp;
    }
    throw new S3Error('ServiceUnavailable', `The settings of bucket ${bucket} changed during the request; please retry.`);
  }

  private registry() {
    return this.ns.get(this.ns.idFromName(BUCKET_LIST));
  }

  /** The seam for partitioning a hot bucket across several instances later. */
  private bucket(name: string) {
    return this.ns.get(this.ns.idFromName('bucket:' + name));
  }

  async listBucketRecords(): Promise<S.BucketInfo[]> {
    return await this.registry().listBucketRecords();
  }

  /**
   * Registers the name (BucketAlreadyOwnedByYou if taken), then initialises its instance.
   * Gap: if the second step never happens, the bucket is listed but its object requests answer
   * NoSuchBucket; deleteBucket then createBucket repairs it.
   */
  async insertBucket(bucket: string, region: string, options: { objectLock?: boolean } = {}): Promise<void> {
    const created = Date.now();
    unwrap(await this.registry().registerBucket(bucket, region, created));
    await this.bucket(bucket).initBucket(bucket, region, created, options.objectLock ?? false);
  }

  /**
   * From the bucket list; inside a request whose fence covers the bucket, from the bucket's own
   * instance (the same record, and the call carries the request's settings stamp): the two differ
   * only in creation's and deletion's gaps (above), where the instance answers NoSuchBucket as it
   * does for object requests.
   */
  async getBucket(bucket: string): Promise<S.BucketInfo> {
    if (requestFence.getStore()?.stampFor(bucket) !== undefined) return unwrap(await this.at(bucket, 'getBucket', bucket));
    return unwrap(await this.registry().getBucket(bucket));
  }

  /**
   * The bucket's instance checks it is empty (objects and uploads) and ends the bucket in one
   * transaction, so no write can slip in after the check; then the name leaves the list, together
   * with the instance's pending garbage, and the instance frees its storage.
   * Gap: between the first and second step the bucket is still listed (HeadBucket succeeds) while
   * object requests answer NoSuchBucket; a retried deleteBucket completes it (each step is idempotent).
   * A crash before the last step leaves only storage that a later createBucket reuses.
   */
  async removeBucket(bucket: string): Promise<void> {
    unwrap(await this.registry().getBucket(bucket));
    const instance = this.bucket(bucket);
    const garbage = unwrap(await this.at(bucket, 'retireBucket', bucket));
    await this.registry().unregisterBucket(bucket, garbage);
    await instance.destroyIfRetired();
  }

  async getBucketCors(bucket: string): Promise<CorsRule[] | null> {
    return unwrap(await this.at(bucket, 'getBucketCors', bucket));
  }

  async setBucketCors(bucket: string, rules: CorsRule[] | null): Promise<void> {
    unwrap(await this.at(bucket, 'setBucketCors', bucket, rules));
  }

  async getBucketPolicy(bucket: string): Promise<string | null> {
    return unwrap(await this.bucket(bucket).getBucketPolicy(bucket));
  }

  async setBucketPolicy(bucket: string, policy: string | null, isPublic = false): Promise<void> {
    this.saw(bucket, unwrap(await this.bucket(bucket).setBucketPolicy(bucket, policy, isPublic)));
  }

  async getBucketPublicAccessBlock(bucket: string): Promise<string | null> {
    return unwrap(await this.bucket(bucket).getBucketPublicAccessBlock(bucket));
  }

  async setBucketPublicAccessBlock(bucket: string, value: string | null): Promise<void> {
    this.saw(bucket, unwrap(await this.bucket(bucket).setBucketPublicAccessBlock(bucket, value)));
  }

  async getBucketLogging(bucket: string): Promise<string | null> {
    return unwrap(await this.bucket(bucket).getBucketLogging(bucket));
  }

  async setBucketLogging(bucket: string, value: string | null): Promise<void> {
    unwrap(await this.bucket(bucket).setBucketLogging(bucket, value));
  }

  async appendAccessLog(target: string, group: LogGroup, lines: { at: number; line: string }[], now: Date, rollMs: number): Promise<AppendResult> {
    return unwrap(await this.bucket(target).appendAccessLog(target, group, lines, now.getTime(), rollMs));
  }

  async takeAccessLog(target: string, now: Date, rollMs: number): Promise<AccessLogBatch | null> {
    return unwrap(await this.bucket(target).takeAccessLog(target, now.getTime(), rollMs));
  }

  async accessLogDelivered(target: string, batchId: string): Promise<void> {
    unwrap(await this.bucket(target).accessLogDelivered(target, batchId));
  }

  async getBucketTagging(bucket: string): Promise<Tag[] | null> {
    return unwrap(await this.at(bucket, 'getBucketTagging', bucket));
  }

  async setBucketTagging(bucket: string, tags: Tag[] | null): Promise<void> {
    unwrap(await this.at(bucket, 'setBucketTagging', bucket, tags));
  }

  async setObjectTags(bucket: string, key: string, tags: Tag[], versionId?: string): Promise<CodedUnit | null> {
    return unwrap(await this.at(bucket, 'setObjectTags', bucket, key, tags, versionId));
  }

  async getBucketLifecycle(bucket: string): Promise<LifecycleRule[] | null> {
    return unwrap(await this.at(bucket, 'getBucketLifecycle', bucket));
  }

  async setBucketLifecycle(bucket: string, rules: LifecycleRule[] | null): Promise<void> {
    unwrap(await this.at(bucket, 'setBucketLifecycle', bucket, rules));
  }

  async getLifecycleRun(bucket: string): Promise<LifecycleRun> {
    return unwrap(await this.bucket(bucket).getLifecycleRun(bucket));
  }

  async listKeyVersions(bucket: string, afterKey: string | null, maxVersions: number): Promise<{ keys: { key: string; versions: VersionFacts[] }[]; atEnd: boolean }> {
    return unwrap(await this.bucket(bucket).listKeyVersions(bucket, afterKey, maxVersions));
  }

  async setLifecycleProgress(bucket: string, progress: LifecycleProgress | null): Promise<void> {
    unwrap(await this.bucket(bucket).setLifecycleProgress(bucket, progress));
  }

  async getVersioning(bucket: string): Promise<S.VersioningStatus | null> {
    return unwrap(await this.at(bucket, 'getVersioning', bucket));
  }

  async setVersioning(bucket: string, status: S.VersioningStatus): Promise<void> {
    unwrap(await this.at(bucket, 'setVersioning', bucket, status));
  }

  async getObjectLock(bucket: string): Promise<ObjectLockConfig | null> {
    return unwrap(await this.at(bucket, 'getObjectLock', bucket));
  }

  async setObjectLock(bucket: string, rule: DefaultRetention | null): Promise<void> {
    unwrap(await this.at(bucket, 'setObjectLock', bucket, rule));
  }

  async changeObjectLock(bucket: string, key: string, versionId: string | undefined, change: ObjectLockChange, bypassGovernance = false): Promise<void> {
    unwrap(await this.at(bucket, 'changeObjectLock', bucket, key, versionId, change, bypassGovernance));
  }

  async getVersion(bucket: string, key: string, versionId: string | null): Promise<VersionLookup> {
    return unwrap(await this.at(bucket, 'getVersion', bucket, key, versionId));
  }

  async listVersions(bucket: string, options: S.ListVersionsOptions): Promise<S.ListVersionsResult> {
    return unwrap(await this.at(bucket, 'listVersions', bucket, options));
  }

  async getManifest(bucket: string, key: string): Promise<ObjectManifest | null> {
    return unwrap(await this.at(bucket, 'getManifest', bucket, key));
  }

  async commitManifest(bucket: string, key: string, manifest: ObjectManifest, conditions: S.WriteConditions): Promise<CommitResult> {
    return unwrap(await this.at(bucket, 'commitManifest', bucket, key, manifest, { ...conditions, maxVersions: this.maxVersions }, this.grace));
  }

  async markRepaired(bucket: string, unitId: string, shards: number[]): Promise<void> {
    unwrap(await this.bucket(bucket).markRepaired(bucket, unitId, shards));
  }

  async markMissing(bucket: string, unitId: string, shards: number[]): Promise<void> {
    unwrap(await this.bucket(bucket).markMissing(bucket, unitId, shards));
  }

  async repairFailed(bucket: string, unitId: string, error: string, unreachable: string[] = []): Promise<void> {
    unwrap(await this.bucket(bucket).repairFailed(bucket, unitId, error, unreachable));
  }

  async repairSoon(bucket: string, reset: boolean, backend?: string): Promise<void> {
    unwrap(await this.bucket(bucket).repairSoon(bucket, reset, backend));
  }

  async removeManifest(bucket: string, key: string, conditions?: S.DeleteConditions, versionId?: string, bypassGovernance = false): Promise<S.DeleteObjectResult> {
    return unwrap(await this.at(bucket, 'removeManifest', bucket, key, conditions, this.grace, versionId, bypassGovernance));
  }

  async listManifests(bucket: string, options: S.ListObjectsOptions): Promise<S.ListObjectsResult> {
    return unwrap(await this.at(bucket, 'listManifests', bucket, options));
  }

  async insertUpload(bucket: string, key: string, options: { metadata: S.ObjectMetadata; checksum: S.MultipartChecksumSpec | null }): Promise<UploadRecord> {
    return unwrap(await this.at(bucket, 'insertUpload', bucket, key, options));
  }

  async getUpload(bucket: string, key: string, uploadId: string): Promise<UploadRecord> {
    return unwrap(await this.at(bucket, 'getUpload', bucket, key, uploadId));
  }

  async putPart(bucket: string, key: string, uploadId: string, part: PartRecord): Promise<void> {
    unwrap(await this.at(bucket, 'putPart', bucket, key, uploadId, part, this.grace));
  }

  async listPartRecords(bucket: string, key: string, uploadId: string, partNumberMarker: number, maxParts: number): Promise<{ parts: PartRecord[]; isTruncated: boolean }> {
    return unwrap(await this.at(bucket, 'listPartRecords', bucket, key, uploadId, partNumberMarker, maxParts));
  }

  async commitUpload(bucket: string, key: string, uploadId: string, manifest: ObjectManifest, conditions: S.WriteConditions): Promise<CommitResult> {
    return unwrap(await this.at(bucket, 'commitUpload', bucket, key, uploadId, manifest, { ...conditions, maxVersions: this.maxVersions }, this.grace));
  }

  async getCompletedUpload(bucket: string, key: string, uploadId: string): Promise<CompletedUpload | null> {
    return unwrap(await this.at(bucket, 'getCompletedUpload', bucket, key, uploadId));
  }

  async removeUpload(bucket: string, key: string, uploadId: string): Promise<void> {
    unwrap(await this.at(bucket, 'removeUpload', bucket, key, uploadId, this.grace));
  }

  async listUploadRecords(bucket: string, options: S.ListUploadsOptions): Promise<S.ListUploadsResult> {
    return unwrap(await this.at(bucket, 'listUploadRecords', bucket, options));
  }

  async releaseUnits(bucket: string, unitIds: string[]): Promise<void> {
    unwrap(await this.bucket(bucket).releaseUnits(bucket, unitIds));
  }

  async listSealRecords(bucket: string, after: SealRecordCursor | null, limit: number): Promise<SealRecord[]> {
    return unwrap(await this.bucket(bucket).listSealRecords(bucket, after, limit));
  }

  async replaceSealRecords(bucket: string, items: { at: SealRecordCursor; before: string; after: string }[]): Promise<number> {
    return unwrap(await this.bucket(bucket).replaceSealRecords(bucket, items));
  }

  async commitMove(bucket: string, move: ShardMove, notBefore: Date): Promise<'moved' | 'gone'> {
    return unwrap(await this.bucket(bucket).commitMove(bucket, move, notBefore.getTime()));
  }

  async getDrainState(bucket: string): Promise<string | null> {
    return unwrap(await this.bucket(bucket).getDrainState(bucket));
  }

  async setDrainState(bucket: string, value: string | null): Promise<void> {
    unwrap(await this.bucket(bucket).setDrainState(bucket, value));
  }

  async claimMoveChain(bucket: string, chain: string, now: number, staleMs: number): Promise<boolean> {
    return unwrap(await this.bucket(bucket).claimMoveChain(bucket, chain, now, staleMs));
  }

  async endMoveChain(bucket: string, chain: string): Promise<void> {
    unwrap(await this.bucket(bucket).endMoveChain(bucket, chain));
  }

  async listVersionRecords(bucket: string, after: VersionAt | null, limit: number): Promise<VersionRecord[]> {
    return unwrap(await this.bucket(bucket).listVersionRecords(bucket, after, limit));
  }

  async commitRestripe(bucket: string, at: VersionAt, before: string, storage: ObjectManifest['storage'], notBefore: Date): Promise<'rewritten' | 'gone'> {
    return unwrap(await this.bucket(bucket).commitRestripe(bucket, at, before, storage, notBefore.getTime()));
  }

  async setRestripeState(bucket: string, value: string | null): Promise<void> {
    unwrap(await this.bucket(bucket).setRestripeState(bucket, value));
  }

  async getRotationState(bucket: string): Promise<string | null> {
    return unwrap(await this.bucket(bucket).getRotationState(bucket));
  }

  async setRotationState(bucket: string, value: string | null): Promise<void> {
    unwrap(await this.bucket(bucket).setRotationState(bucket, value));
  }

  async pendingUnitIds(bucket: string): Promise<string[]> {
    return unwrap(await this.bucket(bucket).pendingUnitIds(bucket));
  }

  async getScrubCursor(bucket: string): Promise<ScrubCursor | null> {
    return unwrap(await this.bucket(bucket).getScrubCursor(bucket));
  }

  async recordScrub(bucket: string, checked: string[], cursor: ScrubCursor | null): Promise<void> {
    unwrap(await this.bucket(bucket).recordScrub(bucket, checked, cursor));
  }

  async getUnit(bucket: string, unitId: string): Promise<UnitRecord | null> {
    return unwrap(await this.bucket(bucket).getUnit(bucket, unitId));
  }

  async listUnits(bucket: string, afterUnit: string | null, limit: number): Promise<UnitRecord[]> {
    return unwrap(await this.bucket(bucket).listUnits(bucket, afterUnit, limit));
  }

  async prepareWrite(bucket: string, key: string, conditions: S.WriteConditions, unitIds: string[], expires: Date): Promise<void> {
    unwrap(await this.at(bucket, 'prepareWrite', bucket, key, { ...conditions, maxVersions: this.maxVersions }, unitIds, expires.getTime()));
  }

  async preparePart(bucket: string, key: string, uploadId: string, unitIds: string[], expires: Date): Promise<PreparedPart> {
    return unwrap(await this.at(bucket, 'preparePart', bucket, key, uploadId, unitIds, expires.getTime()));
  }

  async reserveUnits(bucket: string, unitIds: string[], expires: Date): Promise<void> {
    unwrap(await this.at(bucket, 'reserveUnits', bucket, unitIds, expires.getTime()));
  }

  /** Into the bucket's instance; if the bucket is gone, into '__buckets__' (the units still exist). */
  async queueGarbage(garbage: GarbageUnits, notBefore: Date): Promise<void> {
    const r = await this.bucket(garbage.bucket).queueGarbage(garbage, notBefore.getTime());
    if (r.error?.code === 'NoSuchBucket') await this.registry().queueOrphanGarbage(garbage, notBefore.getTime());
    else unwrap(r);
  }

  async takeDueGarbage(now: Date, limit: number): Promise<GarbageUnits[]> {
    if (limit <= 0) return [];
    const taken = await this.registry().takeDueGarbage(now.getTime(), limit);
    for (const b of await this.listBucketRecords()) {
      if (taken.length >= limit) break;
      taken.push(...(await this.bucket(b.name).takeDueGarbage(now.getTime(), limit - taken.length, b.name)));
    }
    return taken;
  }

  async bucketHealth(bucket: string, now: Date): Promise<BucketHealth> {
    return unwrap(await this.bucket(bucket).bucketHealth(bucket, now.getTime()));
  }

  async listDegradedUnits(bucket: string, after: { key: string; unitId: string } | null, limit: number): Promise<DegradedUnit[]> {
    return unwrap(await this.bucket(bucket).listDegradedUnits(bucket, after, limit));
  }

  async journalInstances(): Promise<string[]> {
    return [BUCKET_LIST_INSTANCE, ...(await this.listBucketRecords()).map((b) => b.name)];
  }

  /** The bucket list's instance, or a bucket's (one namespace: BUCKET_LIST_INSTANCE is no bucket name). */
  private journalInstance(instance: string) {
    return instance === BUCKET_LIST_INSTANCE ? this.registry() : this.bucket(instance);
  }

  async takeJournal(instance: string, now: Date, maxBytes: number): Promise<JournalTake | null> {
    return await this.journalInstance(instance).takeJournal(instance, now.getTime(), maxBytes);
  }

  async journalWritten(instance: string, take: JournalTake, units: CodedUnit[], now: Date): Promise<boolean> {
    return await this.journalInstance(instance).journalWritten(instance, take, units, now.getTime(), this.grace);
  }

  async importJournal(bucket: string, batch: JournalImportBatch): Promise<number> {
    return unwrap(await this.bucket(bucket).importJournal(bucket, batch));
  }

  async journalStatus(instance: string): Promise<JournalStatus | null> {
    return await this.journalInstance(instance).journalStatus(instance);
  }

  async journalKnown(instance: string): Promise<JournalKnown | null> {
    return await this.journalInstance(instance).journalKnown(instance);
  }

  async journalContinueAfter(instance: string, from: NonNullable<JournalImportBatch['finish']>): Promise<void> {
    await this.journalInstance(instance).journalContinueAfter(instance, from);
  }

  async journalFiles(instance: string): Promise<{ segment: number; units: CodedUnit[] }[]> {
    return await this.journalInstance(instance).journalFiles(instance);
  }

  async journalReplaceUnits(instance: string, segment: number, before: string[], after: CodedUnit[], now: Date): Promise<boolean> {
    return await this.journalInstance(instance).journalReplaceUnits(instance, segment, before, after, now.getTime() + this.grace);
  }

  async catalogLoss(): Promise<CatalogLoss> {
    return await this.registry().catalogLoss();
  }

  async setCatalogLoss(loss: CatalogLoss): Promise<void> {
    await this.registry().setCatalogLoss(loss);
  }

  async deletedBucketGarbage(now: Date): Promise<{ queued: number; due: number }> {
    return await this.registry().deletedBucketGarbage(now.getTime());
  }
}
