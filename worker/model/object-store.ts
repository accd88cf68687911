/**
 * ObjectStore: the contract between the S3 front door (worker/s3) and storage (worker/engine's
 * EcStore). The S3 handlers parse and validate a request, then call one verb here. The store owns
 * everything that needs the object bytes or atomicity: hashing (MD5 for the ETag and the
 * requested checksum, one pass), verifying expected digests before anything becomes visible,
 * conditional writes, listing order, multipart assembly rules.
 * Every verb throws S3Error (model/errors.ts) for what the client can act on; failures of the
 * storage underneath (backends, coder, quorum) surface as their own error types and are mapped to
 * S3 errors in one place (worker/app/error-map.ts).
 * Spec: AWS S3 API reference, one verb per operation of the same name.
 * Versions (S3 versioning): a `versionId` selector is a version id as the store gave it, or
 * 'null' for S3's null version; results carry `versionId` only where S3 sends x-amz-version-id
 * (writes: an Enabled bucket's; reads and deletes: a bucket whose versioning was ever
 * configured, or a request that named a version).
 * A bucket's configuration (CORS, policy, logging, tags, lifecycle, lock, versioning, default
 * encryption) is not here: it is the port of its own in bucket-config-store.ts (issue 39).
 * Known gaps: ACLs are the owner's only (s3/acl.ts); no MFA Delete.
 */
import type { LentStream } from './lent-chunks.ts';
import type { ChecksumAlgorithm, ChecksumType } from './checksums.ts';
import type { ObjectExpiration } from './lifecycle.ts';
import type { Tag } from './tagging.ts';
import type { SseRecord, SseRequest } from './sse.ts';
import type { LegalHoldStatus, ObjectLockState, Retention } from './object-lock.ts';
import type { StoredObjectAcl } from './acl.ts';

export type { ChecksumAlgorithm, ChecksumType };

/** A stored checksum: base64 digest, with a "-N" suffix for a COMPOSITE multipart checksum. */
export interface ObjectChecksum {
  algorithm: ChecksumAlgorithm;
  type: ChecksumType;
  value: string;
}

/** A checksum the client asked for. `expected` null: compute and store only. A promise when the
 *  value arrives in an aws-chunked trailer: the store awaits it after reading the body to its end. */
export interface ChecksumRequest {
  algorithm: ChecksumAlgorithm;
  expected: string | null | Promise<string | null>;
}

/** System metadata that round-trips as headers, plus x-amz-meta-* (names lower-case, no prefix). */
export interface ObjectMetadata {
  contentType?: string;
  contentEncoding?: string;
  contentDisposition?: string;
  contentLanguage?: string;
  cacheControl?: string;
  expires?: string;
  user: Record<string, string>;
  /** The object's tags, sorted by key (model/tagging.ts); absent or empty: none. Not a header. */
  tags?: Tag[];
  /** How the client asked the object to be encrypted (model/sse.ts); absent: not asked. */
  sse?: SseRecord;
  /** The version's retention and legal hold (model/object-lock.ts); absent: none. Headers on GET/HEAD. */
  objectLock?: ObjectLockState;
  /**
   * The version's S3 storage class (issue 44), which names the storage policy it is stored under
   * (engine/policy.ts policyForClass); absent: STANDARD, as every version written before classes.
   */
  storageClass?: string;
  /**
   * The version is an adoption of its key's object in the bucket's source (issue 41,
   * adopt/adopting-store.ts), not a client's write: the backfill may adopt the key again when the
   * source's object changes. Not a header; a copy does not carry it.
   */
  adopted?: true;
  /**
   * The part sizes of the source's multipart object an adoption stored in one piece (issue 41),
   * so `partNumber` reads, the parts count and GetObjectAttributes ObjectParts answer with the
   * source's part boundaries. Not a header; a copy does not carry it (a copy is one part, as in S3).
   */
  sourceParts?: number[];
  /**
   * The version's ACL (model/acl.ts) on a bucket whose Object Ownership enables ACLs: its owner
   * and grants; absent: the bucket owner's, FULL_CONTROL alone (every version written before ACLs,
   * and every one on a BucketOwnerEnforced bucket). Not a header; a copy does not carry it (S3
   * gives a copy the ACL its request asks for). A rebuild from the shards alone drops it
   * (upkeep/rebuild.ts): the header keeps the ACL the version was written with, not a later
   * PutObjectAcl, so a grant since revoked must not come back.
   */
  acl?: StoredObjectAcl;
}

