/**
 * Named KMS keys at work (model/kms-key.ts): the key table in the catalog, read and changed by
 * compare-and-set, and each version's material unwrapped under the gateway's ring, or by the
 * Vault / OpenBao transit key that backs the key (engine/transit-client.ts).
 *
 * - A write naming a key resolves it here (`forWrite`): unknown 400 KMS.NotFoundException, disabled
 *   400 KMS.DisabledException; the answer is the seal kid of its current version. A key the config
 *   declares (encryption.kmsKeys), and the gateway default (DEFAULT_KMS_KEY, for aws:kms without a
 *   key id, as AWS uses its aws/s3 key), is created on first use.
 * - A read of an SSE-KMS object checks its key is enabled (`checkReadable`): a disabled key refuses
 *   reads as AWS does. Internal readers (rebuild, scrub, rotation) open units regardless.
 * - Each request reads the key's record (one call to the bucket list's instance), so a disable is
 *   seen by every isolate on its next request; a version's material never changes, so it is kept
 *   per isolate once unwrapped (bounded).
 * - A transit-backed key (config encryption.kmsKeys[].transit): each version's 32 bytes are
 *   encrypted by Vault (`vault:vN:...` in the key table), never by the gateway's own keys. An
 *   isolate decrypts a version once and keeps it `cacheMs` (default 5 min), as S3 Bucket Keys
 *   keep a data key: one Vault call per isolate per key version per period, never per object.
 *   Writes and reads of the key's objects ask for its current version's material, so a Vault that
 *   refuses (token denied, key deleted, decryption disallowed) refuses them within that period
 *   (400 KMS.KMSInvalidStateException), and one that does not answer makes them 503 with
 *   Retry-After (bounded by the request's deadline), never a wrong byte. The material sent to
 *   Vault is prefixed with the key's id and version (`SEALED_PREFIX`), so a ciphertext moved to
 *   another row of the table does not open there.
 */
import { isNamedKid, SealError, type KeyRing, type NamedKeyMaterial } from '../format/seal.ts';
import type { KmsKeyCatalog } from '../catalog/ports.ts';
import { S3Error } from '../model/errors.ts';
import {
  currentVersion,
  DEFAULT_KMS_KEY,
  isKmsKeyId,
  kmsKeyArn,
  kmsKeyDisabled,
  kmsKeyNotFound,
  kmsKeyUnusable,
  kmsServiceUnavailable,
  materialLabel,
  namedKid,
  parseKmsKeyId,
  parseNamedKid,
  transitKid,
  type KmsKeyRecord,
  type KmsKeyVersion,
} from '../model/kms-key.ts';
import { TransitError, transitVersionOf, type TransitClient } from './transit-client.ts';
import { IsolateMemo } from '../model/isolate-shared.ts';

/** Material versions kept unwrapped per isolate. */
const MATERIAL_KEPT = 256;
/** How long an isolate keeps a transit-backed version's material before it asks Vault again. */
export const TRANSIT_CACHE_MS = 300_000;
/** What the material sent to Vault starts with: binds a ciphertext to its key id and version. */
const SEALED_PREFIX = (label: string) => new TextEncoder().encode(`shardgate kms key v1 ${label}\n`);

/** A key backed by a transit key: its client (address, mount, key, token) and how long its material is kept. */
export interface TransitBacking {
  client: TransitClient;
  /** Default TRANSIT_CACHE_MS. */
  cacheMs?: number;
}

export interface KmsKeysOptions {
  catalog: KmsKeyCatalog;
  /** The gateway's own ring (its keys wrap every version's material). */
  ring: KeyRing;
  region: string;
  /** Key ids the config declares: created on first use. */
  declared?: readonly string[];
  /** Keys backed by a Vault / OpenBao transit key, by id (config encryption.kmsKeys[].transit). */
  transit?: ReadonlyMap<string, TransitBacking>;
  /** The clock of the material cache's expiry (tests drive it). */
  now?: () => number;
  /** A log line (a failed Vault call, in the operator's words: never the token). */
  log?: (fields: Record<string, unknown>, error: boolean) => void;
}

/** What a write is sealed under: the key (for the SSE record) and its current version's kid. */
export interface KmsWriteKey {
  id: string;
  arn: string;
  kid: string;
}

export class KmsKeys {
  /** Unwrapped material by kid, until a transit-backed version must be asked for again. */
  private readonly material: IsolateMemo<Uint8Array>;
  private readonly declared: ReadonlySet<string>;
  /** The gateway's ring with the named keys: what every reader of this gateway uses. */
  readonly ring: KeyRing;

  constructor(private readonly o: KmsKeysOptions) {
    this.declared = new Set([...(o.declared ?? []), ...(o.transit?.keys() ?? []), DEFAULT_KMS_KEY]);
    this.material = new IsolateMemo({ max: MATERIAL_KEPT, waitMs: 2000, now: o.now });
    this.ring = o.ring.withNamedKeys(this.materialOf);
  }

