/**
 * Sealing: how a unit's bytes and identity are encrypted before they leave the gateway
 * (docs/FORMAT.md, "Sealed units"). The contract:
 *
 * - Every sealed unit (and every sealed inline object) has its own random 256-bit data key (DEK),
 *   drawn when it is written and never reused. The DEK is stored only wrapped: AES-256-GCM under a
 *   key-encryption key (KEK) of the key ring, named by its id `kid` in the record. Rotation
 *   re-wraps DEKs (a catalog-only change); the sealed bytes on the backends never change.
 * - The unit's plaintext is cut into records of `record` bytes (the last one shorter); record r is
 *   AES-256-GCM under the DEK with the 96-bit nonce `00 00 00 00 || r (u64 big-endian)`, giving
 *   `len + 16` bytes. The stored unit is the records' concatenation, erasure-coded as any unit.
 *   Nonces are unique because each DEK seals one unit once; a record cannot move (its index is its
 *   nonce) and any change fails its tag.
 * - The shard header's identity (bucket, key, metadata, upload, plaintext size) is sealed with the
 *   same DEK under nonce `01 00 00 00 || 0`: a backend sees only geometry and the unit id.
 * - A range [start, end] of plaintext needs records floor(start / record) .. floor(end / record)
 *   only: their stored bytes are read and decrypted, nothing else.
 *
 * Everything here is WebCrypto (native in workerd and in Node): no key or plaintext touches a
 * backend, a log or an error message.
 */
import { fromBase64, toBase64 } from '../model/bytes.ts';
import { IsolateMemo } from '../model/isolate-shared.ts';
import { shelfNameKey, shelfOf } from './shelf.ts';

/** Plaintext bytes per sealed record of a small body: 64 KiB (a 1-byte range decrypts at most this much). */
export const SEAL_RECORD_BYTES = 64 * 1024;
/**
 * Plaintext bytes per sealed record of a body of SEAL_LARGE_BODY_BYTES or more: 256 KiB. Each
 * record is one WebCrypto call, whose fixed cost (a promise, copies in and out, a fresh output
 * buffer) dominates AES-GCM's own at 64 KiB: large GETs then cost up to 1.8x a clear GET's CPU
 * (BENCHMARKS.md, issue 24). A large object's ranges are large too, so the coarser record costs
 * them little; a 1-byte range of one still decrypts only 256 KiB.
 */
export const SEAL_LARGE_RECORD_BYTES = 256 * 1024;
export const SEAL_LARGE_BODY_BYTES = 4 * 1024 * 1024;

/**
 * The record size new units of a `bodySize`-byte body are sealed with: `fixed` when the config
 * sets one (encryption.recordBytes), else by size. Readers never assume it: every unit's seal
 * records its own.
 */
export function sealRecordBytes(bodySize: number, fixed?: number): number {
  return fixed ?? (bodySize >= SEAL_LARGE_BODY_BYTES ? SEAL_LARGE_RECORD_BYTES : SEAL_RECORD_BYTES);
}
/** AES-GCM tag bytes appended to each record. */
export const SEAL_TAG_BYTES = 16;
export const SEAL_ALGORITHM = 'A256GCM';

/** What a sealed unit's catalog record and header carry about its key. */
export interface UnitSeal {
  alg: typeof SEAL_ALGORITHM;
  /** Id of the KEK in the key ring that wraps `wrapped`. */
  kid: string;
  /** base64: nonce (12 bytes) || AES-256-GCM(KEK, DEK) (48 bytes). */
  wrapped: string;
  /** Plaintext bytes per record. */
  record: number;
}

/** The identity a sealed shard header hides: decrypted from `HeaderSeal.meta`. */
export interface SealedIdentity {
  bucket: string;
  key: string;
  /** Plaintext bytes of the unit (the header's `size` is the stored size). */
  size: number;
  uploadId?: string;
  partNumber?: number;
  metadata?: unknown;
}

/** A sealed header's `seal` field: the unit's seal and its identity, sealed. */
export interface HeaderSeal extends UnitSeal {
  /** base64 of AES-256-GCM(DEK, JSON of SealedIdentity), nonce 01 00 00 00 || 0. */
  meta: string;
}

export class SealError extends Error {
  override readonly name = 'SealError';
}