/** GET/HEAD preconditions (RFC 9110 order): 412 PreconditionFailed or 304 NotModified. */
export interface ReadConditions {
  ifMatch?: string;
  ifNoneMatch?: string;
  ifModifiedSince?: Date;
  ifUnmodifiedSince?: Date;
}

/** Conditional write: checked atomically with the commit. ifNoneMatch '*' = must not exist
 *  (412); ifMatch = current ETag must match (412), NoSuchKey when there is no object. */
export interface WriteConditions {
  ifMatch?: string;
  ifNoneMatch?: '*';
  /** Not a client's: a catalog rebuild's commit of what the backends already hold, which no bucket quota refuses (docs/QUOTAS.md). */
  restoring?: true;
}

/** A requested range as parsed; the store resolves it against the size (416 InvalidRange). */
export type ByteRange = { start: number; end?: number } | { suffixLength: number };
/** Inclusive byte offsets. */
export interface ResolvedRange {
  start: number;
  end: number;
}

/** A bucket's versioning state; a bucket never configured has none (null). */
export type VersioningStatus = 'Enabled' | 'Suspended';

export interface ObjectInfo {
  key: string;
  size: number;
  etag: string; // quoted
  lastModified: Date;
  metadata: ObjectMetadata;
  checksum: ObjectChecksum | null;
  versionId?: string;
  partsCount?: number;
  /** A read of the current version that a lifecycle rule will expire: when (ms) and by which rule (x-amz-expiration). */
  expiration?: ObjectExpiration;
}

export interface ObjectHead extends ObjectInfo {
  /** The bytes served: a Range, or a part (partNumber; `end` = `start` - 1 for an empty part). */
  range: ResolvedRange | null;
  /**
   * A read by partNumber: the checksum of the bytes served, the part's own (an object uploaded in
   * one piece: the object's), with the object's checksum type; null when there is none. Absent
   * for any other read.
   */
  partChecksum?: ObjectChecksum | null;
}

/**
 * `body` carries exactly the bytes of `range` (or the whole object when range is null). Its
 * chunks are lent (lent-chunks.ts): valid until the next read; a consumer that keeps one copies it.
 */
export interface ObjectBody extends ObjectHead {
  body: LentStream;
}

export interface PutObjectOptions {
  contentLength?: number | null; // IncompleteBody when the body has another length
  contentMD5?: string | null; // base64; BadDigest on mismatch
  metadata: ObjectMetadata;
  checksum: ChecksumRequest | null;
  conditions: WriteConditions;
  /** SSE-S3 or SSE-C as the request asks (s3/sse-headers.ts). */
  sse?: SseRequest | null;
  /**
   * Never a client's: the adoption of an object from a bucket's source (worker/adopt,
   * docs/ADOPTION.md) keeps the source's ETag (a multipart one too) and Last-Modified. A plain
   * MD5 ETag is checked against the bytes (BadDigest, nothing committed), as Content-MD5 is.
   */
  adopted?: { etag: string; lastModified: Date; parts?: number[] };
}

export interface PutObjectResult {
  etag: string;
  /** How the stored object is encrypted at the client's request (echoed in the response). */
  sse?: SseRecord;
  versionId?: string;
  /** When a lifecycle rule will expire the written version (x-amz-expiration), judged by the commit. */
  expiration?: ObjectExpiration;
  /** CopyObject: the version copied (x-amz-copy-source-version-id), where S3 names it. */
  sourceVersionId?: string;
  checksum: ObjectChecksum | null;
  size: number;
  lastModified: Date;
}

export interface GetObjectOptions {
  range?: ByteRange | null;
  /** GetObject/HeadObject `partNumber`: the bytes of that part (never together with `range`). */
  partNumber?: number | null;
  conditions: ReadConditions;
  /** The SSE-C key the read gives (an SSE-C object needs it). */
  sse?: SseRequest | null;
  /** A version to read (absent: the current one; NoSuchVersion, or 405 for a delete marker). */
  versionId?: string;
  /**
   * HeadObject for GetObjectTagging: the head's metadata must carry the object's tags. A store
   * that answers from elsewhere (an adopted bucket's source: adopt/adopting-store.ts) asks for them
   * then, and only then.
   */
  tags?: true;
}

