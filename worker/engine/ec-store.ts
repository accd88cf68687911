/**
 * EcStore: the ObjectStore of the gateway. S3 semantics over the Catalog (the strongly
 * consistent index) and the UnitStore (bytes as inline data, replicas or erasure-coded units).
 * A write reserves its unit ids (a PutObject in the same catalog call that checks its
 * conditions, beside the uploads, whose last bytes wait for it), streams the body into fresh
 * shard keys, then commits the manifest in the catalog: the commit is the atomic step, so a crash
 * before it leaves the old version readable and only reserved orphans, which the collector deletes. Unhealthy shards seen on reads
 * or missed by writes are handed to `enqueueRepair`.
 * Spec: AWS S3 API reference, one method per operation; completion rules in model/multipart.ts.
 * Versions: reads name a version or take the current one (a delete marker answers as S3 does);
 * the catalog decides at commit what a write replaces, by the bucket's versioning state.
 * Known gaps: CopyObject copies data (no shard sharing).
 */
import type { StoredObjectAcl } from '../model/acl.ts';
import { lend, type LentStream } from '../model/lent-chunks.ts';
import { retentionOf, type LegalHoldStatus, type ObjectLockState, type Retention } from '../model/object-lock.ts';
import { toHex } from '../model/bytes.ts';
import { checkReadConditions, checkWriteConditions } from '../model/conditions.ts';
import { S3Error } from '../model/errors.ts';
import { completedChecksum, multipartEtag, selectCompletedParts } from '../model/multipart.ts';
import type * as T from '../model/object-store.ts';
import { checkCopySourceRange, resolvePart, resolveRange } from '../model/range.ts';
import type { Tag } from '../model/tagging.ts';
import { newId } from '../format/ids.ts';
import type { CodedUnit, ObjectManifest } from '../format/manifest.ts';
import type { CommitResult, PartRecord, RepairMessage } from '../catalog/types.ts';
import type { ObjectCatalog, QuotaCatalog } from '../catalog/ports.ts';
import { CodingBudget, storageReadBytes, writeBytes, type BudgetHolder, type BudgetLease, type BudgetSnapshot } from './coding-budget.ts';
import { policyForClass, type EngineSettings, type StoragePolicy } from './policy.ts';
import { BucketConfig } from './bucket-config.ts';
import type { StoragePlan, StoreBodyInput, StoredBody, UnitStore } from './unit-store.ts';
import { checkSseRead, customerKeyOf, etagFor, kmsRecordOf, sseRecordOf, type SseRecord, type SseRequest } from '../model/sse.ts';
import { parseStoredDefaultEncryption } from '../model/default-encryption.ts';
import type { KmsKeys } from './kms-keys.ts';

/** Shards of one unit to rebuild: found damaged by a read or the scrubber, or missed by a write. */
export type RepairTask = RepairMessage;

/** A storage plan whose unit ids are reserved in the catalog until `commitBy` (plus a margin). */
interface Reservation {
  plan: StoragePlan;
  /** The policy of the version's storage class: what the write stores under. */
  policy: StoragePolicy;
  commitBy: number;
}

/** Upload checksum specs an isolate remembers (an upload's spec never changes; ids are unique). */
const UPLOAD_SPECS_KEPT = 1000;

/** A part whose checksum disagrees with its upload's. */
function checkPartChecksum(spec: T.MultipartChecksumSpec | null, checksum: T.ChecksumRequest | null | undefined): void {
  if (spec && checksum && checksum.algorithm !== spec.algorithm) {
    throw new S3Error(
      'InvalidRequest',
      `Checksum Type mismatch occurred, expected checksum Type: ${spec.algorithm.toLowerCase()}, actual checksum Type: ${checksum.algorithm.toLowerCase()}`,
    );
  }
}

/** The catalog verbs EcStore calls: the object store's, and the usage counters HeadBucket's read-stats reads. */
export type EcStoreCatalog = ObjectCatalog & Pick<QuotaCatalog, 'bucketUsage'>;

export interface EcStoreOptions {
  catalog: EcStoreCatalog;
  units: UnitStore;
  settings: EngineSettings;
  enqueueRepair?: (task: RepairTask) => void;
  /** Who a coded request's budget is for: the request being served (its owner), if any. */
  holder?: () => BudgetHolder | undefined;
  /** The named KMS keys (SSE-KMS); absent: a gateway without its own encryption, where aws:kms is NotImplemented. */
  kms?: KmsKeys;
}

/** The parts of a multipart object in order (a part of a wide code spans several units, all with
 *  its number); null for an object uploaded in one piece. */
function objectParts(m: ObjectManifest): T.ObjectPart[] | null {
  // An adopted multipart object keeps its source's part boundaries (stored in one piece).
  const adopted = m.partsCount ? undefined : m.metadata.sourceParts;
  if (adopted) return adopted.map((size, i) => ({ partNumber: i + 1, size, checksum: null }));
  if (!m.partsCount || m.storage.kind !== 'coded') return null;
  const parts: T.ObjectPart[] = [];
  m.storage.units.forEach((u, i) => {
    const last = parts[parts.length - 1];
    if (last && u.partNumber !== undefined && last.partNumber === u.partNumber) last.size += u.size;
    else parts.push({ partNumber: u.partNumber ?? i + 1, size: u.size, checksum: u.checksum ?? null });
  });
  return parts;
}

/** The checksum of part `n` as S3 reports it on a partNumber read: the part's own value with the
 *  object's checksum type (part 1 of an object uploaded in one piece: the object's checksum). */
function partChecksum(m: ObjectManifest, n: number): T.ObjectChecksum | null {
  if (!m.checksum) return null;
  const parts = objectParts(m);
  if (!parts) return n === 1 ? m.checksum : null;
  const own = parts[n - 1]?.checksum;
  return own && own.algorithm === m.checksum.algorithm ? { algorithm: own.algorithm, type: m.checksum.type, value: own.value } : null;
}

/** Sizes of the object's parts in order; the whole object for one uploaded in one piece. */
function partSizes(m: ObjectManifest): number[] {
  return objectParts(m)?.map((p) => p.size) ?? [m.size];
}

/** 48 MiB of coding memory per isolate (of its 128 MB), and 30 s to wait for it. */
const DEFAULT_CODING_BUDGET = { bytes: 48 * 1024 * 1024, maxWaitMs: 30_000 };

