/**
 * Bucket policies at the gate: after authorize.ts has checked the signer's scope and before any
 * handler runs (so a refused request reads no body and stores nothing), the bucket's policy is
 * read from the catalog and an explicit Deny that matches the request refuses it with 403
 * AccessDenied. Allow statements never widen the scope (model/policy-eval.ts says why).
 * Also checked: the copy source of CopyObject and UploadPartCopy against its own bucket's policy
 * (s3:GetObject on the source key), and each entry of DeleteObjects (delete-objects.ts, through
 * the check this returns).
 * Not evaluated: GetBucketPolicy, PutBucketPolicy and DeleteBucketPolicy (whoever may manage the
 * policy can always replace it, as AWS lets the bucket owner's root user, so no policy locks the
 * bucket for good); CreateBucket and ListBuckets (no bucket policy applies).
 * Delivery and cost (model/bucket-settings.ts): the gate checks the request against this
 * isolate's view of the bucket's settings (no call), then runs the handler under the request's
 * fence: every catalog call the request makes on its way carries the stamp it was checked
 * against, and the catalog, finding other settings, does nothing and answers them; the request is
 * checked again (`changed`) before its call is repeated. So no call of its own for a bucket
 * without a policy, one repeated call per isolate after a change, and a policy put in any isolate
 * applies to the next request everywhere, before anything is stored, deleted or read for it (a
 * coded PUT's shards may be on their way beside its first call, prepareWrite: their last bytes
 * wait for its answer, and a refusal deletes them, as for any refused prepareWrite). A refusal by
 * the isolate's view is confirmed against the stored settings first (one call), so a Deny removed
 * elsewhere never keeps refusing here. Parsed documents are kept by their text (bounded).
 * Condition keys the request context has (others are absent, as IAM treats unknown keys):
 *   s3:x-amz-<header>   any x-amz-* request header: server-side-encryption,
 *                       server-side-encryption-customer-algorithm, acl, copy-source,
 *                       metadata-directive, grant-*, object-lock-*, storage-class, ...
 *   s3:prefix, s3:delimiter, s3:max-keys   the listing's query parameters
 *   s3:VersionId        the versionId parameter
 *   s3:if-match, s3:if-none-match   the conditional write's header, on PutObject, CopyObject and
 *                       CompleteMultipartUpload (AWS's keys for enforcing conditional writes)
 *   s3:RequestObjectTag/<key>, s3:RequestObjectTagKeys   the x-amz-tagging header
 *   s3:ExistingObjectTag/<key>   the addressed object's tags (read only when the policy names it)
 *   s3:signatureversion ("AWS" or "AWS4-HMAC-SHA256"), s3:authType ("REST-HEADER",
 *   "REST-QUERY-STRING", "POST": a browser form, post-object.ts), aws:SecureTransport,
 *   aws:SourceIp (cf-connecting-ip, set by Cloudflare's edge), aws:UserAgent, aws:Referer,
 *   aws:CurrentTime, aws:EpochTime, aws:PrincipalType.
 * Also evaluated: PostObject (post-object.ts), as the PutObject it is, its fields as headers.
 * A stored policy that no longer parses fails closed (500 naming the way out).
 * The bucket's public access block (model/public-access-block.ts) is checked here too, on every
 * operation on a bucket, the policy operations included: RestrictPublicBuckets refuses anonymous
 * requests (on the addressed bucket and a copy source's), BlockPublicAcls a request whose
 * x-amz-acl / x-amz-grant-* headers ask for a public ACL (403 AccessDenied, before the 400
 * AccessControlListNotSupported such headers get otherwise: app.ts checks them after the gate).
 * Condition key names are case-insensitive here, tag keys in them included.
 * ACLs (model/acl.ts), on a bucket whose Object Ownership enables them, let another account (or
 * an anonymous caller) in as a policy's Allow does, never past a Deny: the bucket's ACL for
 * listing, writing and its own ACL (no call: a request-path setting), the object's for reading it
 * and its ACL (one read of the object's metadata, only when neither the policy nor the bucket's
 * ACL let the caller in). IgnorePublicAcls makes the AllUsers and AuthenticatedUsers grants count
 * for nothing. acl-access.ts says which grant each operation needs.
 */