/**
 * Frees the memory of a buffer WebCrypto returned, now: its backing store was allocated outside
 * the JavaScript heap, so no garbage collection comes soon enough for it (a 1 GiB sealed GET grew
 * the worker by 1 GiB). Detaching (`ArrayBuffer.prototype.transfer(0)`, where the runtime has
 * it) drops the last reference. Only for a buffer nothing will read again.
 */
export function release(buffer: ArrayBufferLike): void {
  (buffer as ArrayBuffer & { transfer?: (n: number) => ArrayBuffer }).transfer?.(0);
}

/** Stored bytes of `plain` bytes sealed in records of `record`. */
export function sealedSize(plain: number, record: number): number {
  return plain + SEAL_TAG_BYTES * Math.ceil(plain / record);
}

/** Plaintext bytes of `stored` sealed bytes in records of `record` (the inverse of sealedSize). */
export function plainSizeOfSealed(stored: number, record: number): number {
  const stride = record + SEAL_TAG_BYTES;
  const full = Math.floor(stored / stride),
    rest = stored - full * stride;
  return full * record + Math.max(0, rest - SEAL_TAG_BYTES);
}

/** The stored bytes of a unit: its plaintext size, or the sealed size when it is sealed. */
export function storedSize(unit: { size: number; seal?: UnitSeal }): number {
  return unit.seal ? sealedSize(unit.size, unit.seal.record) : unit.size;
}

/** Records holding plaintext bytes [start, end] and the stored bytes they occupy. */
export function sealedSpan(start: number, end: number, plain: number, record: number): { first: number; last: number; from: number; to: number } {
  const first = Math.floor(start / record),
    last = Math.floor(end / record);
  const stride = record + SEAL_TAG_BYTES;
  return { first, last, from: first * stride, to: Math.min(sealedSize(plain, record), (last + 1) * stride) - 1 };
}

function nonce(domain: number, index: number): Uint8Array {
  const n = new Uint8Array(12);
  n[0] = domain;
  new DataView(n.buffer).setBigUint64(4, BigInt(index));
  return n;
}

const subtle = () => crypto.subtle;

/** Bytes of a base64 field this format wrote (SealError if it is not base64: a damaged record). */
function unb64(s: string): Uint8Array {
  const bytes = fromBase64(s);
  if (!bytes) throw new SealError('a sealed field is not base64');
  return bytes;
}

/**
 * Base64 of a random 96-bit nonce || AES-256-GCM(key, plain, aad): how data keys are wrapped and
 * small records (tag records) sealed. A random nonce: each key seals few of these, far from the
 * 2^32 a random 96-bit nonce allows.
 */
async function sealWithRandomNonce(key: CryptoKey, plain: Uint8Array, aad: Uint8Array): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = new Uint8Array(await subtle().encrypt({ name: 'AES-GCM', iv, additionalData: aad }, key, plain));
  const out = new Uint8Array(12 + ct.length);
  out.set(iv);
  out.set(ct, 12);
  return toBase64(out);
}

/** The plaintext of sealWithRandomNonce's output; null when its tag fails (the caller says why). */
async function openWithRandomNonce(key: CryptoKey, sealed: string, aad: Uint8Array): Promise<Uint8Array | null> {
  const bytes = unb64(sealed);
  try {
    return new Uint8Array(await subtle().decrypt({ name: 'AES-GCM', iv: bytes.subarray(0, 12), additionalData: aad }, key, bytes.subarray(12)));
  } catch {
    return null;
  }
}

/** A unit's data key, ready to seal or open its records. */
export class DataKey {
  private constructor(readonly key: CryptoKey) {}

  static async random(): Promise<{ dek: DataKey; raw: Uint8Array }> {
    const raw = crypto.getRandomValues(new Uint8Array(32));
    return { dek: await DataKey.fromRaw(raw), raw };
  }

  static async fromRaw(raw: Uint8Array): Promise<DataKey> {
    return new DataKey(await subtle().importKey('raw', raw, 'AES-GCM', false, ['encrypt', 'decrypt']));
  }

  /** Record `index` sealed: `plain.length + 16` bytes. */
  async sealRecord(index: number, plain: Uint8Array): Promise<Uint8Array> {
    return new Uint8Array(await subtle().encrypt({ name: 'AES-GCM', iv: nonce(0, index) }, this.key, plain));
  }

  /** Record `index` opened; SealError when its tag fails (a changed, moved or foreign record). */
  async openRecord(index: number, sealed: Uint8Array): Promise<Uint8Array> {
    try {
      return new Uint8Array(await subtle().decrypt({ name: 'AES-GCM', iv: nonce(0, index) }, this.key, sealed));
    } catch {
      throw new SealError(`sealed record ${index} fails its authentication tag`);
    }
  }

