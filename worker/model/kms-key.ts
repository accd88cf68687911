/**
 * Named KMS keys (SSE-KMS): the keys a client names with `x-amz-server-side-encryption-aws-kms-key-id`
 * or a bucket's default encryption. Each is a record of the catalog's key table (the bucket list's
 * instance, catalog/sql-kms-keys.ts): an id, a state (Enabled / Disabled) and its versions, each
 * 32 random bytes stored only wrapped under the gateway's own active key (format/seal.ts
 * sealSecret). An SSE-KMS object's data keys are wrapped under its key's current version; the seal
 * records which (`~kms/<id>/<version>`). Rotation adds a version and re-wraps the data keys under
 * it, catalog only; older versions stay so that nothing written under them stops opening.
 *
 * A key is named by its bare id or by the ARN `arn:aws:kms:<region>:<account>:key/<id>` (any region
 * and account: the gateway has one key table); answers give the ARN, as AWS does. Aliases
 * (`alias/...`) are not supported.
 */
import { S3Error } from './errors.ts';

/** Ids: what the config's key ids allow (letters, digits, "-", "_", "."), up to 64. */
const ID = /^[A-Za-z0-9._-]{1,64}$/;
const ARN = /^arn:aws[a-z-]*:kms:[a-z0-9-]*:[0-9A-Za-z-]*:key\/(.+)$/;

/** The gateway's account in the ARNs it answers with (12 digits, as AWS's; the gateway has one account). */
export const KMS_ACCOUNT = '000000000000';

/**
 * The key a bucket default or an aws:kms request without a key id uses, as AWS uses its aws/s3 key:
 * created on first use (its material random like any other).
 */
export const DEFAULT_KMS_KEY = 'aws-s3';

export interface KmsKeyVersion {
  version: number;
  created: string;
  /**
   * The gateway key (format/seal.ts) that wraps this version's material, and the wrapped bytes; for
   * a version wrapped by a Vault / OpenBao transit key (`transit` set), `transitKid` of it and
   * the transit ciphertext `vault:vN:...` (engine/kms-keys.ts).
   */
  kid: string;
  wrapped: string;
  /** Set when the transit key `key` of the engine mounted at `mount` wraps the material, not the gateway's ring. */
  transit?: { mount: string; key: string };
}

export interface KmsKeyRecord {
  id: string;
  state: 'Enabled' | 'Disabled';
  created: string;
  /** Declared in the config (encryption.kmsKeys) or the gateway default: created by the gateway on first use. */
  origin: 'admin' | 'config' | 'default';
  /** Oldest first; the last is current. */
  versions: KmsKeyVersion[];
}

/** The key id a request names (a bare id or an ARN); InvalidArgument when it is neither. */
export function parseKmsKeyId(value: string): string {
  const v = value.trim();
  const id = ARN.exec(v)?.[1] ?? v;
  if (!ID.test(id)) {
    throw new S3Error('KMS.NotFoundException', `Invalid keyId '${value}'`, {});
  }
  return id;
}

/** A valid key id for the admin API (a bare id only). */
export function isKmsKeyId(id: string): boolean {
  return ID.test(id);
}

/** The ARN an answer names `id` by. */
export function kmsKeyArn(region: string, id: string): string {
  return `arn:aws:kms:${region}:${KMS_ACCOUNT}:key/${id}`;
}

/** The seal kid of version `version` of key `id` (format/seal.ts NAMED_KID_PREFIX). */
export function namedKid(id: string, version: number): string {
  return `~kms/${id}/${version}`;
}

/** The key id and version a `~kms/` kid names; null for any other kid. */
export function parseNamedKid(kid: string): { id: string; version: number } | null {
  const m = /^~kms\/([^/]+)\/(\d+)$/.exec(kid);
  return m ? { id: m[1]!, version: Number(m[2]) } : null;
}

/** The `kid` a transit-wrapped version shows (never a key ring id: those cannot hold ":"). */
export const transitKid = (mount: string, key: string): string => `transit:${mount}/${key}`;

/** The label a version's wrapped material is bound to (format/seal.ts sealSecret). */
export const materialLabel = (id: string, version: number): string => `${id}/${version}`;

export function currentVersion(record: KmsKeyRecord): KmsKeyVersion {
  return record.versions[record.versions.length - 1]!;
}

/** The answer to a request naming a key that is not in the table: as S3 answers (400 KMS.NotFoundException). */
export function kmsKeyNotFound(named: string): S3Error {
  return new S3Error('KMS.NotFoundException', `Invalid keyId '${named}'`);
}

/** The answer to a request whose key is disabled, for writes and reads alike (400 KMS.DisabledException). */
export function kmsKeyDisabled(arn: string): S3Error {
  return new S3Error('KMS.DisabledException', `${arn} is disabled.`);
}

/**
 * The answer to a request whose key's external key service (Vault / OpenBao transit) refuses: the
 * token denied, the transit key deleted or its decryption disallowed. AWS's KMS answers
 * KMSInvalidStateException for every failure of an external key store's key; S3 passes it on as
 * 400 KMS.KMSInvalidStateException (docs/COMPATIBILITY.md, SSE-KMS). `why` is for the client (no
 * address of the key service); `cause`, the service's own answer, for the logs.
 */
export function kmsKeyUnusable(arn: string, why: string, cause?: unknown): S3Error {
  return new S3Error('KMS.KMSInvalidStateException', `${arn} cannot be used: ${why}.`, {}, { cause });
}

/** Seconds a client is asked to wait when the external key service does not answer. */
export const KMS_RETRY_AFTER_SECONDS = 5;

/** The answer to a request whose key's external key service does not answer (or asks to slow down): 503, retried by SDKs. */
export function kmsServiceUnavailable(arn: string, throttled: boolean, cause?: unknown): S3Error {
  return new S3Error(
    throttled ? 'SlowDown' : 'ServiceUnavailable',
    `The external key service of ${arn} did not answer${throttled ? ' (it asked to slow down)' : ''}; retry later.`,
    {},
    { cause },
  ).withHeaders({ 'Retry-After': String(KMS_RETRY_AFTER_SECONDS) });
}