import type { AuthResult, PolicyCheck } from './context.ts';
import { kmsKeyArn, parseKmsKeyId } from '../model/kms-key.ts';
import { accessDenied, lockHeaderActions } from './authorize.ts';
import { parseBucketPolicy, type BucketPolicy } from '../model/bucket-policy.ts';
import { NO_SETTINGS, requestFence, unfenced, type BucketSettings, type SettingsFence } from '../model/bucket-settings.ts';
import { S3Error } from '../model/errors.ts';
import type { CopySource, ObjectStore } from '../model/object-store.ts';
import type { SseRequest } from '../model/sse.ts';
import type { BucketConfigStore } from '../model/bucket-config-store.ts';

/** What the gate reads of a bucket's configuration: its request-path settings. */
type SettingsSource = Pick<BucketConfigStore, 'bucketSettings' | 'fetchBucketSettings'>;
import type { ConditionContext } from '../model/policy-conditions.ts';
import { policyAllows, policyDenies, policyIsPublic, policyMentions } from '../model/policy-eval.ts';
import { bucketOwner, DEFAULT_ACCOUNT, STRANGER } from '../model/account.ts';
import { hasPublicAclHeaders, parseStoredPublicAccessBlock } from '../model/public-access-block.ts';
import { parseTaggingHeader } from '../model/tagging.ts';
import { readCopySource } from './copy.ts';
import { aclLetsIn, objectAclOf } from './acl-access.ts';
import { assertAclHeaders, knownAccounts } from './acl-headers.ts';
import { readCustomerKeyHeaders } from './sse-headers.ts';
import type { KnownAccount } from '../model/acl.ts';
import type { S3Operation } from './operations.ts';
import { policyActions } from './policy-actions.ts';
import type { S3Address } from './request.ts';

const NO_POLICY: PolicyCheck = { deniesObject: () => false };

/** Parsed policies by document text (a text always parses the same way): at most this many. */
const PARSED_MAX = 64;
const parsed = new Map<string, BucketPolicy>();

function parsedPolicy(text: string, bucket: string): BucketPolicy {
  const cacheKey = `${bucket}\n${text}`;
  let policy = parsed.get(cacheKey);
  if (!policy) {
    policy = parseBucketPolicy(text, bucket);
    if (parsed.size >= PARSED_MAX) parsed.delete(parsed.keys().next().value!);
    parsed.set(cacheKey, policy);
  }
  return policy;
}

/** The bucket's policy in `settings`, parsed; null when it has none. */
function policyOf(settings: BucketSettings, bucket: string): BucketPolicy | null {
  const text = settings.rows.policy;
  if (text === null) return null;
  try {
    return parsedPolicy(text, bucket);
  } catch (err) {
    // Accepted when it was put, refused now (a stricter parser since): fail closed, and say how
    // to get out; the policy operations are never evaluated, so replacing it always works.
    if (err instanceof S3Error && err.code === 'MalformedPolicy') {
      throw new S3Error(
        'InternalError',
        `The policy stored for bucket ${bucket} no longer parses (${err.message}); replace it (PutBucketPolicy) or delete it (DeleteBucketPolicy).`,
      );
    }
    throw err;
  }
}

/** The account owning `bucket` (model/account.ts), as stored: one call; NoSuchBucket when it is missing. */
export async function storedOwner(config: SettingsSource, bucket: string): Promise<string> {
  return bucketOwner((await unfenced(() => config.fetchBucketSettings(bucket))).rows.owner);
}

/** The bucket's settings as stored (one call); none when the bucket is missing (the handler says so). */
async function storedSettings(config: SettingsSource, bucket: string): Promise<BucketSettings> {
  try {
    return await config.fetchBucketSettings(bucket);
  } catch (err) {
    if (err instanceof S3Error && err.code === 'NoSuchBucket') return NO_SETTINGS;
    throw err;
  }
}

export interface PolicyRequestFacts {
  op: S3Operation;
  addr: S3Address;
  headers: Headers;
  /** The request's URL (aws:SecureTransport). */
  url: string;
  auth: AuthResult;
  /** The gateway's region: the ARN a bare KMS key id is read as (s3:x-amz-server-side-encryption-aws-kms-key-id). */
  region?: string;
  /**
   * The gateway has keys of more than one account (model/account.ts): a request on a bucket as a
   * whole is checked against its settings as stored (one call), not this isolate's view. Object
   * requests are fenced in every catalog call they make (a view that missed the bucket's owner is
   * corrected before anything is read or stored), but some bucket configuration calls are not
   * (logging, notifications, the public access block), and a view can be of a deleted bucket
   * whose name another account took since.
   */
  otherAccounts?: boolean;
  /** The account ids an ACL grant may name (acl-headers.ts knownAccounts); absent: the default account alone. */
  knownAccount?: KnownAccount;
}