  /**
   * 48 bytes XORed over a sealed unit's footer MD5 (16) and checksum (32): a backend must not see
   * a plaintext digest (it would confirm a guessed plaintext). The AES-GCM keystream of nonce
   * 02 00 00 00 || 0 (AES-CTR from counter 2); the footer's own XXH64 and the records' tags, not
   * this mask, are what detect damage.
   */
  async footerMask(): Promise<Uint8Array> {
    const ct = new Uint8Array(await subtle().encrypt({ name: 'AES-GCM', iv: nonce(2, 0) }, this.key, new Uint8Array(48)));
    return ct.subarray(0, 48);
  }

  /** A small record sealed under this data key that may be written many times (a tag record): sealWithRandomNonce. */
  sealBlob(plain: Uint8Array, aad: string): Promise<string> {
    return sealWithRandomNonce(this.key, plain, new TextEncoder().encode(aad));
  }

  async openBlob(sealed: string, aad: string): Promise<Uint8Array> {
    const plain = await openWithRandomNonce(this.key, sealed, new TextEncoder().encode(aad));
    if (!plain) throw new SealError('a sealed record fails its authentication tag');
    return plain;
  }

  async sealIdentity(identity: SealedIdentity): Promise<string> {
    const plain = new TextEncoder().encode(JSON.stringify(identity));
    return toBase64(new Uint8Array(await subtle().encrypt({ name: 'AES-GCM', iv: nonce(1, 0) }, this.key, plain)));
  }

  async openIdentity(meta: string): Promise<SealedIdentity> {
    try {
      const plain = await subtle().decrypt({ name: 'AES-GCM', iv: nonce(1, 0) }, this.key, unb64(meta));
      return JSON.parse(new TextDecoder().decode(plain)) as SealedIdentity;
    } catch {
      throw new SealError('the sealed header identity fails its authentication tag');
    }
  }
}

const WRAP_AAD = (kid: string) => new TextEncoder().encode(`shardgate dek v1 ${kid}`);
const SECRET_AAD = (label: string) => new TextEncoder().encode(`shardgate kms key v1 ${label}`);

/** The `kid` of a data key wrapped under a client's SSE-C key (never a key ring id: those cannot hold "~"). */
export const CUSTOMER_KID = '~sse-c';

/**
 * The `kid` prefix of a data key wrapped under a version of a named KMS key (SSE-KMS,
 * model/kms-key.ts): `~kms/<key id>/<version>`. The key's material is in the catalog's key table,
 * itself wrapped under the gateway's own keys; a ring made `withNamedKeys` fetches it by kid.
 */
export const NAMED_KID_PREFIX = '~kms/';

/** Whether `kid` names a version of a named KMS key. */
export const isNamedKid = (kid: string): boolean => kid.startsWith(NAMED_KID_PREFIX);

/** The 32 bytes of the named key version a `~kms/` kid names (the catalog's key table, unwrapped). */
export type NamedKeyMaterial = (kid: string) => Promise<Uint8Array>;

function wrapWith(kek: CryptoKey, kid: string, raw: Uint8Array): Promise<string> {
  return sealWithRandomNonce(kek, raw, WRAP_AAD(kid));
}

async function unwrapWith(kek: CryptoKey, seal: Pick<UnitSeal, 'kid' | 'wrapped'>): Promise<Uint8Array> {
  const raw = await openWithRandomNonce(kek, seal.wrapped, WRAP_AAD(seal.kid));
  if (!raw) throw new SealError(`the data key wrapped under "${seal.kid}" does not open with the key given for it`);
  return raw;
}

const importCustomerKey = (key: Uint8Array) => subtle().importKey('raw', key, 'AES-GCM', false, ['encrypt', 'decrypt']);

/** A fresh data key for one unit, wrapped under a client's SSE-C key (32 bytes). */
export async function customerSeal(customerKey: Uint8Array, record: number): Promise<{ dek: DataKey; seal: UnitSeal }> {
  const { dek, raw } = await DataKey.random();
  return { dek, seal: { alg: SEAL_ALGORITHM, kid: CUSTOMER_KID, wrapped: await wrapWith(await importCustomerKey(customerKey), CUSTOMER_KID, raw), record } };
}

/**
 * The data key of a sealed unit: under the key ring, or (kid CUSTOMER_KID) under the client's
 * SSE-C key, which the read must give.
 */