/** Source of CopyObject / UploadPartCopy. Its conditions come from x-amz-copy-source-if-*:
 *  every failure is 412 PreconditionFailed (never 304). */
export interface CopySource {
  bucket: string;
  key: string;
  conditions: ReadConditions;
  range?: ResolvedRange | null; // UploadPartCopy only, already validated syntax
  /** The source's SSE-C key (x-amz-copy-source-server-side-encryption-customer-*). */
  sse?: SseRequest | null;
  /** `?versionId=` of x-amz-copy-source (absent: the current version). */
  versionId?: string;
}

export interface CopyObjectOptions {
  metadataDirective: 'COPY' | 'REPLACE';
  metadata?: ObjectMetadata; // used with REPLACE
  /** x-amz-tagging-directive: COPY (the source's tags) or the tags to set (REPLACE). */
  tagging: 'COPY' | Tag[];
  checksumAlgorithm?: ChecksumAlgorithm | null; // recompute with this algorithm
  conditions: WriteConditions;
  /** The target's encryption (never the source's). */
  sse?: SseRequest | null;
  /** The target's lock from the request's headers (never the source's; the bucket default applies without one). */
  objectLock?: ObjectLockState | undefined;
  /** The target's storage class from x-amz-storage-class (never the source's); absent: STANDARD. */
  storageClass?: string;
  /** The target's ACL from the request (model/acl.ts; never the source's); absent: the bucket owner's alone. */
  acl?: StoredObjectAcl | undefined;
}

/**
 * Conditional delete (DeleteObject's If-Match, x-amz-if-match-last-modified-time and
 * x-amz-if-match-size; a DeleteObjects entry's ETag, LastModifiedTime and Size), checked by the
 * catalog in the same step as the delete (model/conditions.ts checkDeleteConditions) against the
 * version named, or the current version. Every condition present must hold.
 */
export interface DeleteConditions {
  /** An entity tag (quoted or not) or `*` (any object). */
  ifMatch?: string;
  /** Milliseconds since the epoch, compared at one-second resolution (as Last-Modified shows it). */
  lastModifiedTime?: number;
  /** Bytes. */
  size?: number;
}

export interface DeleteObjectOptions {
  conditions?: DeleteConditions;
  /** Removes exactly this version (absent: the key, or a delete marker in a versioned bucket). */
  versionId?: string;
  /** x-amz-bypass-governance-retention from a key allowed to bypass (s3/object-lock.ts): a GOVERNANCE-retained version may go. */
  bypassGovernance?: boolean;
}

/** What a DeleteObject did: x-amz-version-id (the version removed, or the marker added) and
 *  x-amz-delete-marker (a marker was added, or the version removed was one). */
export interface DeleteObjectResult {
  versionId?: string;
  deleteMarker?: boolean;
}

/** One <Object> of a DeleteObjects request: each is deleted (and its conditions checked) on its own. */
export interface DeleteObjectsRequestEntry {
  key: string;
  versionId?: string;
  conditions?: DeleteConditions;
}

export interface DeleteObjectsEntry extends DeleteObjectResult {
  key: string;
  error?: { code: string; message: string };
}

export interface ListVersionsOptions {
  prefix: string;
  delimiter: string | null;
  /** Resume after this key (all its versions) ... */
  keyMarker: string | null;
  /** ... or, with keyMarker, after this version of it. */
  versionIdMarker: string | null;
  maxKeys: number;
}

/** A version or a delete marker as ListObjectVersions reports it. */
export interface ObjectVersionSummary {
  key: string;
  versionId: string;
  isLatest: boolean;
  deleteMarker: boolean;
  lastModified: Date;
  /** Absent for a delete marker. */
  object?: { size: number; etag: string; checksum: ObjectChecksum | null; storageClass?: string };
}

export interface ListVersionsResult {
  /** Versions and delete markers in listing order: keys ascending, newest first within a key. */
  versions: ObjectVersionSummary[];
  commonPrefixes: string[];
  isTruncated: boolean;
  nextKeyMarker: string | null;
  nextVersionIdMarker: string | null;
}

export interface ListObjectsOptions {
  prefix: string;
  delimiter: string | null;
  /** Resume after this entry. If it is a common prefix of this listing, or a key under one, every
   *  key under that prefix is skipped (the prefix sorts at or before it). */
  startAfter: string | null;
  maxKeys: number;
}