const KMS_KEY_ID = 's3:x-amz-server-side-encryption-aws-kms-key-id';

/**
 * The KMS key id a request names, as AWS's condition key holds it: the key's ARN, also when the
 * request gave the bare id (a policy names keys by ARN). A value that is no key id stays as sent.
 */
function kmsKeyIdValue(header: string | null, region: string | undefined): string | null {
  if (header === null || region === undefined) return header;
  try {
    return kmsKeyArn(region, parseKmsKeyId(header));
  } catch {
    return header;
  }
}

function requestContext(f: PolicyRequestFacts, existingTags: Map<string, string> | null): ConditionContext {
  const { headers, addr, auth } = f;
  let requestTags: Map<string, string> | null | undefined;
  const tagsOfRequest = () => {
    if (requestTags === undefined) {
      const header = headers.get('x-amz-tagging');
      try {
        requestTags = header === null ? null : new Map(parseTaggingHeader(header).map((t) => [t.key.toLowerCase(), t.value]));
      } catch {
        requestTags = null; // the handler refuses the header itself
      }
    }
    return requestTags;
  };
  const one = (v: string | null | undefined) => (v === null || v === undefined ? undefined : [v]);
  const listing = ['ListObjects', 'ListObjectsV2', 'ListObjectVersions', 'ListMultipartUploads'].includes(f.op);
  const conditionalWrite = ['PutObject', 'CopyObject', 'CompleteMultipartUpload'].includes(f.op);
  return (key) => {
    if (key === KMS_KEY_ID) return one(kmsKeyIdValue(headers.get(key.slice(3)), f.region));
    if (key.startsWith('s3:x-amz-')) return one(headers.get(key.slice(3)));
    if (key.startsWith('s3:existingobjecttag/')) return one(existingTags?.get(key.slice('s3:existingobjecttag/'.length)));
    if (key.startsWith('s3:requestobjecttag/')) return one(tagsOfRequest()?.get(key.slice('s3:requestobjecttag/'.length)));
    switch (key) {
      case 's3:prefix':
      case 's3:delimiter':
      case 's3:max-keys':
        return listing ? one(addr.query.get(key.slice(3))) : undefined;
      case 's3:versionid':
        return one(addr.query.get('versionId'));
      case 's3:if-match':
      case 's3:if-none-match':
        return conditionalWrite ? one(headers.get(key.slice(3))) : undefined;
      case 's3:requestobjecttagkeys': {
        const t = tagsOfRequest();
        return t ? [...t.keys()] : undefined;
      }
      case 's3:signatureversion':
        return auth.signature === undefined ? undefined : [auth.signature.startsWith('sigv2') ? 'AWS' : 'AWS4-HMAC-SHA256'];
      case 's3:authtype':
        return auth.signature === undefined
          ? undefined
          : [auth.signature.endsWith('-post') ? 'POST' : auth.signature.endsWith('-query') ? 'REST-QUERY-STRING' : 'REST-HEADER'];
      case 'aws:securetransport':
        return [String(new URL(f.url).protocol === 'https:')];
      case 'aws:sourceip':
        return one(headers.get('cf-connecting-ip'));
      case 'aws:useragent':
        return one(headers.get('user-agent'));
      case 'aws:referer':
        return one(headers.get('referer'));
      case 'aws:currenttime':
        return [new Date().toISOString()];
      case 'aws:epochtime':
        return [String(Math.floor(Date.now() / 1000))];
      case 'aws:principaltype':
        return [auth.accessKeyId === undefined ? 'Anonymous' : 'User'];
    }
    return undefined;
  };
}

/** The addressed object's tags (lower-case keys), or null when it has none to read. */
async function existingTags(store: ObjectStore, addr: S3Address): Promise<Map<string, string> | null> {
  if (addr.key === null) return null;
  const versionId = addr.query.get('versionId');
  try {
    const head = await store.headObject(addr.bucket!, addr.key, { conditions: {}, ...(versionId === null ? {} : { versionId }) });
    return new Map((head.metadata.tags ?? []).map((t) => [t.key.toLowerCase(), t.value]));
  } catch (err) {
    if (err instanceof S3Error) return null; // no such key or version: the handler answers
    throw err;
  }
}