function info(m: ObjectManifest): T.ObjectInfo {
  return {
    key: m.key,
    size: m.size,
    etag: m.etag,
    lastModified: new Date(m.lastModified),
    metadata: m.metadata,
    checksum: m.checksum,
    partsCount: m.partsCount ?? m.metadata.sourceParts?.length,
  };
}

export class EcStore implements T.ObjectStore {
  private readonly catalog: EcStoreCatalog;
  private readonly units: UnitStore;
  private readonly settings: EngineSettings;
  private readonly budget: CodingBudget;
  private readonly budgetBytes: number;
  /** Checksum specs of uploads this isolate created or took parts for, by upload id (UPLOAD_SPECS_KEPT). */
  private readonly uploadSpecs = new Map<string, T.MultipartChecksumSpec | null>();
  private readonly uploadClasses = new Map<string, string | undefined>();
  /** The SSE records of uploads this isolate created or took parts for (an SSE-KMS upload's parts are sealed under its key). */
  private readonly uploadSses = new Map<string, SseRecord | undefined>();
  /** The buckets' configuration (model/bucket-config-store.ts): a port of its own, over the same catalog and settings. */
  readonly config: BucketConfig;

  constructor(private readonly opts: EcStoreOptions) {
    this.catalog = opts.catalog;
    this.units = opts.units;
    this.settings = opts.settings;
    this.config = new BucketConfig({ catalog: opts.catalog, settings: opts.settings, seals: (p) => opts.units.seals(p), kms: () => this.kms() });
    const b: NonNullable<EngineSettings['codingBudget']> = opts.settings.codingBudget ?? DEFAULT_CODING_BUDGET;
    this.budget = new CodingBudget(b.bytes, b.maxWaitMs, Math.floor(b.bytes * (b.tenantShare ?? 1)));
    this.budgetBytes = b.bytes;
  }

  /** The isolate's coding budget right now: held, holders, waiters (the operator's gauge). */
  codingBudget(): BudgetSnapshot {
    return this.budget.snapshot();
  }

  /** `bytes` for the request being served; `beyondShare`: more for a request that already holds
   *  its lease (a degraded read's rebuilt rows), which must not wait for its own lease to end. */
  private acquire(bytes: number, beyondShare = false): Promise<BudgetLease> {
    const holder = this.opts.holder?.() ?? { label: 'unattributed' };
    if (!beyondShare || holder.tenant === undefined) return this.budget.acquire(bytes, holder);
    return this.budget.acquire(bytes, { label: holder.label, ...(holder.signal ? { signal: holder.signal } : {}), adopt: (lease) => holder.adopt?.(lease) });
  }