export interface ObjectSummary {
  key: string;
  size: number;
  etag: string;
  lastModified: Date;
  checksum: ObjectChecksum | null;
  /** Absent: STANDARD. */
  storageClass?: string;
}

export interface ListObjectsResult {
  objects: ObjectSummary[];
  commonPrefixes: string[];
  isTruncated: boolean;
  /** Last key or common prefix returned: pass it back as startAfter for the next page. */
  lastEntry: string | null;
}

export interface BucketInfo {
  name: string;
  creationDate: Date;
  region: string;
}

/** A bucket's usage counters (the catalog's ledger, over every version and partition) and its quota. */
export interface BucketStats {
  /** Versions holding data (a bucket never versioned: one per key); delete markers are not counted. */
  objects: number;
  /** Logical bytes of those versions. */
  bytes: number;
  /** The bucket's quota (docs/QUOTAS.md): null figures are not limited; null: no quota. */
  quota: { bytes: number | null; objects: number | null } | null;
}

export interface MultipartChecksumSpec {
  algorithm: ChecksumAlgorithm;
  type: ChecksumType;
}

export interface UploadInfo {
  key: string;
  uploadId: string;
  initiated: Date;
  checksum: MultipartChecksumSpec | null;
  /** How the upload's object will be encrypted (echoed by CreateMultipartUpload). */
  sse?: SseRecord;
  /** The upload's storage class (absent: STANDARD). */
  storageClass?: string;
  /** The account its object will belong to (model/acl.ts: its writer's on an ObjectWriter bucket); absent: the bucket owner. */
  owner?: string;
}

export interface PartInfo {
  partNumber: number;
  etag: string;
  size: number;
  lastModified: Date;
  checksum: ObjectChecksum | null;
  /** The upload's encryption (echoed by UploadPart and UploadPartCopy). */
  sse?: SseRecord;
}

export interface CompletedPart {
  partNumber: number;
  etag: string;
  checksum?: { algorithm: ChecksumAlgorithm; value: string };
}

export interface CompleteMultipartOptions {
  conditions: WriteConditions;
  /** Full-object or composite value from x-amz-checksum-* on the Complete request; BadDigest on mismatch. */
  expectedChecksum?: { algorithm: ChecksumAlgorithm; value: string } | null;
  /**
   * SSE-C headers on the Complete request: optional, as AWS has them (a client need not repeat
   * the key to complete); given, they must be the upload's key (400 otherwise, as for a part).
   */
  sse?: SseRequest | null;
}

/** One part of a stored object, as GetObjectAttributes reports it. */
export interface ObjectPart {
  partNumber: number;
  size: number;
  checksum: ObjectChecksum | null;
}

export interface ListPartsResult {
  upload: UploadInfo;
  parts: PartInfo[];
  isTruncated: boolean;
  nextPartNumberMarker: number | null;
}

export interface ListUploadsOptions {
  prefix: string;
  delimiter: string | null;
  keyMarker: string | null;
  uploadIdMarker: string | null;
  maxUploads: number;
}

export interface ListUploadsResult {
  uploads: UploadInfo[];
  commonPrefixes: string[];
  isTruncated: boolean;
  nextKeyMarker: string | null;
  nextUploadIdMarker: string | null;
}

export interface CreateBucketOptions {
  region: string;
  /** Created with Object Lock enabled (versioning Enabled, for good). */
  objectLock?: boolean;
  /** The creating key's account (absent: the default). */
  owner?: string;
  /** Its Object Ownership and ACL rows (model/acl.ts ownershipRow, bucketAclRow; absent: BucketOwnerEnforced, private). */
  ownership?: string | null;
  acl?: string | null;
}

export interface ObjectStore {
  // Buckets
  listBuckets(): Promise<BucketInfo[]>;
  /** BucketAlreadyOwnedByYou when the name is taken, by any account. */
  createBucket(bucket: string, options: CreateBucketOptions): Promise<void>;
  headBucket(bucket: string): Promise<BucketInfo>;
  /** The bucket's usage counters and quota, read from the catalog's ledger (no listing); NoSuchBucket. */
  bucketStats(bucket: string): Promise<BucketStats>;
  deleteBucket(bucket: string): Promise<void>;