/** The request's SSE-C key (an SSE-C object's head needs it); null when it has none or a bad one (the handler refuses that). */
function customerKey(headers: Headers): SseRequest | null {
  try {
    return readCustomerKeyHeaders(headers);
  } catch {
    return null;
  }
}

const arn = (bucket: string, key: string | null) => `arn:aws:s3:::${bucket}${key === null ? '' : `/${key}`}`;

/** The writes whose encryption, when the request names none, is the bucket's default (SSE-S3, SSE-KMS or SSE-C headers name one). */
function takesDefaultEncryption(op: S3Operation, headers: Headers): boolean {
  return (
    (op === 'PutObject' || op === 'CopyObject' || op === 'CreateMultipartUpload') &&
    !headers.has('x-amz-server-side-encryption') &&
    !headers.has('x-amz-server-side-encryption-customer-algorithm')
  );
}

/** What the gate hands on: the check for DeleteObjects' entries, the bucket's owning account, and the handler run under the fence. */
export interface PolicyGate {
  check: PolicyCheck;
  /** The addressed bucket's account as checked (model/account.ts); the default one without a bucket. */
  owner: string;
  /** The addressed bucket's request-path settings as checked (its Object Ownership and ACL: acl.ts); none without a bucket. */
  rows: BucketSettings['rows'];
  /** Whether an ACL let the caller in (neither its account nor the bucket policy did): the access log's aclRequired. */
  aclRequired: boolean;
  run<T>(handler: () => Promise<T>): Promise<T>;
}

const OPEN: PolicyGate = { check: NO_POLICY, owner: DEFAULT_ACCOUNT, rows: NO_SETTINGS.rows, aclRequired: false, run: (handler) => handler() };

/**
 * Whether the stored policy of `bucket` (not the request's own: one its body names, such as
 * PutBucketLogging's target) denies this request's signer `actions` on `key` of it. One catalog
 * call; a missing bucket has no policy (the caller answers for it).
 */
export async function otherBucketDenies(
  config: SettingsSource,
  f: PolicyRequestFacts,
  bucket: string,
  actions: readonly string[],
  key: string | null,
): Promise<boolean> {
  const policy = policyOf(await unfenced(() => storedSettings(config, bucket)), bucket);
  return (
    policy !== null &&
    policyDenies(policy, {
      actions,
      resource: arn(bucket, key),
      accessKeyId: f.auth.accessKeyId ?? null,
      account: f.auth.access?.account ?? null,
      context: requestContext(f, null),
    })
  );
}

/**
 * One request's checks against its buckets' policies (the addressed bucket's, and a copy
 * source's), and its fence: the stamp each bucket's settings had when it was last checked.
 */
class RequestPolicy implements SettingsFence, PolicyCheck {
  private readonly stamps = new Map<string, string>();
  private policy: BucketPolicy | null = null;
  private context: ConditionContext;
  private open = true;

  constructor(
    private readonly store: ObjectStore,
    private readonly f: PolicyRequestFacts,
    /** null: an operation the policy does not apply to (the policy operations); the public access block still does. */
    private readonly actions: readonly string[] | null,
    private readonly source: CopySource | null,
  ) {
    this.context = requestContext(f, null);
  }

  private get bucket(): string {
    return this.f.addr.bucket!;
  }

  private get accessKeyId(): string | null {
    return this.f.auth.accessKeyId ?? null;
  }

  /** The signer's account; STRANGER for anonymous requests of `allowAnonymous: "policy"`; null for
   *  those of `allowAnonymous: true`, judged by that gateway-wide access as before accounts. */
  private get account(): string | null {
    return this.f.auth.access?.account ?? null;
  }

  /** The addressed bucket's owner as last checked (model/account.ts). */
  owner = DEFAULT_ACCOUNT;

  /** The addressed bucket's request-path settings as last checked. */
  rows: BucketSettings['rows'] = NO_SETTINGS.rows;

  /** Whether the addressed bucket's ACLs (or its object's) let a caller of another account do the request, as last checked. */
  private aclLetsIn = false;

  /** Whether the request was let in by an ACL alone: a caller of another account whom no policy Allow let in. */
  aclRequired = false;

  /** Whether the signer is of another account than the addressed bucket's. */
  private get foreign(): boolean {
    return this.account !== null && this.owner !== this.account;
  }