  /**
   * The bytes [start, end] of `storage`. A coded body is opened within the isolate's coding
   * budget: under `lease` when the caller holds one for it (a copy: the caller releases it), else
   * under a lease of its own, which the stream gives back when it ends, fails or is cancelled.
   */
  private async openBody(
    bucket: string,
    key: string,
    storage: ObjectManifest['storage'],
    start: number,
    end: number,
    lease?: BudgetLease,
    customerKey?: Uint8Array,
  ): Promise<LentStream> {
    if (storage.kind === 'inline') return this.units.open(bucket, key, storage, start, end, undefined, customerKey);
    const held = storageReadBytes(storage);
    const own = lease ? undefined : await this.acquire(held);
    const release = () => own?.release();
    // A degraded column read asks for its rebuilt rows' memory beyond what it holds; never for
    // more than the rest of the budget, which it could wait for forever while holding its share.
    const rest = Math.max(0, this.budgetBytes - held);
    const grow = async (bytes: number) => {
      const extra = await this.acquire(Math.min(bytes, rest), true);
      return () => extra.release();
    };
    let body: LentStream;
    try {
      body = await this.units.open(bucket, key, storage, start, end, grow, customerKey);
    } catch (err) {
      release();
      throw err;
    }
    if (!own) return body;
    const reader = body.getReader();
    // The unit stream's chunks, handed on as lent (valid until the next read).
    return lend(
      new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            try {
              const r = await reader.read();
              if (r.done) {
                release();
                controller.close();
              } else controller.enqueue(r.value);
            } catch (err) {
              release();
              controller.error(err);
            }
          },
          cancel(reason) {
            release();
            return reader.cancel(reason);
          },
        },
        { highWaterMark: 0 },
      ),
      `object ${key} under its budget lease`,
    );
  }

  /**
   * The version a read is for: the current one, or `versionId`. A delete marker is not an
   * object: NoSuchKey when it is current, 405 MethodNotAllowed when named, both with
   * x-amz-delete-marker (and its version id), as S3 answers; a key with no version at all is
   * NoSuchKey with `x-amz-delete-marker: false`.
   */
  private async readable(
    bucket: string,
    key: string,
    versionId?: string,
  ): Promise<{ m: ObjectManifest; versionId?: string; expiration?: T.ObjectInfo['expiration'] }> {
    const found = await this.catalog.getVersion(bucket, key, versionId ?? null);
    if (found.kind === 'object')
      return {
        m: found.manifest,
        ...(found.versionId === undefined ? {} : { versionId: found.versionId }),
        ...(found.expiration ? { expiration: found.expiration } : {}),
      };
    if (found.kind === 'marker') {
      const headers = { 'x-amz-delete-marker': 'true', 'x-amz-version-id': found.versionId, 'Last-Modified': new Date(found.lastModified).toUTCString() };
      if (versionId === undefined) throw new S3Error('NoSuchKey', undefined, { Key: key }).withHeaders(headers);
      throw new S3Error('MethodNotAllowed', undefined, { Method: 'GET', ResourceType: 'DeleteMarker' }).withHeaders({ ...headers, Allow: 'DELETE' });
    }
    if (versionId !== undefined) throw new S3Error('NoSuchVersion', undefined, { Key: key, VersionId: versionId });
    // No version at all: said as RGW says it (and ceph/s3-tests expects); AWS leaves the header out
    // when false. SDKs read its value, so "false" means what no header means (docs/COMPATIBILITY.md "Versioning").
    throw new S3Error('NoSuchKey', undefined, { Key: key }).withHeaders({ 'x-amz-delete-marker': 'false' });
  }

  private requireLength(contentLength: number | null | undefined, max: number): number {
    if (contentLength == null) throw new S3Error('MissingContentLength');
    if (contentLength > max) throw new S3Error('EntityTooLarge', undefined, { ProposedSize: String(contentLength), MaxSizeAllowed: String(max) });
    return contentLength;
  }

  /**
   * How a body of `size` is stored, and until when its unit ids are to be reserved: the caller
   * makes the catalog call (prepareWrite, preparePart) beside the uploads, whose shards' last
   * bytes wait for it (`commitGate`), so no shard is stored unreserved and an orphan is always
   * found. The write must commit by `commitBy`, a margin before the reservation expires and the
   * collector may start deleting its shards.
   */
  private async planWrite(bucket: string, size: number, part: boolean, forceSeal = false, storageClass?: string): Promise<Reservation & { expires: Date }> {
    const policy = policyForClass(this.settings, bucket, storageClass);
    const plan = this.units.plan(size, policy, part, forceSeal, await this.units.shelfOf(bucket));
    const lifetime = this.settings.writeReservationSeconds * 1000;
    const expires = Date.now() + lifetime;
    return { plan, policy, expires: new Date(expires), commitBy: expires - Math.min(lifetime / 10, 10 * 60_000) };
  }

  private async reserve(bucket: string, key: string, size: number, part: boolean, storageClass?: string): Promise<Reservation> {
    const reserved = await this.planWrite(bucket, size, part, false, storageClass);
    if (reserved.plan.unitIds.length) await this.catalog.reserveUnits(bucket, reserved.plan.unitIds, reserved.expires, key);
    return reserved;
  }

  /** The checksum spec of an upload (uploadSpecs; from the catalog when this isolate has not seen it). */
  private async uploadSpec(bucket: string, key: string, uploadId: string): Promise<T.MultipartChecksumSpec | null> {
    const known = this.uploadSpecs.get(uploadId);
    if (known !== undefined) return known;
    return (await this.lookUpUpload(bucket, key, uploadId)).checksum;
  }

  /** The upload from the catalog, its spec, class and SSE remembered at once (one call for all three). */
  private async lookUpUpload(bucket: string, key: string, uploadId: string) {
    const upload = await this.catalog.getUpload(bucket, key, uploadId);
    this.rememberSpec(uploadId, upload.checksum);
    this.rememberClass(uploadId, upload.metadata.storageClass);
    this.rememberSse(uploadId, upload.metadata.sse);
    return upload;
  }

  /**
   * The storage class of an upload (its parts are stored under its policy): remembered by the
   * isolate that created it, else read from the catalog. No lookup when only STANDARD is configured.
   */
  private async uploadClass(bucket: string, key: string, uploadId: string): Promise<string | undefined> {
    if (!Object.keys(this.settings.storageClasses ?? {}).length) return undefined;
    if (this.uploadClasses.has(uploadId)) return this.uploadClasses.get(uploadId);
    return (await this.lookUpUpload(bucket, key, uploadId)).metadata.storageClass;
  }

  private rememberClass(uploadId: string, storageClass: string | undefined): string | undefined {
    if (this.uploadClasses.size >= UPLOAD_SPECS_KEPT) this.uploadClasses.delete(this.uploadClasses.keys().next().value!);
    this.uploadClasses.set(uploadId, storageClass);
    return storageClass;
  }

  private rememberSpec(uploadId: string, spec: T.MultipartChecksumSpec | null): T.MultipartChecksumSpec | null {
    if (this.uploadSpecs.size >= UPLOAD_SPECS_KEPT) this.uploadSpecs.delete(this.uploadSpecs.keys().next().value!);
    this.uploadSpecs.set(uploadId, spec);
    return spec;
  }

  /**
   * Stores a body under reserved unit ids, within the isolate's coding budget (under `lease` when
   * the caller holds one for it: a copy); a write that ends past its `commitBy` is refused.
   */
  private async store(input: Omit<StoreBodyInput, 'policy' | 'plan'>, reserved?: Reservation, lease?: BudgetLease): Promise<StoredBody> {
    // Without a reservation made beside it (a test's crash-write fixture): reserved first.
    const { plan, commitBy, policy } =
      reserved ?? (await this.reserve(input.bucket, input.key, input.size, !!input.part, (input.metadata as T.ObjectMetadata | undefined)?.storageClass));
    const own = lease || plan.mode === 'inline' ? undefined : await this.acquire(writeBytes(plan, policy.blockSize));
    let stored: StoredBody;
    try {
      stored = await this.units.storeBody({ ...input, policy, plan });
    } finally {
      own?.release();
    }
    if (Date.now() > commitBy) {
      if (stored.storage.kind === 'coded') await this.units.discard(input.bucket, stored.storage.units);
      throw new S3Error('RequestTimeout', `the upload took longer than the gateway's writeReservationSeconds (${this.settings.writeReservationSeconds})`);
    }
    return stored;
  }

  /** Commits, or deletes the freshly written shards when the commit is refused. */
  private async commit(
    bucket: string,
    key: string,
    m: ObjectManifest,
    conditions: T.WriteConditions,
    run?: () => Promise<CommitResult>,
  ): Promise<T.PutObjectResult> {
    let committed: CommitResult;
    try {
      committed = await (run ? run() : this.catalog.commitManifest(bucket, key, m, conditions));
    } catch (err) {
      if (m.storage.kind === 'coded' && !run) await this.units.discard(bucket, m.storage.units);
      throw err;
    }
    if (m.storage.kind === 'coded') {
      for (const u of m.storage.units) {
        if (u.missing.length) this.opts.enqueueRepair?.({ bucket, key, unitId: u.unitId, shards: u.missing, reason: { kind: 'write-missed' } });
      }
    }
    await this.retainShards(bucket, m);
    return {
      etag: m.etag,
      checksum: m.checksum,
      size: m.size,
      lastModified: new Date(m.lastModified),
      ...(m.metadata.sse ? { sse: m.metadata.sse } : {}),
      ...committed,
    };
  }

  listBuckets = () => this.catalog.listBucketRecords();
  createBucket = (bucket: string, o: T.CreateBucketOptions) =>
    this.catalog.insertBucket(bucket, o.region, {
      objectLock: o.objectLock ?? false,
      ...(o.owner === undefined ? {} : { owner: o.owner }),
      ...(o.ownership === undefined ? {} : { ownership: o.ownership }),
      ...(o.acl === undefined ? {} : { acl: o.acl }),
    });
  headBucket = (bucket: string) => this.catalog.getBucket(bucket);
  async bucketStats(bucket: string): Promise<T.BucketStats> {
    const usage = await this.catalog.bucketUsage(bucket);
    return { objects: usage.objects, bytes: usage.bytes, quota: usage.quota && { bytes: usage.quota.bytes, objects: usage.quota.objects } };
  }
  deleteBucket = (bucket: string) => this.catalog.removeBucket(bucket);

  /** The catalog first (it marks the unit that carries the record), then the tag record beside
   *  the shards (tag-record.ts), so a rebuild from the backends restores these tags. */
  async putObjectTagging(bucket: string, key: string, tags: Tag[], versionId?: string): Promise<void> {
    const unit = await this.catalog.setObjectTags(bucket, key, tags, versionId);
    if (unit) await this.units.writeTagRecord(bucket, key, unit, tags);
  }

  putObjectAcl = (bucket: string, key: string, acl: StoredObjectAcl | undefined, versionId?: string) => this.catalog.setObjectAcl(bucket, key, acl, versionId);

  async headObjectParts(
    bucket: string,
    key: string,
    conditions: T.ReadConditions,
    sse?: SseRequest | null,
    versionId?: string,
  ): Promise<{ head: T.ObjectInfo; parts: T.ObjectPart[] | null }> {
    const found = await this.readable(bucket, key, versionId);
    const head = found.versionId === undefined ? info(found.m) : { ...info(found.m), versionId: found.versionId };
    const m = found.m;
    await this.checkRead(m.metadata.sse, sse); // an SSE-C object's attributes need its key, as its head does
    checkReadConditions(head, conditions);
    return { head, parts: objectParts(m) };
  }
  /**
   * PutObject in two serial rounds and at most two catalog calls. An inline object: the body,
   * then one commit (which checks the conditions atomically). A coded one: prepareWrite (the
   * conditions checked and the unit ids reserved, one call) runs while the shards upload, and
   * every shard's last bytes wait for its answer, so no shard is stored before its unit is
   * reserved (an orphan is always found: docs/STORAGE.md); then the commit.
   * A refusal by prepareWrite aborts the uploads and deletes what they sent.
   */
  async putObject(bucket: string, key: string, body: ReadableStream<Uint8Array>, o: T.PutObjectOptions): Promise<T.PutObjectResult> {
    const max = this.settings.maxObjectSize;
    if (o.contentLength == null || o.contentLength > max) {
      // Refused for its length: NoSuchBucket and failed conditions are answered first, as before.
      const current = await this.catalog.getManifest(bucket, key);
      checkWriteConditions(current ? info(current) : undefined, o.conditions, key);
    }
    const size = this.requireLength(o.contentLength, max);
    const customerKey = customerKeyOf(o.sse);
    const { sse, kmsKid } = await this.writeSse(bucket, o.sse, o.metadata.storageClass);
    const parts = o.adopted?.parts;
    // The source's part boundaries, when they add up to the object (else it is one part).
    const sourceParts = parts && parts.length > 1 && parts.reduce((a, b) => a + b, 0) === o.contentLength ? parts : undefined;
    const metadata = {
      ...o.metadata,
      ...(sse ? { sse } : {}),
      ...(o.adopted ? { adopted: true as const } : {}),
      ...(sourceParts ? { sourceParts } : {}),
    };
    const reserved = await this.planWrite(bucket, size, false, !!customerKey || !!kmsKid, o.metadata.storageClass);
    const { plan } = reserved;
    // The declared length goes with it: the bucket's quota is checked in the same call (catalog/quota.ts); an inline write's commit checks it.
    const prepared = plan.mode === 'inline' ? undefined : this.catalog.prepareWrite(bucket, key, o.conditions, plan.unitIds, reserved.expires, size);
    prepared?.catch(() => {}); // awaited by the shards' uploads (and below); never unhandled
    const contentMD5 = o.contentMD5 ?? (o.adopted ? adoptedMd5(o.adopted.etag) : null);
    const stored = await this.store(
      { bucket, key, body, size, checksum: o.checksum, contentMD5, metadata, commitGate: prepared, customerKey, kmsKid },
      reserved,
    );
    await prepared;
    const m = this.newManifest(bucket, key, size, etagFor(toHex(stored.md5), sse), metadata, stored.checksum, stored.storage);
    if (o.adopted) {
      // The source's ETag and date, as clients of the source knew them (docs/ADOPTION.md).
      m.etag = o.adopted.etag;
      m.lastModified = o.adopted.lastModified.toISOString();
    }
    return this.commit(bucket, key, m, o.conditions);
  }

  /**
   * What an object's metadata records of its encryption: what the request asked for, else SSE-S3
   * when the bucket's policy seals it under the gateway's keys (it is then encrypted at rest with
   * AES-256 by the server, which is what SSE-S3 says, and S3 clients are told so).
   */
  private async sseRecord(bucket: string, req: SseRequest | null | undefined, storageClass?: string): Promise<SseRecord | undefined> {
    return (await sseRecordOf(req)) ?? (this.units.seals(policyForClass(this.settings, bucket, storageClass)) ? { kind: 's3' } : undefined);
  }

  /**
   * The SSE of a write and what its units are sealed under: the request's, else the bucket's
   * default encryption (as this isolate last saw its request-path settings), else sseRecord's.
   * SSE-KMS: the named key resolved (unknown or disabled: refused before anything is stored) and
   * its current version's kid.
   */
  private async writeSse(bucket: string, req: SseRequest | null | undefined, storageClass?: string): Promise<{ sse?: SseRecord; kmsKid?: string }> {
    const asked = req ?? this.defaultSse(bucket);
    if (asked?.kind !== 'kms') return { sse: await this.sseRecord(bucket, asked, storageClass) };
    const key = await this.kms().forWrite(asked.keyId);
    return { sse: kmsRecordOf(asked, key), kmsKid: key.kid };
  }

  private defaultSse(bucket: string): SseRequest | null {
    const d = parseStoredDefaultEncryption(this.catalog.cachedBucketSettings(bucket).rows.encryption);
    if (d?.algorithm !== 'aws:kms') return null; // AES256: what sseRecord answers for a sealing policy (PutBucketEncryption refuses it on another)
    return { kind: 'kms', ...(d.kmsKeyId !== undefined ? { keyId: d.kmsKeyId } : {}), ...(d.bucketKey ? { bucketKey: true } : {}) };
  }

  private kms(): KmsKeys {
    if (!this.opts.kms)
      throw new S3Error('NotImplemented', 'SSE-KMS needs the gateway\'s own encryption (config "encryption" with an active key), which this gateway has not.');
    return this.opts.kms;
  }

  /** checkSseRead, and for an SSE-KMS object its key enabled (a disabled key refuses reads, as AWS's). */
  private async checkRead(record: SseRecord | undefined, req: SseRequest | null | undefined, of: 'object' | 'copy-source' = 'object'): Promise<void> {
    await checkSseRead(record, req, of);
    if (record?.kind === 'kms') await this.kms().checkReadable(record.keyId);
  }

  /** The SSE record of an upload (uploadSses; from the catalog when this isolate has not seen it). */
  private async uploadSse(bucket: string, key: string, uploadId: string): Promise<SseRecord | undefined> {
    if (this.uploadSses.has(uploadId)) return this.uploadSses.get(uploadId);
    return (await this.lookUpUpload(bucket, key, uploadId)).metadata.sse;
  }

  private rememberSse(uploadId: string, sse: SseRecord | undefined): SseRecord | undefined {
    if (this.uploadSses.size >= UPLOAD_SPECS_KEPT) this.uploadSses.delete(this.uploadSses.keys().next().value!);
    this.uploadSses.set(uploadId, sse);
    return sse;
  }

  /**
   * What a part of an SSE-KMS upload is sealed under: its key's current version (the key enabled:
   * else the part is refused as a write is). Undefined for any other upload; no lookup on a gateway without KMS.
   */
  private async partKmsKid(bucket: string, key: string, uploadId: string): Promise<string | undefined> {
    if (!this.opts.kms) return undefined;
    const sse = await this.uploadSse(bucket, key, uploadId);
    return sse?.kind === 'kms' ? (await this.opts.kms.forWrite(sse.keyId)).kid : undefined;
  }

  private newManifest(
    bucket: string,
    key: string,
    size: number,
    etag: string,
    metadata: T.ObjectMetadata,
    checksum: T.ObjectChecksum | null,
    storage: ObjectManifest['storage'],
    partsCount?: number,
  ): ObjectManifest {
    return { format: 1, bucket, key, versionId: newId(), size, etag, lastModified: new Date().toISOString(), metadata, checksum, storage, partsCount };
  }

  /** The object's head for a read: conditions checked, the Range or part resolved. */
  private async readHead(m: ObjectManifest, o: T.GetObjectOptions, versionId?: string, expiration?: T.ObjectInfo['expiration']): Promise<T.ObjectHead> {
    const i: T.ObjectInfo = { ...info(m), ...(versionId === undefined ? {} : { versionId }), ...(expiration ? { expiration } : {}) };
    // The key first (issue 37): a condition's answer (304 or 412) tells whether a guessed ETag is right.
    await this.checkRead(m.metadata.sse, o.sse);
    checkReadConditions(i, o.conditions);
    if (o.partNumber) return { ...i, range: resolvePart(partSizes(m), o.partNumber), partChecksum: partChecksum(m, o.partNumber) };
    return { ...i, range: o.range ? resolveRange(o.range, i.size) : null };
  }

  async headObject(bucket: string, key: string, o: T.GetObjectOptions): Promise<T.ObjectHead> {
    const { m, versionId, expiration } = await this.readable(bucket, key, o.versionId);
    return await this.readHead(m, o, versionId, expiration);
  }

  async getObject(bucket: string, key: string, o: T.GetObjectOptions): Promise<T.ObjectBody> {
    const { m, versionId, expiration } = await this.readable(bucket, key, o.versionId);
    const head = await this.readHead(m, o, versionId, expiration);
    const { start, end } = head.range ?? { start: 0, end: m.size - 1 };
    if (end < start) return { ...head, body: lend(new ReadableStream({ start: (c) => c.close() }), 'an empty part') };
    return { ...head, body: await this.openBody(bucket, key, m.storage, start, end, undefined, customerKeyOf(o.sse)) };
  }

  deleteObject = (bucket: string, key: string, o: T.DeleteObjectOptions = {}): Promise<T.DeleteObjectResult> =>
    this.catalog.removeManifest(bucket, key, o.conditions, o.versionId, o.bypassGovernance ?? false);

  async deleteObjects(
    bucket: string,
    objects: T.DeleteObjectsRequestEntry[],
    o: { bypassGovernance?: boolean; refused?: (key: string, versionId?: string) => boolean } = {},
  ): Promise<T.DeleteObjectsEntry[]> {
    await this.catalog.getBucket(bucket);
    const out: T.DeleteObjectsEntry[] = [];
    for (const { key, versionId, conditions } of objects) {
      try {
        if (o.refused?.(key, versionId)) throw new S3Error('AccessDenied');
        out.push({ key, ...(await this.catalog.removeManifest(bucket, key, conditions, versionId, o.bypassGovernance ?? false)) });
      } catch (err) {
        out.push({ key, error: err instanceof S3Error ? { code: err.code, message: err.message } : { code: 'InternalError', message: String(err) } });
      }
    }
    return out;
  }

  /**
   * CopyObject in three serial rounds and three catalog calls: the source's manifest (the bytes
   * to copy are only known from it), then prepareWrite beside the copy's reads and uploads (the
   * destination's conditions and the reservation; the shards' last bytes wait for it), then the
   * commit. A refused prepareWrite is the copy's error and leaves nothing behind.
   */
  async copyObject(src: T.CopySource, bucket: string, key: string, o: T.CopyObjectOptions): Promise<T.PutObjectResult> {
    const { m: source, versionId: sourceVersionId } = await this.readable(src.bucket, src.key, src.versionId);
    await this.checkRead(source.metadata.sse, src.sse, 'copy-source');
    checkReadConditions(info(source), src.conditions, true);
    // The source's lock stays with the source: the copy has the request's (or the bucket's default).
    // The copy's class is the request's (STANDARD when it names none), never the source's, as in S3.
    const {
      tags: sourceTags,
      sse: _sourceSse,
      objectLock: _sourceLock,
      storageClass: _sourceClass,
      adopted: _adopted,
      sourceParts: _sourceParts,
      acl: _sourceAcl,
      ...sourceMetadata
    } = source.metadata;
    const {
      objectLock: _replacedLock,
      storageClass: _replacedClass,
      ...base
    }: T.ObjectMetadata = o.metadataDirective === 'REPLACE' ? (o.metadata ?? { user: {} }) : sourceMetadata;
    const tags = o.tagging === 'COPY' ? (sourceTags ?? []) : o.tagging;
    const storageClass = o.storageClass;
    const { sse, kmsKid } = await this.writeSse(bucket, o.sse, storageClass); // the target's own: never the source's
    const customerKey = customerKeyOf(o.sse);
    const metadata = {
      ...base,
      ...(tags.length ? { tags } : {}),
      ...(sse ? { sse } : {}),
      ...(o.objectLock ? { objectLock: o.objectLock } : {}),
      ...(storageClass ? { storageClass } : {}),
      ...(o.acl ? { acl: o.acl } : {}),
    };
    const algorithm = o.checksumAlgorithm ?? source.checksum?.algorithm ?? null;
    const stored = await this.copyBody(
      source,
      0,
      source.size - 1,
      bucket,
      false,
      { source: customerKeyOf(src.sse), target: customerKey, kmsKid },
      storageClass,
      // An inline copy has no unit to reserve: its commit checks the conditions.
      async ({ plan, expires }) =>
        plan.mode === 'inline' ? undefined : this.catalog.prepareWrite(bucket, key, o.conditions, plan.unitIds, expires, source.size),
      async (body, reserved, lease, prepared) => {
        prepared.catch(() => {}); // awaited by the shards' uploads (and below); never unhandled
        const stored = await this.store(
          {
            bucket,
            key,
            body,
            size: source.size,
            checksum: algorithm ? { algorithm, expected: null } : null,
            metadata,
            commitGate: prepared,
            customerKey,
            kmsKid,
          },
          reserved,
          lease,
        );
        try {
          await prepared;
        } catch (err) {
          if (stored.storage.kind === 'coded') await this.units.discard(bucket, stored.storage.units);
          throw err;
        }
        return stored;
      },
    );
    const m = this.newManifest(bucket, key, source.size, etagFor(toHex(stored.md5), sse), metadata, stored.checksum, stored.storage);
    const result = await this.commit(bucket, key, m, o.conditions);
    return sourceVersionId === undefined ? result : { ...result, sourceVersionId };
  }

  /** The lock state of the version a retention or legal-hold read names (InvalidRequest when the bucket has no lock). */
  private async lockOf(bucket: string, key: string, versionId?: string): Promise<ObjectLockState | undefined> {
    if (!(await this.catalog.getObjectLock(bucket))) throw new S3Error('InvalidRequest', 'Bucket is missing Object Lock Configuration');
    return (await this.readable(bucket, key, versionId)).m.metadata.objectLock;
  }
  async getObjectRetention(bucket: string, key: string, versionId?: string): Promise<Retention> {
    const retention = retentionOf(await this.lockOf(bucket, key, versionId));
    if (!retention) throw new S3Error('NoSuchObjectLockConfiguration');
    return retention;
  }
  async putObjectRetention(bucket: string, key: string, retention: Retention | null, o: { versionId?: string; bypassGovernance?: boolean }): Promise<void> {
    await this.catalog.changeObjectLock(bucket, key, o.versionId, { retention }, o.bypassGovernance ?? false);
    if (retention?.mode === 'COMPLIANCE') await this.retainShards(bucket, (await this.readable(bucket, key, o.versionId)).m);
  }

  /**
   * Mirrors a version's COMPLIANCE retention onto its shards where the backend enforces
   * retention (UnitStore.retain; GOVERNANCE is not mirrored: a bypass at the gateway would leave
   * shards the collector cannot delete). A failure is logged: the catalog's lock still holds.
   */
  private async retainShards(bucket: string, m: ObjectManifest): Promise<void> {
    const lock = m.metadata.objectLock;
    if (lock?.mode !== 'COMPLIANCE' || !lock.retainUntil || m.storage.kind !== 'coded') return;
    const failed = await this.units.retain(bucket, m.storage.units, new Date(lock.retainUntil));
    if (failed)
      console.error(
        JSON.stringify({ level: 'error', msg: 'object lock: shards not retained by their backends', bucket, key: m.key, versionId: m.versionId, failed }),
      );
  }
  async getObjectLegalHold(bucket: string, key: string, versionId?: string): Promise<LegalHoldStatus> {
    const status = (await this.lockOf(bucket, key, versionId))?.legalHold;
    if (!status) throw new S3Error('NoSuchObjectLockConfiguration');
    return status;
  }
  putObjectLegalHold = (bucket: string, key: string, legalHold: LegalHoldStatus, versionId?: string) =>
    this.catalog.changeObjectLock(bucket, key, versionId, { legalHold });

  listObjects = (bucket: string, o: T.ListObjectsOptions) => this.catalog.listManifests(bucket, o);
  listObjectVersions = (bucket: string, o: T.ListVersionsOptions) => this.catalog.listVersions(bucket, o);

  async createMultipartUpload(
    bucket: string,
    key: string,
    o: { metadata: T.ObjectMetadata; checksum: T.MultipartChecksumSpec | null; sse?: SseRequest | null },
  ): Promise<T.UploadInfo> {
    const { sse } = await this.writeSse(bucket, o.sse, o.metadata.storageClass); // an unknown class (or KMS key) is refused here, before the upload exists
    const { metadata: _m, ...upload } = await this.catalog.insertUpload(bucket, key, {
      metadata: sse ? { ...o.metadata, sse } : o.metadata,
      checksum: o.checksum,
    });
    this.rememberSpec(upload.uploadId, upload.checksum);
    this.rememberClass(upload.uploadId, o.metadata.storageClass);
    this.rememberSse(upload.uploadId, sse);
    return { ...upload, ...(sse ? { sse } : {}), ...(o.metadata.storageClass ? { storageClass: o.metadata.storageClass } : {}) };
  }

  /** Stores a part (under `prepared`: the reservation's catalog call, which its shards wait for) and records it. */
  private async storePart(
    bucket: string,
    key: string,
    uploadId: string,
    partNumber: number,
    body: ReadableStream<Uint8Array>,
    size: number,
    checksum: T.ChecksumRequest | null,
    contentMD5: string | null | undefined,
    reserved: Reservation,
    lease: BudgetLease | undefined,
    prepared: Promise<SseRecord | null>,
    customerKey?: Uint8Array,
    kmsKid?: string,
  ): Promise<T.PartInfo> {
    const commitGate = prepared.then(() => {});
    commitGate.catch(() => {}); // awaited by the shards' uploads, refused or not: never unhandled
    const stored = await this.store(
      { bucket, key, body, size, checksum, contentMD5, part: { uploadId, partNumber }, commitGate, customerKey, kmsKid },
      reserved,
      lease,
    );
    let sse: SseRecord | null;
    try {
      sse = await prepared;
    } catch (err) {
      await this.units.discard(bucket, (stored.storage as { units: CodedUnit[] }).units);
      throw err;
    }
    const units = (stored.storage as { units: CodedUnit[] }).units;
    const part: PartRecord = {
      partNumber,
      etag: etagFor(toHex(stored.md5), sse),
      size,
      lastModified: new Date().toISOString(),
      units,
      checksum: stored.checksum,
    };
    try {
      await this.catalog.putPart(bucket, key, uploadId, part);
    } catch (err) {
      await this.units.discard(bucket, units);
      throw err;
    }
    for (const u of units) {
      if (u.missing.length) this.opts.enqueueRepair?.({ bucket, key, unitId: u.unitId, shards: u.missing, reason: { kind: 'write-missed' } });
    }
    return { partNumber, etag: part.etag, size, lastModified: new Date(part.lastModified), checksum: stored.checksum, ...(sse ? { sse } : {}) };
  }

  /**
   * UploadPart in two serial rounds and two catalog calls: preparePart (the upload looked up and
   * the part's unit ids reserved, one call) runs while the shards upload, whose last bytes wait
   * for it, then putPart. The checksum to compute must be known before the body is read: the
   * client's own, or the upload's spec when the part has none; a spec this isolate has not seen
   * yet (it remembers those of uploads it created or took parts for) is looked up first, a third
   * round. A part whose checksum disagrees with the upload's is refused once preparePart answers,
   * and what it sent is deleted.
   */
  async uploadPart(
    bucket: string,
    key: string,
    uploadId: string,
    partNumber: number,
    body: ReadableStream<Uint8Array>,
    o: Omit<T.PutObjectOptions, 'metadata' | 'conditions'>,
  ): Promise<T.PartInfo> {
    const max = this.settings.maxPartSize;
    if (o.contentLength == null || o.contentLength > max) await this.catalog.getUpload(bucket, key, uploadId); // NoSuchUpload first, as before
    const size = this.requireLength(o.contentLength, max);
    const spec = o.checksum ? undefined : await this.uploadSpec(bucket, key, uploadId);
    const checksum = o.checksum ?? (spec ? { algorithm: spec.algorithm, expected: null } : null);
    // The part is sealed under the key the request gives; whether it is the upload's is known when
    // preparePart answers (refused then, and what was sent deleted, as a mismatching checksum).
    const customerKey = customerKeyOf(o.sse);
    const kmsKid = customerKey ? undefined : await this.partKmsKid(bucket, key, uploadId);
    const reserved = await this.planWrite(bucket, size, true, !!customerKey || !!kmsKid, await this.uploadClass(bucket, key, uploadId));
    const prepared = this.preparePart(bucket, key, uploadId, reserved.plan.unitIds, reserved.expires, checksum, o.sse, size);
    return this.storePart(bucket, key, uploadId, partNumber, body, size, checksum, o.contentMD5, reserved, undefined, prepared, customerKey, kmsKid);
  }

  /** preparePart, its spec remembered and checked against the part's checksum (settles once; never unhandled). */
  private preparePart(
    bucket: string,
    key: string,
    uploadId: string,
    unitIds: string[],
    expires: Date,
    checksum: T.ChecksumRequest | null,
    sse: SseRequest | null | undefined,
    size: number,
  ): Promise<SseRecord | null> {
    // The part's length goes with it: the bucket's quota counts parts in flight (catalog/quota.ts).
    const prepared = this.catalog.preparePart(bucket, key, uploadId, unitIds, expires, size).then(async (answer) => {
      this.rememberSpec(uploadId, answer.checksum);
      try {
        checkPartChecksum(answer.checksum, checksum);
        await checkSseRead(answer.sse ?? undefined, sse?.kind === 'c' ? sse : null, 'part');
      } catch (err) {
        await this.catalog.releaseUnits(bucket, unitIds, key).catch(() => {}); // refused: its shards are deleted, nothing stays reserved
        throw err;
      }
      return answer.sse;
    });
    prepared.catch(() => {});
    return prepared;
  }

  /** UploadPartCopy: the source (and the upload's spec, unless known) in one round, then as UploadPart. */
  async uploadPartCopy(src: T.CopySource, bucket: string, key: string, uploadId: string, partNumber: number, sse?: SseRequest | null): Promise<T.PartInfo> {
    const [spec, { m: source }, storageClass] = await Promise.all([
      this.uploadSpec(bucket, key, uploadId),
      this.readable(src.bucket, src.key, src.versionId),
      this.uploadClass(bucket, key, uploadId),
    ]);
    const customerKey = customerKeyOf(sse);
    const kmsKid = customerKey ? undefined : await this.partKmsKid(bucket, key, uploadId);
    await this.checkRead(source.metadata.sse, src.sse, 'copy-source');
    checkReadConditions(info(source), src.conditions, true);
    if (src.range) checkCopySourceRange(src.range, source.size);
    const { start, end } = src.range ?? { start: 0, end: source.size - 1 };
    const checksum = spec ? { algorithm: spec.algorithm, expected: null } : null;
    return this.copyBody(
      source,
      start,
      end,
      bucket,
      true,
      { source: customerKeyOf(src.sse), target: customerKey, kmsKid },
      storageClass,
      (reserved) => this.preparePart(bucket, key, uploadId, reserved.plan.unitIds, reserved.expires, checksum, sse, end - start + 1),
      (body, reserved, lease, prepared) =>
        this.storePart(bucket, key, uploadId, partNumber, body, end - start + 1, checksum, null, reserved, lease, prepared, customerKey, kmsKid),
    );
  }

  /**
   * The copy paths (CopyObject, UploadPartCopy): the bytes [start, end] of `source` written by
   * `write`, while `prepare` (the write's catalog call: conditions and reservation) runs beside
   * it; the shards' last bytes wait for it. A copy reads and writes at once, so it takes the
   * budget for both in ONE step, before anything is reserved: two copies each holding their read
   * share while waiting for their write share could wait on each other for ever, and a copy
   * refused SlowDown leaves nothing behind. The lease and the source body are given back here,
   * however the write ends.
   */
  private async copyBody<R, P>(
    source: ObjectManifest,
    start: number,
    end: number,
    bucket: string,
    part: boolean,
    keys: { source?: Uint8Array; target?: Uint8Array; kmsKid?: string },
    storageClass: string | undefined,
    prepare: (reserved: Reservation & { expires: Date }) => Promise<P>,
    write: (body: ReadableStream<Uint8Array>, reserved: Reservation, lease: BudgetLease, prepared: Promise<P>) => Promise<R>,
  ): Promise<R> {
    const reserved = await this.planWrite(bucket, end - start + 1, part, !!keys.target || !!keys.kmsKid, storageClass);
    const lease = await this.acquire(storageReadBytes(source.storage) + writeBytes(reserved.plan, reserved.policy.blockSize));
    let body: ReadableStream<Uint8Array> | undefined;
    try {
      const prepared = prepare(reserved);
      body = await this.openBody(source.bucket, source.key, source.storage, start, end, lease, keys.source);
      return await write(body, reserved, lease, prepared);
    } finally {
      // The source first (its buffers are what the lease accounts for): a no-op once the write
      // has read it to the end; a failed write has released its lock on it (unit-writer.ts).
      await body?.cancel().catch(() => {});
      lease.release();
    }
  }

  private async allParts(bucket: string, key: string, uploadId: string): Promise<Map<number, PartRecord>> {
    const parts = new Map<number, PartRecord>();
    for (let marker = 0; ; ) {
      const page = await this.catalog.listPartRecords(bucket, key, uploadId, marker, 1000);
      for (const p of page.parts) parts.set(p.partNumber, p);
      if (!page.isTruncated || page.parts.length === 0) return parts;
      marker = page.parts[page.parts.length - 1]!.partNumber;
    }
  }

  /**
   * Completes an upload. Completing it again after it succeeded (an SDK retrying after a timeout,
   * or two Completes racing) answers the first completion's result, as S3 does, for as long as
   * the catalog remembers it (COMPLETED_UPLOAD_MEMORY_MS); the parts list is not compared again.
   */
  async completeMultipartUpload(
    bucket: string,
    key: string,
    uploadId: string,
    parts: T.CompletedPart[],
    o: T.CompleteMultipartOptions,
  ): Promise<T.PutObjectResult> {
    try {
      return await this.completeOnce(bucket, key, uploadId, parts, o);
    } catch (err) {
      if (!(err instanceof S3Error && err.code === 'NoSuchUpload')) throw err;
      const done = await this.catalog.getCompletedUpload(bucket, key, uploadId);
      if (!done) throw err;
      return {
        etag: done.etag,
        checksum: done.checksum,
        size: done.size,
        lastModified: new Date(done.lastModified),
        ...(done.versionId === undefined ? {} : { versionId: done.versionId }),
        ...(done.expiration ? { expiration: done.expiration } : {}),
      };
    }
  }

  private async completeOnce(
    bucket: string,
    key: string,
    uploadId: string,
    parts: T.CompletedPart[],
    o: T.CompleteMultipartOptions,
  ): Promise<T.PutObjectResult> {
    const upload = await this.catalog.getUpload(bucket, key, uploadId);
    if (o.sse) await checkSseRead(upload.metadata.sse, o.sse, 'part');
    const current = await this.catalog.getManifest(bucket, key);
    checkWriteConditions(current ? info(current) : undefined, o.conditions, key);
    const chosen = selectCompletedParts(parts, await this.allParts(bucket, key, uploadId), uploadId, this.settings.minPartSize);
    const checksum = completedChecksum(upload.checksum, chosen, o.expectedChecksum);
    const size = chosen.reduce((n, p) => n + p.size, 0);
    const etag = multipartEtag(chosen.map((p) => p.etag));
    // Each unit keeps its part's checksum (GetObjectAttributes reports it per part).
    const units = chosen.flatMap((p) => p.units.map((u) => (p.checksum ? { ...u, checksum: p.checksum } : u)));
    const m = this.newManifest(bucket, key, size, etag, upload.metadata, checksum, { kind: 'coded', units }, chosen.length);
    return this.commit(bucket, key, m, o.conditions, () => this.catalog.commitUpload(bucket, key, uploadId, m, o.conditions));
  }

  abortMultipartUpload = (bucket: string, key: string, uploadId: string) => this.catalog.removeUpload(bucket, key, uploadId);

  async listParts(bucket: string, key: string, uploadId: string, o: { partNumberMarker: number; maxParts: number }): Promise<T.ListPartsResult> {
    const { metadata, ...upload } = await this.catalog.getUpload(bucket, key, uploadId);
    const page = await this.catalog.listPartRecords(bucket, key, uploadId, o.partNumberMarker, o.maxParts);
    const parts = page.parts.map((p) => ({
      partNumber: p.partNumber,
      etag: p.etag,
      size: p.size,
      lastModified: new Date(p.lastModified),
      checksum: p.checksum ?? null,
    }));
    return {
      upload: {
        ...upload,
        ...(metadata.storageClass ? { storageClass: metadata.storageClass } : {}),
        ...(metadata.acl ? { owner: metadata.acl.owner } : {}),
      },
      parts,
      isTruncated: page.isTruncated,
      nextPartNumberMarker: parts.length ? parts[parts.length - 1]!.partNumber : null,
    };
  }

  listMultipartUploads = (bucket: string, o: T.ListUploadsOptions) => this.catalog.listUploadRecords(bucket, o);
}

/** The Content-MD5 (base64) a plain-MD5 source ETag promises, or null (a multipart or an SSE-KMS ETag promises none). */
function adoptedMd5(etag: string): string | null {
  const hex = /^"?([0-9a-f]{32})"?$/i.exec(etag)?.[1];
  if (!hex) return null;
  const bytes = new Uint8Array(16);
  for (let i = 0; i < 16; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return btoa(String.fromCharCode(...bytes));
}