  // Objects
  putObject(bucket: string, key: string, body: ReadableStream<Uint8Array>, options: PutObjectOptions): Promise<PutObjectResult>;
  /** Metadata only: never opens object data. */
  headObject(bucket: string, key: string, options: GetObjectOptions): Promise<ObjectHead>;
  getObject(bucket: string, key: string, options: GetObjectOptions): Promise<ObjectBody>;
  /** The object's head and, for a multipart object, its parts (null otherwise); never opens data. */
  headObjectParts(
    bucket: string,
    key: string,
    conditions: ReadConditions,
    sse?: SseRequest | null,
    versionId?: string,
  ): Promise<{ head: ObjectInfo; parts: ObjectPart[] | null }>;
  /** Replaces the tags of the object (or of one version of it: NoSuchVersion); already validated, [] removes them. NoSuchKey. */
  putObjectTagging(bucket: string, key: string, tags: Tag[], versionId?: string): Promise<void>;
  /** Replaces the ACL of the object (or of one version: NoSuchVersion; a delete marker: MethodNotAllowed); undefined: the bucket owner's alone. NoSuchKey. */
  putObjectAcl(bucket: string, key: string, acl: StoredObjectAcl | undefined, versionId?: string): Promise<void>;
  /** Succeeds when the key (or version) does not exist (S3 semantics); NoSuchBucket otherwise.
   *  With conditions (DeleteConditions): 412 on a mismatch, and NoSuchKey when there is no current
   *  object and no version is named (model/conditions.ts checkDeleteConditions). */
  deleteObject(bucket: string, key: string, options?: DeleteObjectOptions): Promise<DeleteObjectResult>;
  /**
   * `refused`: asked of each entry just before it is deleted (after the bucket's first catalog
   * call, so a bucket policy is current: s3/policy-gate.ts); true gives the entry AccessDenied.
   */
  deleteObjects(
    bucket: string,
    objects: DeleteObjectsRequestEntry[],
    options?: { bypassGovernance?: boolean; refused?: (key: string, versionId?: string) => boolean },
  ): Promise<DeleteObjectsEntry[]>;
  /** A version's retention: NoSuchObjectLockConfiguration when it has none; InvalidRequest when the bucket has no lock. */
  getObjectRetention(bucket: string, key: string, versionId?: string): Promise<Retention>;
  /** Sets (null: removes) a version's retention under assertRetentionChange's rule (AccessDenied). */
  putObjectRetention(bucket: string, key: string, retention: Retention | null, options: { versionId?: string; bypassGovernance?: boolean }): Promise<void>;
  getObjectLegalHold(bucket: string, key: string, versionId?: string): Promise<LegalHoldStatus>;
  putObjectLegalHold(bucket: string, key: string, status: LegalHoldStatus, versionId?: string): Promise<void>;
  listObjectVersions(bucket: string, options: ListVersionsOptions): Promise<ListVersionsResult>;
  copyObject(source: CopySource, bucket: string, key: string, options: CopyObjectOptions): Promise<PutObjectResult>;
  listObjects(bucket: string, options: ListObjectsOptions): Promise<ListObjectsResult>;

  // Multipart
  createMultipartUpload(
    bucket: string,
    key: string,
    options: { metadata: ObjectMetadata; checksum: MultipartChecksumSpec | null; sse?: SseRequest | null },
  ): Promise<UploadInfo>;
  uploadPart(
    bucket: string,
    key: string,
    uploadId: string,
    partNumber: number,
    body: ReadableStream<Uint8Array>,
    options: Omit<PutObjectOptions, 'metadata' | 'conditions'>,
  ): Promise<PartInfo>;
  uploadPartCopy(source: CopySource, bucket: string, key: string, uploadId: string, partNumber: number, sse?: SseRequest | null): Promise<PartInfo>;
  /** Parts ascending (InvalidPartOrder), known with matching ETag (InvalidPart), all but the last
   *  at least the minimum part size (EntityTooSmall). ETag = "hex(md5(concat part md5s))-N".
   *  Repeated after success (an SDK retrying), it answers the same result again for a while. */
  completeMultipartUpload(bucket: string, key: string, uploadId: string, parts: CompletedPart[], options: CompleteMultipartOptions): Promise<PutObjectResult>;
  abortMultipartUpload(bucket: string, key: string, uploadId: string): Promise<void>;
  listParts(bucket: string, key: string, uploadId: string, options: { partNumberMarker: number; maxParts: number }): Promise<ListPartsResult>;
  listMultipartUploads(bucket: string, options: ListUploadsOptions): Promise<ListUploadsResult>;
}