  /** Checks the request's part on `bucket` against `settings`: AccessDenied throws. */
  async check(bucket: string, settings: BucketSettings): Promise<void> {
    const { op, addr } = this.f;
    const { accessKeyId, account } = this;
    const block = parseStoredPublicAccessBlock(settings.rows['public-access-block']);
    if (block?.restrictPublicBuckets && accessKeyId === null) throw accessDenied();
    if (block?.blockPublicAcls && bucket === this.bucket && hasPublicAclHeaders(this.f.headers)) throw accessDenied();
    // A key of another account than the bucket's (model/account.ts) needs an Allow besides its scope.
    const owner = bucketOwner(settings.rows.owner);
    const foreign = account !== null && owner !== account;
    // x-amz-expected-bucket-owner (and x-amz-source-expected-bucket-owner, a copy source's): 403 when the bucket is another account's, as S3.
    const expected = [
      ...(bucket === this.bucket ? [this.f.headers.get('x-amz-expected-bucket-owner')] : []),
      ...(this.source?.bucket === bucket ? [this.f.headers.get('x-amz-source-expected-bucket-owner')] : []),
    ];
    if (expected.some((id) => id !== null && id.trim() !== owner)) throw accessDenied();
    if (bucket === this.bucket) {
      this.owner = owner;
      this.rows = settings.rows;
      // ACL headers against the bucket's Object Ownership as checked (acl-headers.ts), after the public access block's 403.
      assertAclHeaders(this.f.headers, owner, account, settings.rows, this.f.knownAccount ?? knownAccounts({}));
    }
    if (this.actions === null) {
      // The policy operations are the bucket owner's alone: AWS answers any other account 405 (an anonymous caller 403).
      if (foreign && bucket === this.bucket && account === STRANGER) throw accessDenied();
      if (foreign && bucket === this.bucket)
        throw new S3Error('MethodNotAllowed', 'The bucket policy of another account can be read or changed only by that account.');
      this.stamps.set(bucket, settings.stamp);
      return;
    }
    const policy = policyOf(settings, bucket);
    // RestrictPublicBuckets: a public policy lets in no one outside the owner's account (AWS).
    if (foreign && policy && block?.restrictPublicBuckets && policyIsPublic(policy)) throw accessDenied();
    // What the bucket's ACLs let a caller of another account do (acl-access.ts); the object's ACL is read only when asked.
    const acls = { settings, owner, account, ignorePublic: block?.ignorePublicAcls ?? false };
    if (this.source?.bucket === bucket && (policy || foreign)) {
      const sourceActions = this.source.versionId === undefined ? ['s3:GetObject'] : ['s3:GetObject', 's3:GetObjectVersion'];
      const read = { actions: sourceActions, resource: arn(bucket, this.source.key), accessKeyId, account, context: requestContext(this.f, null) };
      if (policy && policyDenies(policy, read)) throw accessDenied();
      const source = this.source;
      if (
        foreign &&
        !(policy && policyAllows(policy, read)) &&
        !(await aclLetsIn(acls, 'GetObject', () => unfenced(() => objectAclOf(this.store, bucket, source.key, source.versionId, source.sse ?? null))))
      )
        throw accessDenied();
    }
    if (bucket === this.bucket) {
      this.policy = policy;
      const objectAcl = () => unfenced(() => objectAclOf(this.store, bucket, addr.key!, addr.query.get('versionId') ?? undefined, customerKey(this.f.headers)));
      // Asked only when the policy does not let the caller in (an object's ACL costs a read); DeleteObjects' entries need it after.
      // Asked at most once per check (an object's ACL is a read): later calls answer the same.
      this.aclLetsIn = false;
      let asked: Promise<boolean> | undefined;
      const letsIn = () => (asked ??= (async () => (this.aclLetsIn = foreign && (await aclLetsIn(acls, op, objectAcl))))());
      if (op === 'DeleteObjects') await letsIn();
      if (foreign && !policy && !(await letsIn())) throw accessDenied();
      this.aclRequired = foreign && !policy;
      if (policy) {
        const tags = policyMentions(policy, 's3:existingobjecttag/', foreign ? 'any' : 'Deny') ? await unfenced(() => existingTags(this.store, addr)) : null;
        this.context = requestContext(this.f, tags);
        const onBucket = addr.key === null || op === 'DeleteObjects';
        // DeleteObjects is judged entry by entry (deniesObject).
        if (op !== 'DeleteObjects') {
          const req = { actions: this.actions!, resource: arn(bucket, onBucket ? null : addr.key), accessKeyId, account, context: this.context };
          if (policyDenies(policy, req)) throw accessDenied();
          if (foreign && !policyAllows(policy, req)) {
            if (!(await letsIn())) throw accessDenied();
            this.aclRequired = true;
          }
        }
      }
    }
    this.stamps.set(bucket, settings.stamp);
  }

