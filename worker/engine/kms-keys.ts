/**
 * Named KMS keys at work (model/kms-key.ts): the key table in the catalog, read and changed by
 * compare-and-set, and each version's material unwrapped under the gateway's ring.
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
 */
import { isNamedKid, SealError, type KeyRing, type NamedKeyMaterial } from '../format/seal.ts';
import type { KmsKeyCatalog } from '../catalog/types.ts';
import { S3Error } from '../model/errors.ts';
import {
  currentVersion,
  DEFAULT_KMS_KEY,
  isKmsKeyId,
  kmsKeyArn,
  kmsKeyDisabled,
  kmsKeyNotFound,
  materialLabel,
  namedKid,
  parseKmsKeyId,
  parseNamedKid,
  type KmsKeyRecord,
} from '../model/kms-key.ts';

/** Material versions kept unwrapped per isolate. */
const MATERIAL_KEPT = 256;

export interface KmsKeysOptions {
  catalog: KmsKeyCatalog;
  /** The gateway's own ring (its keys wrap every version's material). */
  ring: KeyRing;
  region: string;
  /** Key ids the config declares: created on first use. */
  declared?: readonly string[];
}

/** What a write is sealed under: the key (for the SSE record) and its current version's kid. */
export interface KmsWriteKey {
  id: string;
  arn: string;
  kid: string;
}

export class KmsKeys {
  private readonly material = new Map<string, Promise<Uint8Array>>();
  private readonly declared: ReadonlySet<string>;
  /** The gateway's ring with the named keys: what every reader of this gateway uses. */
  readonly ring: KeyRing;

  constructor(private readonly o: KmsKeysOptions) {
    this.declared = new Set([...(o.declared ?? []), DEFAULT_KMS_KEY]);
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
            if (v.kid === to) return v;
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
   * The key a write names (a bare id or an ARN; undefined: the gateway default), enabled, and the
   * kid of its current version. KMS.NotFoundException / KMS.DisabledException as S3 answers.
   */
  async forWrite(named: string | undefined): Promise<KmsWriteKey> {
    const id = named === undefined ? DEFAULT_KMS_KEY : parseKmsKeyId(named);
    const record = (await this.get(id)) ?? (this.declared.has(id) ? await this.createDeclared(id) : null);
    if (!record) throw kmsKeyNotFound(named ?? id);
    if (record.state !== 'Enabled') throw kmsKeyDisabled(this.arn(id));
    return { id, arn: this.arn(id), kid: namedKid(id, currentVersion(record).version) };
  }

  /** A read of an object sealed under key `id`: refused while the key is disabled (or gone). */
  async checkReadable(id: string): Promise<void> {
    const record = await this.get(id);
    if (!record) throw kmsKeyNotFound(id);
    if (record.state !== 'Enabled') throw kmsKeyDisabled(this.arn(id));
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

  private async newVersion(id: string, version: number, created: string): Promise<KmsKeyRecord['versions'][number]> {
    const raw = crypto.getRandomValues(new Uint8Array(32));
    return { version, created, ...(await this.o.ring.sealSecret(raw, materialLabel(id, version))) };
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

  /** The material of the version a `~kms/` kid names (format/seal.ts NamedKeyMaterial). */
  private readonly materialOf: NamedKeyMaterial = (kid) => {
    let p = this.material.get(kid);
    if (p) return p;
    p = this.unwrapMaterial(kid);
    p.catch(() => this.material.delete(kid));
    if (this.material.size >= MATERIAL_KEPT) this.material.delete(this.material.keys().next().value!);
    this.material.set(kid, p);
    return p;
  };

  private async unwrapMaterial(kid: string): Promise<Uint8Array> {
    const named = isNamedKid(kid) ? parseNamedKid(kid) : null;
    if (!named) throw new SealError(`"${kid}" does not name a KMS key version`);
    const record = await this.get(named.id);
    const version = record?.versions.find((v) => v.version === named.version);
    if (!version) throw new SealError(`KMS key "${named.id}" has no version ${named.version} in the key table`);
    return this.o.ring.openSecret(version, materialLabel(named.id, named.version));
  }
}