export async function openSeal(seal: Pick<UnitSeal, 'kid' | 'wrapped'>, ring: KeyRing | null | undefined, customerKey?: Uint8Array): Promise<DataKey> {
  if (seal.kid === CUSTOMER_KID) {
    if (!customerKey) throw new SealError('this object is encrypted with a customer key (SSE-C): give the key to read it');
    return DataKey.fromRaw(await unwrapWith(await importCustomerKey(customerKey), seal));
  }
  if (!ring) throw new SealError(`this object is sealed under key "${seal.kid}" and no key ring is configured (config "encryption")`);
  return ring.open(seal);
}

/** Entries each memo of a ring keeps: data keys opened (one CryptoKey each), name keys and shelves. */
const DATA_KEYS_KEPT = 256;

/**
 * A memo of the ring's (the most recently asked last, the oldest forgotten past DATA_KEYS_KEPT, a
 * failure forgotten). Shared by the isolate's requests without handing one another's pending
 * work to another (model/isolate-shared.ts): opening a named KMS key's data key reads the key
 * table or an external key service, and Workers cancel a request waiting on another's I/O.
 */
const memo = <T>() => new IsolateMemo<T>({ max: DATA_KEYS_KEPT, waitMs: 2000 });

/**
 * The key ring: key-encryption keys by id (32 bytes each) and the one new writes use. A ring
 * with no active key seals nothing but still opens what its keys wrapped.
 */
export class KeyRing {
  private readonly keys = new Map<string, Uint8Array>();
  /** Imported on first use (workerd allows no crypto in a module's global scope). */
  private readonly imported = new Map<string, Promise<CryptoKey>>();
  /**
   * Data keys opened lately, by kid and wrapped key: a unit's key is asked for by every read of
   * it, and by a rebuild or rescue once per header, footer and tag record. Oldest first; bounded.
   */
  private readonly opened = memo<DataKey>();
  /** Name keys by kid, and shelves by kid and bucket (shelf.ts; bounded like `opened`). */
  private readonly nameKeys = memo<CryptoKey>();
  private readonly shelves = memo<string>();
  /** Named KMS key versions imported (their material is read from the key table, or an external key service). */
  private readonly importedNamed = memo<CryptoKey>();

  constructor(
    raw: Record<string, Uint8Array>,
    readonly active: string | null,
    private readonly named?: NamedKeyMaterial,
  ) {
    for (const [kid, bytes] of Object.entries(raw)) {
      if (bytes.length !== 32) throw new SealError(`key "${kid}" is ${bytes.length} bytes; a key-encryption key is 32 bytes (base64 of 32 random bytes)`);
      this.keys.set(kid, bytes);
    }
    if (active !== null && !this.keys.has(active))
      throw new SealError(`the active key "${active}" is not in the key ring (have: ${[...this.keys.keys()].join(', ') || 'none'})`);
  }

  /** A ring from base64 keys by id (the config's form). */
  static fromBase64(keys: Record<string, string>, active: string | null): KeyRing {
    return new KeyRing(
      Object.fromEntries(
        Object.entries(keys).map(([kid, v]) => {
          const bytes = fromBase64(v.trim());
          if (!bytes) throw new SealError(`key "${kid}" is not base64 (make one with openssl rand -base64 32)`);
          return [kid, bytes];
        }),
      ),
      active,
    );
  }

  has(kid: string): boolean {
    return this.keys.has(kid);
  }

  /**
   * This ring's keys, and the named KMS keys `named` gives (`~kms/` kids): what a gateway with a
   * key table uses everywhere, so every reader (GET, rebuild, scrub, rotation) opens SSE-KMS units.
   */
  withNamedKeys(named: NamedKeyMaterial): KeyRing {
    return new KeyRing(Object.fromEntries(this.keys), this.active, named);
  }

  /**
   * `raw` (a named key's material) wrapped under the active key, bound to `label` (its key id and
   * version): what the catalog's key table stores. Opened by openSecret with the same label.
   */
  async sealSecret(raw: Uint8Array, label: string): Promise<{ kid: string; wrapped: string }> {
    if (!this.active) throw new SealError("no active key: a named KMS key needs the gateway's active key to wrap its material");
    return { kid: this.active, wrapped: await sealWithRandomNonce(await this.kek(this.active), raw, SECRET_AAD(label)) };
  }