  stampFor(bucket: string): string | undefined {
    return this.open ? this.stamps.get(bucket) : undefined;
  }

  changed(bucket: string, settings: BucketSettings): Promise<void> {
    // A write taking the bucket's default encryption chose it from the settings it was checked
    // against (engine/ec-store.ts writeSse reads this isolate's view): a different default now
    // means its units are sealed as the bucket no longer asks. Refused before the catalog acts
    // (503 SlowDown: clients retry, and the retry takes the new default).
    if (bucket === this.bucket && this.defaultEncryption !== undefined && settings.rows.encryption !== this.defaultEncryption)
      throw new S3Error('SlowDown', "The bucket's default encryption changed while this write was under way; retry it.");
    return unfenced(() => this.check(bucket, settings));
  }

  /**
   * The default encryption (the settings row) a write that names no encryption was checked
   * against, once the gate has passed it; undefined for any other request.
   */
  defaultEncryption: string | null | undefined = undefined;

  deniesObject(actions: readonly string[], key: string): boolean {
    // A DeleteObjects let in by the bucket's ACL (WRITE) may delete each entry, as its DeleteObject could.
    if (this.policy === null) return this.foreign && !this.aclLetsIn;
    const req = { actions, resource: arn(this.bucket, key), accessKeyId: this.accessKeyId, account: this.account, context: this.context };
    return policyDenies(this.policy, req) || (this.foreign && !policyAllows(this.policy, req) && !this.aclLetsIn);
  }

  /** The handler under the fence; calls after it has answered (work it left running) are not fenced. */
  async run<T>(handler: () => Promise<T>): Promise<T> {
    try {
      return await requestFence.run(this, handler);
    } finally {
      this.open = false;
    }
  }
}

/**
 * Throws AccessDenied when the bucket's policy (or the copy source's) denies the request, as this
 * isolate sees it and confirmed as stored; otherwise returns the check for a handler's per-entry
 * decisions and the fence to run the handler under.
 */
export async function enforceBucketPolicy(store: ObjectStore, config: SettingsSource, f: PolicyRequestFacts): Promise<PolicyGate> {
  const { op, addr } = f;
  if (addr.bucket === null || op === 'CreateBucket') return OPEN;
  const named = policyActions(op, addr.query.has('versionId'));
  // A write's lock headers are evaluated as AWS does: s3:PutObjectRetention, s3:PutObjectLegalHold.
  const actions =
    named === null ? null : [...named, ...lockHeaderActions(op, f.headers).map((a) => (a === 'retention' ? 's3:PutObjectRetention' : 's3:PutObjectLegalHold'))];
  const source = op === 'CopyObject' || op === 'UploadPartCopy' ? readCopySource(f.headers) : null;
  const request = new RequestPolicy(store, f, actions, source);
  // A bucket that does not exist is NoSuchBucket to anyone, as S3 answers (its name is no secret:
  // CreateBucket tells it too), from the gate itself: nothing can act for a refused caller.
  const stored = (bucket: string) => unfenced(() => config.fetchBucketSettings(bucket));
  for (const bucket of new Set([addr.bucket!, ...(source ? [source.bucket] : [])])) {
    if (f.otherAccounts && bucket === addr.bucket && addr.key === null) {
      await request.check(bucket, await stored(bucket));
      continue;
    }
    try {
      await request.check(bucket, config.bucketSettings(bucket));
    } catch (err) {
      if (!(err instanceof S3Error)) throw err;
      await request.check(bucket, await stored(bucket));
    }
  }
  if (takesDefaultEncryption(op, f.headers)) request.defaultEncryption = config.bucketSettings(addr.bucket!).rows.encryption;
  return {
    check: request,
    get owner() {
      return request.owner;
    },
    get rows() {
      return request.rows;
    },
    get aclRequired() {
      return request.aclRequired;
    },
    run: (handler) => request.run(handler),
  };
}