  arn(id: string): string {
    return kmsKeyArn(this.o.region, id);
  }

  async list(): Promise<KmsKeyRecord[]> {
    return (await this.o.catalog.listKmsKeys()).map((j) => JSON.parse(j) as KmsKeyRecord);
  }

  async get(id: string): Promise<KmsKeyRecord | null> {
    const json = await this.o.catalog.getKmsKey(id);
    return json === null ? null : (JSON.parse(json) as KmsKeyRecord);
  }

  /** A new key with one version (InvalidArgument if the id is taken or not an id). */
  async create(id: string, origin: KmsKeyRecord['origin'] = 'admin'): Promise<KmsKeyRecord> {
    if (!isKmsKeyId(id)) throw new S3Error('InvalidArgument', `"${id}" is not a key id: 1 to 64 letters, digits, ".", "_" or "-"`);
    const now = new Date().toISOString();
    const record: KmsKeyRecord = { id, state: 'Enabled', created: now, origin, versions: [await this.newVersion(id, 1, now)] };
    if (!(await this.o.catalog.replaceKmsKey(id, null, JSON.stringify(record)))) throw new S3Error('InvalidArgument', `key "${id}" already exists`);
    return record;
  }

  async setEnabled(id: string, enabled: boolean): Promise<KmsKeyRecord> {
    return this.change(id, (r) => ({ ...r, state: enabled ? 'Enabled' : 'Disabled' }));
  }

  /** A new current version (the data keys are re-wrapped under it by upkeep/rotate-keys.ts). */
  async rotate(id: string): Promise<KmsKeyRecord> {
    const now = new Date().toISOString();
    return this.change(id, async (r) => ({ ...r, versions: [...r.versions, await this.newVersion(id, currentVersion(r).version + 1, now)] }));
  }

  /**
   * Every version's material re-wrapped under the ring's active key (after a rotation of the
   * gateway's own keys, so that older gateway keys can leave the ring); how many were.
   */
  async rewrapMaterials(): Promise<number> {
    const to = this.o.ring.active;
    if (!to) return 0;
    let changed = 0;
    for (const record of await this.list()) {
      await this.change(record.id, async (r) => {
        const versions = await Promise.all(
          r.versions.map(async (v) => {
            if (v.kid === to || v.transit) return v; // a transit-wrapped version is Vault's to re-wrap (rewrapTransit)
            changed++;
            const label = materialLabel(r.id, v.version);
            return { ...v, ...(await this.o.ring.sealSecret(await this.o.ring.openSecret(v, label), label)) };
          }),
        );
        return { ...r, versions };
      });
    }
    return changed;
  }

  /**
   * Every version of transit-backed key `id` re-wrapped by Vault under its transit key's latest
   * version (`rewrap`: Vault never shows the material), after the operator rotated the transit
   * key; how many versions changed. Nothing for a key the gateway's ring wraps. Catalog only.
   */
  async rewrapTransit(id: string): Promise<number> {
    const backing = this.o.transit?.get(id);
    if (!backing) return 0;
    let changed = 0;
    await this.change(id, async (r) => {
      changed = 0;
      const versions = await Promise.all(
        r.versions.map(async (v) => {
          if (!v.transit) return v;
          const wrapped = await this.transitCall(id, () => backing.client.rewrap(v.wrapped));
          // Vault re-encrypts even under the version it already was: only a newer transit version is a change.
          if (transitVersionOf(wrapped) === transitVersionOf(v.wrapped)) return v;
          changed++;
          return { ...v, wrapped };
        }),
      );
      return { ...r, versions };
    });
    return changed;
  }

  /** Whether key `id` is backed by a transit key (config). */
  isTransit(id: string): boolean {
    return this.o.transit?.has(id) ?? false;
  }

  /**
   * The key a write names (a bare id or an ARN; undefined: the gateway default), enabled, and the
   * kid of its current version. KMS.NotFoundException / KMS.DisabledException as S3 answers.
   */
  async forWrite(named: string | undefined): Promise<KmsWriteKey> {
    const id = named === undefined ? DEFAULT_KMS_KEY : parseKmsKeyId(named);
    const record = (await this.get(id)) ?? (this.declared.has(id) ? await this.createDeclared(id) : null);
    if (!record) throw kmsKeyNotFound(named ?? id);
    if (record.state !== 'Enabled') throw kmsKeyDisabled(this.arn(id));
    const kid = namedKid(id, currentVersion(record).version);
    await this.checkTransit(record, kid);
    return { id, arn: this.arn(id), kid };
  }

  /** A read of an object sealed under key `id`: refused while the key is disabled (or gone). */
  async checkReadable(id: string): Promise<void> {
    const record = await this.get(id);
    if (!record) throw kmsKeyNotFound(id);
    if (record.state !== 'Enabled') throw kmsKeyDisabled(this.arn(id));
    await this.checkTransit(record, namedKid(id, currentVersion(record).version));
  }