  async openSecret(secret: { kid: string; wrapped: string }, label: string): Promise<Uint8Array> {
    if (isNamedKid(secret.kid)) throw new SealError("a named key is wrapped under a key of the gateway's ring, never another named key");
    const raw = await openWithRandomNonce(await this.kek(secret.kid), secret.wrapped, SECRET_AAD(label));
    if (!raw) throw new SealError(`the material of named key ${label} does not open with key "${secret.kid}"`);
    return raw;
  }

  ids(): string[] {
    return [...this.keys.keys()];
  }

  private kek(kid: string): Promise<CryptoKey> {
    if (isNamedKid(kid)) {
      const named = this.named;
      if (!named) throw new SealError(`this object is sealed under the named KMS key version "${kid}" and this reader has no key table`);
      return this.importedNamed.get(kid, async () => subtle().importKey('raw', await named(kid), 'AES-GCM', false, ['encrypt', 'decrypt']));
    }
    const bytes = this.keys.get(kid);
    if (!bytes) throw new SealError(`this object is sealed under key "${kid}", which is not in the key ring (have: ${this.ids().join(', ') || 'none'})`);
    let k = this.imported.get(kid);
    if (!k) this.imported.set(kid, (k = subtle().importKey('raw', bytes, 'AES-GCM', false, ['encrypt', 'decrypt'])));
    return k;
  }

  /**
   * A fresh data key for one unit, and its seal record under the active key, or under `kid` (a
   * named KMS key version, `~kms/...`, for an SSE-KMS object).
   */
  async newSeal(record: number, kid: string | null = this.active): Promise<{ dek: DataKey; seal: UnitSeal }> {
    if (!kid) throw new SealError('no active key: nothing can be sealed');
    const { dek, raw } = await DataKey.random();
    return { dek, seal: { alg: SEAL_ALGORITHM, kid, wrapped: await this.wrap(kid, raw), record } };
  }

  private async wrap(kid: string, raw: Uint8Array): Promise<string> {
    return wrapWith(await this.kek(kid), kid, raw);
  }

  private async unwrapRaw(seal: Pick<UnitSeal, 'kid' | 'wrapped'>): Promise<Uint8Array> {
    if (seal.kid === CUSTOMER_KID) throw new SealError('this object is encrypted with a customer key (SSE-C): it opens only with that key');
    return unwrapWith(await this.kek(seal.kid), seal);
  }

  /** The data key of a sealed unit or object (remembered for the next asks: DATA_KEYS_KEPT). */
  open(seal: Pick<UnitSeal, 'kid' | 'wrapped'>): Promise<DataKey> {
    return this.opened.get(`${seal.kid} ${seal.wrapped}`, () => this.unwrapRaw(seal).then((raw) => DataKey.fromRaw(raw)));
  }

  /** The shelf of `bucket` under key `kid` (the active key by default): shelf.ts. */
  shelf(bucket: string, kid: string | null = this.active): Promise<string> {
    if (!kid) throw new SealError('no active key: no shelf');
    const bytes = this.keys.get(kid);
    if (!bytes) throw new SealError(`no key "${kid}" in the key ring`);
    return this.shelves.get(`${kid}\n${bucket}`, async () => shelfOf(await this.nameKeys.get(kid, () => shelfNameKey(bytes)), bucket));
  }

  /** The shelves `bucket` may have units on: one per key of the ring. */
  shelvesOf(bucket: string): Promise<string[]> {
    return Promise.all(this.ids().map((kid) => this.shelf(bucket, kid)));
  }

  /** `seal` re-wrapped under `kid` (rotation): the same data key, so the sealed bytes stay valid. */
  async rewrap<T extends Pick<UnitSeal, 'kid' | 'wrapped'>>(seal: T, kid: string): Promise<T> {
    if (seal.kid === kid) return seal;
    return { ...seal, kid, wrapped: await this.wrap(kid, await this.unwrapRaw(seal)) };
  }
}

/** A footer's MD5 and checksum digest XORed with a unit's footer mask (masking and unmasking alike). */
export function maskFooterDigests<F extends { md5: Uint8Array; checksum: { digest: Uint8Array } | null }>(footer: F, mask: Uint8Array): F {
  const xor = (a: Uint8Array, at: number) => a.map((b, i) => b ^ mask[at + i]!);
  return { ...footer, md5: xor(footer.md5, 0), checksum: footer.checksum ? { ...footer.checksum, digest: xor(footer.checksum.digest, 16) } : null };
}