  /**
   * For a transit-backed key: its current version's material at hand (kept, or asked of Vault
   * once the kept copy is older than the cache period), so that Vault refusing or not answering
   * refuses the request before anything is read or stored.
   */
  private async checkTransit(record: KmsKeyRecord, kid: string): Promise<void> {
    if (!currentVersion(record).transit) return;
    await this.materialOf(kid);
  }

  private async createDeclared(id: string): Promise<KmsKeyRecord> {
    try {
      return await this.create(id, id === DEFAULT_KMS_KEY ? 'default' : 'config');
    } catch (err) {
      // Another isolate created it meanwhile: theirs stands.
      const record = await this.get(id);
      if (record) return record;
      throw err;
    }
  }

  private async newVersion(id: string, version: number, created: string): Promise<KmsKeyVersion> {
    const raw = crypto.getRandomValues(new Uint8Array(32));
    const label = materialLabel(id, version);
    const backing = this.o.transit?.get(id);
    if (!backing) return { version, created, ...(await this.o.ring.sealSecret(raw, label)) };
    const { mount, key } = backing.client.settings;
    const prefix = SEALED_PREFIX(label);
    const sealed = new Uint8Array(prefix.length + raw.length);
    sealed.set(prefix);
    sealed.set(raw, prefix.length);
    const wrapped = await this.transitCall(id, () => backing.client.encrypt(sealed));
    return { version, created, kid: transitKid(mount, key), wrapped, transit: { mount, key } };
  }

  /** A Vault call for key `id`, its failure as the S3 answer (KMS.KMSInvalidStateException, or 503 with Retry-After). */
  private async transitCall<T>(id: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof TransitError)) throw err;
      // The operator's detail (where, Vault's own words; never the token) goes to the log, not to the client.
      this.o.log?.({ msg: 'transit call failed', kmsKey: id, kind: err.kind, error: err.message }, true);
      if (err.kind === 'Denied') throw kmsKeyUnusable(this.arn(id), 'its external key service refuses it', err);
      if (err.kind === 'KeyMissing') throw kmsKeyUnusable(this.arn(id), 'its key in the external key service is missing', err);
      throw kmsServiceUnavailable(this.arn(id), err.kind === 'Throttled', err);
    }
  }

  /** `edit` applied to the key's record by compare-and-set (again while another change wins). */
  private async change(id: string, edit: (r: KmsKeyRecord) => KmsKeyRecord | Promise<KmsKeyRecord>): Promise<KmsKeyRecord> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const before = await this.o.catalog.getKmsKey(id);
      if (before === null) throw new S3Error('InvalidArgument', `no KMS key "${id}"`);
      const after = await edit(JSON.parse(before) as KmsKeyRecord);
      if (await this.o.catalog.replaceKmsKey(id, before, JSON.stringify(after))) return after;
    }
    throw new S3Error('OperationAborted', `key "${id}" kept changing; try again`);
  }

  /**
   * The material of the version a `~kms/` kid names (format/seal.ts NamedKeyMaterial): kept (a
   * transit-backed version's for its cacheMs), shared by the isolate's requests without handing
   * one another's pending read (model/isolate-shared.ts).
   */
  private readonly materialOf: NamedKeyMaterial = (kid) => {
    const named = parseNamedKid(kid);
    const backing = named ? this.o.transit?.get(named.id) : undefined;
    return this.material.get(kid, () => this.unwrapMaterial(kid), backing ? (backing.cacheMs ?? TRANSIT_CACHE_MS) : Number.POSITIVE_INFINITY);
  };

  private async unwrapMaterial(kid: string): Promise<Uint8Array> {
    const named = isNamedKid(kid) ? parseNamedKid(kid) : null;
    if (!named) throw new SealError(`"${kid}" does not name a KMS key version`);
    const record = await this.get(named.id);
    const version = record?.versions.find((v) => v.version === named.version);
    if (!version) throw new SealError(`KMS key "${named.id}" has no version ${named.version} in the key table`);
    const label = materialLabel(named.id, named.version);
    if (!version.transit) return this.o.ring.openSecret(version, label);
    const backing = this.o.transit?.get(named.id);
    if (!backing)
      throw kmsKeyUnusable(
        this.arn(named.id),
        `version ${named.version} is wrapped by an external key service that the gateway's config no longer names for this key`,
      );
    const sealed = await this.transitCall(named.id, () => backing.client.decrypt(version.wrapped));
    const prefix = SEALED_PREFIX(label);
    const bound = sealed.length === prefix.length + 32 && prefix.every((b, i) => sealed[i] === b);
    if (!bound)
      throw kmsKeyUnusable(this.arn(named.id), `the external key service's ciphertext of version ${named.version} is not this key version's material`);
    return sealed.slice(prefix.length);
  }
}
