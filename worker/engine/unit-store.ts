/**
 * UnitStore: turns bodies into stored bytes by policy, and stored bytes back into streams. It
 * decides inline vs replicated vs erasure-coded, places shards, verifies client digests after
 * the single streaming pass, and deletes what it wrote when a write does not commit. Everything
 * S3-level (conditions, catalog commits, multipart rules) is in ec-store.ts.
 */
import { lend, type LentStream } from '../model/lent-chunks.ts';
import { BackendError, type Backend } from '../../backends/types.ts';
import { fromBase64, toBase64 } from '../model/bytes.ts';
import { S3Error } from '../model/errors.ts';
import type { ChecksumRequest, ObjectChecksum } from '../model/object-store.ts';
import type { Tag } from '../model/tagging.ts';
import { newId } from '../format/ids.ts';
import type { Codec, CodedUnit, ObjectManifest } from '../format/manifest.ts';
import { bucketShardPrefixes, shardKey, shelvedUnitId } from '../format/shard-key.ts';
import { UnitLayout } from '../format/layout.ts';
import { BackendLatency } from './backend-latency.ts';
import { BodyFeed, type UnitFeed } from './body-feed.ts';
import { writeColumn } from './column-writer.ts';
import { placeShards } from './placement.ts';
import type { BackendReachability } from './reachability.ts';
import { QuorumError } from './shard-set.ts';
import type { StoragePolicy } from './policy.ts';
import type { PriceBook } from '../model/prices.ts';
import type { ShardReadError } from './shard-reader.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore } from './subrequests.ts';
import { openCodedUnit, openSealed } from './sealed-read.ts';
import { SealingFeed } from './sealing-feed.ts';
import {
  CUSTOMER_KID,
  SEAL_TAG_BYTES,
  SealError,
  customerSeal,
  openSeal,
  plainSizeOfSealed,
  sealRecordBytes,
  sealedSize,
  type HeaderSeal,
  type KeyRing,
  type SealedIdentity,
  type UnitSeal,
} from '../format/seal.ts';
import type { GrowBudget } from './column-rebuild.ts';
import { writeUnit } from './unit-writer.ts';
import { writeTagRecord } from './tag-record.ts';

/**
 * Wasm memory a column unit's parity may take: the unit's shard length S is at most this over m
 * (and at most MAX_COLUMN_SHARD), so a wide write holds m x S bytes, whatever the object's size.
 */
const COLUMN_PARITY_BYTES = 24 * 1024 * 1024;
const MAX_COLUMN_SHARD = 8 * 1024 * 1024;

export interface StoredBody {
  storage: ObjectManifest['storage'];
  md5: Uint8Array;
  checksum: ObjectChecksum | null;
}

/**
 * How a body of a given size is stored, decided before any byte is read: inline in the catalog,
 * one striped unit (every shard streams at once: k+m <= 6), or column units of a wide code (as
 * many as it takes for each to hold at most k x `columnShardBytes`). `unitIds` are the ids its
 * shards will go under (none inline), so a caller can reserve them in the same round trip as its
 * other catalog reads.
 */
export interface StoragePlan {
  mode: 'inline' | 'striped' | 'column';
  codec: Codec;
  k: number;
  m: number;
  quorum: number;
  unitIds: string[];
  /** Column: bytes of stored data per data shard of every unit but the last. */
  columnShardBytes?: number;
  /** Column: bytes of object data in every unit but the last (less than k x columnShardBytes when sealed). */
  unitPlainBytes?: number;
  /**
   * Column: stored bytes per data shard of the plan's first unit, its largest: its writer holds m
   * of them as parity (column-writer.ts), which is what the write asks of the coding budget. At
   * most columnShardBytes, and less for a body smaller than one full unit.
   */
  firstShardBytes?: number;
  /**
   * The longest block of the plan's first unit (UnitLayout.largestBlock): the block size, or less
   * for a body of one row. Its writer's stripe and upload buffers are this long, and so is what
   * it asks of the coding budget: a 64 KiB 4+2 PUT holds 16 KiB blocks, not 256 KiB ones.
   */
  firstBlockBytes?: number;
  /** Units (or the inline object) are sealed under the key ring's active key (format/seal.ts). */
  sealed: boolean;
  /** Sealed: plaintext bytes per record of every unit (sealRecordBytes). */
  sealRecord?: number;
}

export interface StoreBodyInput {
  bucket: string;
  key: string;
  body: ReadableStream<Uint8Array>;
  size: number;
  policy: StoragePolicy;
  /** From plan(), whose unit ids the caller has reserved in the catalog. */
  plan: StoragePlan;
  checksum: ChecksumRequest | null;
  contentMD5?: string | null;
  /** Parts are always coded units (a manifest lists units), never inline. */
  part?: { uploadId: string; partNumber: number };
  metadata?: unknown;
  /** Settles when the write's unit ids are reserved: every shard's last bytes wait for it (shard-set.ts). */
  commitGate?: Promise<void>;
  /** SSE-C: data keys are wrapped under this client key (32 bytes) instead of the key ring's (plan with `forceSeal`). */
  customerKey?: Uint8Array;
  /** SSE-KMS: data keys are wrapped under this named key version (`~kms/<id>/<version>`, engine/kms-keys.ts) instead of the ring's active key (plan with `forceSeal`). */
  kmsKid?: string;
  /** The write time the shard headers record (absent: now): a re-stripe keeps the version's own (shard-set.ts). */
  createdAt?: string;
  /** Place the units on these backends only (absent: every placeable one): the journal's narrower write while backends are down (upkeep/journal.ts). */
  placeOn?: readonly Backend[];
}

export type UnhealthyHandler = (bucket: string, key: string, unit: CodedUnit, err: ShardReadError) => void;

export interface UnitStoreOptions {
  /** A healthy read decodes around data shards slower than this (ms); absent: never. */
  hedgeMs?: number;
  /** Wasm memory a column unit's parity may take (tests make it small to get many units). */
  columnParityBytes?: number;
  /** What each backend charges: reads fetch the cheapest shards (read-cost.ts). */
  prices?: PriceBook;
  /** Key-encryption keys: with an active one, new objects of policies that encrypt are sealed (format/seal.ts). */
  keyRing?: KeyRing;
  /** Plaintext bytes per sealed record of new units (config encryption.recordBytes); absent: by body size (sealRecordBytes). */
  sealRecordBytes?: number;
  /**
   * Ids of the backends new units are placed on (absent: all): a draining backend is read but
   * takes no new shard (config "state"; upkeep/drain.ts moves its shards off).
   */
  placeOn?: readonly string[];
  /** Told when a read opens a unit with shards recorded missing (the gateway wakes its repair). */
  onDegradedRead?: (bucket: string, key: string, unit: CodedUnit) => void;
  /**
   * Which backends are down now (reachability.ts): writes are placed around them when enough
   * others remain and refused at once when their placement misses the quorum; reads skip their
   * shards and are refused at once below k. Absent: every backend is called.
   */
  reachability?: BackendReachability;
}

export class UnitStore {
  readonly byId: Map<string, Backend>;
  /** The backends new units are placed on (UnitStoreOptions.placeOn). */
  readonly placeable: Backend[];
  /** How fast each backend has answered this isolate's reads. */
  readonly latency = new BackendLatency();

  constructor(
    readonly backends: Backend[],
    private readonly onUnhealthy: UnhealthyHandler = () => {},
    private readonly options: UnitStoreOptions = {},
  ) {
    this.byId = new Map(backends.map((b) => [b.id, b]));
    const placeOn = options.placeOn ? new Set(options.placeOn) : null;
    this.placeable = placeOn ? backends.filter((b) => placeOn.has(b.id)) : backends;
  }

  /**
   * How a body of `size` bytes will be stored under `policy`; a part is always coded (a manifest
   * lists units), never inline. Its units are shelved on `shelf` when one is given (shelfOf).
   */
  plan(size: number, policy: StoragePolicy, part: boolean, forceSeal = false, shelf?: string): StoragePlan {
    const newUnitId = () => (shelf ? shelvedUnitId(shelf, newId()) : newId());
    const small = size <= policy.small.threshold;
    const replicas = small ? policy.small.replicas : policy.codec === 'replica' ? policy.k + policy.m : 0;
    const [codec, k, m] = replicas ? (['replica', 1, replicas - 1] as const) : (['rs-cauchy-gf8', policy.k, policy.m] as const);
    // Small-object replicas need a majority; a policy's own codec keeps its configured quorum.
    const quorum = replicas && small ? Math.floor(replicas / 2) + 1 : policy.writeQuorum;
    const sealed = forceSeal || this.seals(policy);
    const sealRecord = sealed ? sealRecordBytes(size, this.options.sealRecordBytes) : undefined;
    if (small && policy.small.mode === 'inline' && !part) return { mode: 'inline', codec, k, m, quorum, unitIds: [], sealed, sealRecord };
    const storedBytes = (plain: number) => (sealRecord ? sealedSize(plain, sealRecord) : plain);
    if (k + m <= MAX_OPEN_SUBREQUESTS || codec === 'replica') {
      const firstBlockBytes = new UnitLayout(storedBytes(size), k, m, policy.blockSize, 0).largestBlock;
      return { mode: 'striped', codec, k, m, quorum, unitIds: [newUnitId()], firstBlockBytes, sealed, sealRecord };
    }
    const budget = Math.min(MAX_COLUMN_SHARD, Math.floor((this.options.columnParityBytes ?? COLUMN_PARITY_BYTES) / m));
    const columnShardBytes = Math.max(policy.blockSize, budget - (budget % policy.blockSize));
    // Sealed: as many whole records as fit the unit's stored bytes (the parity bound is on those).
    const unitPlainBytes = sealRecord ? Math.max(1, Math.floor((k * columnShardBytes) / (sealRecord + SEAL_TAG_BYTES))) * sealRecord : k * columnShardBytes;
    const count = Math.max(1, Math.ceil(size / unitPlainBytes));
    const firstPlain = Math.min(size, unitPlainBytes);
    const firstLayout = new UnitLayout(storedBytes(firstPlain), k, m, policy.blockSize, 0, 'column');
    const firstShardBytes = firstLayout.stripeData;
    return {
      mode: 'column',
      codec,
      k,
      m,
      quorum,
      unitIds: Array.from({ length: count }, newUnitId),
      columnShardBytes,
      unitPlainBytes,
      firstShardBytes,
      firstBlockBytes: firstLayout.largestBlock,
      sealed,
      sealRecord,
    };
  }

  /**
   * The shelf new units of `bucket` go to (format/shelf.ts): under the ring's active key, so no
   * shard key names the bucket; none without an active key (units are then named by bucket).
   */
  async shelfOf(bucket: string): Promise<string | undefined> {
    const ring = this.options.keyRing;
    return ring?.active ? ring.shelf(bucket) : undefined;
  }

  /** Every prefix the shard files of `bucket` may be under: its name, and its shelf under each key of the ring. */
  async shardPrefixes(bucket: string): Promise<string[]> {
    return bucketShardPrefixes(bucket, this.options.keyRing);
  }

  /** Whether new objects under `policy` are sealed: an active key, and the policy does not opt out. */
  seals(policy: StoragePolicy): boolean {
    return !!this.options.keyRing?.active && policy.encrypt !== false;
  }

  /**
   * What a unit writer reads for one unit of `size` object bytes: the body itself, or (sealed) the
   * body sealed under a fresh data key, with the stored size and, for shard files (`identity`
   * given), the header seal and footer mask to write.
   */
  private async unitFeed(
    input: StoreBodyInput,
    feed: BodyFeed,
    size: number,
    identity: Omit<SealedIdentity, 'size'> | null,
  ): Promise<{ feed: UnitFeed; stored: number; seal?: UnitSeal; headerSeal?: HeaderSeal; footerMask?: Uint8Array }> {
    if (!input.plan.sealed) return { feed, stored: size };
    const record = input.plan.sealRecord ?? sealRecordBytes(input.size, this.options.sealRecordBytes);
    const { dek, seal } = input.customerKey
      ? await customerSeal(input.customerKey, record)
      : await this.ring().newSeal(record, input.kmsKid ?? this.ring().active);
    const sealed = { feed: new SealingFeed(feed, size, dek, seal.record), stored: sealedSize(size, seal.record), seal };
    // An inline object (identity null) has no shard header or footer to seal.
    if (!identity) return sealed;
    const meta = await dek.sealIdentity({ ...identity, size });
    return { ...sealed, headerSeal: { ...seal, meta }, footerMask: await dek.footerMask() };
  }

  async storeBody(input: StoreBodyInput): Promise<StoredBody> {
    const { plan, size } = input;
    if (plan.mode !== 'inline') await this.refuseUnreachable(input);
    const feed = new BodyFeed(input.body, input.checksum, size);
    if (plan.mode === 'inline') return this.storeInline(input, feed);
    const units: CodedUnit[] = [];
    try {
      const identity = { bucket: input.bucket, key: input.key, ...input.part, ...(input.metadata !== undefined ? { metadata: input.metadata } : {}) };
      if (plan.mode === 'striped') {
        const u = await this.unitFeed(input, feed, size, identity);
        const { unit } = await writeUnit({
          ...this.geometry(input),
          unitId: plan.unitIds[0]!,
          size: u.stored,
          feed: u.feed,
          headerExtra: { ...input.part, metadata: input.metadata },
          seal: u.headerSeal,
          footerMask: u.footerMask,
        });
        units.push(sealedRecord(unit, size, u.seal));
      } else {
        const unitBytes = plan.unitPlainBytes!;
        const count = plan.unitIds.length,
          writeId = plan.unitIds[0]!;
        for (let index = 0; index < count; index++) {
          const segment = count > 1 ? { segment: { writeId, index, count, objectSize: size } } : {};
          const plain = Math.min(unitBytes, size - index * unitBytes);
          const u = await this.unitFeed(input, feed, plain, identity);
          const { unit } = await writeColumn({
            ...this.geometry(input),
            unitId: plan.unitIds[index]!,
            size: u.stored,
            feed: u.feed,
            last: index === count - 1,
            headerExtra: { ...input.part, metadata: input.metadata, ...segment },
            seal: u.headerSeal,
            footerMask: u.footerMask,
          });
          units.push(sealedRecord(unit, plain, u.seal));
        }
      }
      const { md5, checksum } = await feed.digest.verify(input.contentMD5);
      if (input.part) for (const u of units) u.partNumber = input.part.partNumber;
      return { storage: { kind: 'coded', units }, md5, checksum };
    } catch (err) {
      await this.discard(input.bucket, units);
      throw err;
    }
  }

  private geometry(input: StoreBodyInput) {
    const { codec, k, m, quorum } = input.plan;
    return {
      bucket: input.bucket,
      key: input.key,
      codec,
      k,
      m,
      blockSize: input.policy.blockSize,
      writeQuorum: quorum,
      // A shard placed on a backend known down is missed at once (repair writes it later), never called.
      backends: (input.placeOn
        ? placeShards(`${input.bucket}/${input.key}`, input.placeOn, k, m)
        : this.writePlacement(input.bucket, input.key, k, m, input.policy)
      ).map((b) => (this.options.reachability?.isDown(b.id) ? knownDown(b) : b)),
      commitGate: input.commitGate,
      ...(input.createdAt ? { createdAt: input.createdAt } : {}),
    };
  }

  /** The backends, in shard order, a new k+m unit of `key` goes to (the same for every unit of one write). */
  placementOf(bucket: string, key: string, k: number, m: number, policy?: Pick<StoragePolicy, 'backends'>): Backend[] {
    return placeShards(`${bucket}/${key}`, this.poolOf(policy), k, m);
  }

  /** The placeable backends of `policy`'s pool (config `backends`); all of them without one. */
  private poolOf(policy?: Pick<StoragePolicy, 'backends'>): Backend[] {
    const pool = policy?.backends;
    return pool ? this.placeable.filter((b) => pool.includes(b.id)) : this.placeable;
  }

  /** Where a write now places `key`'s units: around backends known down when k+m others remain, else as placementOf. */
  private writePlacement(bucket: string, key: string, k: number, m: number, policy?: Pick<StoragePolicy, 'backends'>): Backend[] {
    const placeable = this.poolOf(policy);
    const up = placeable.filter((b) => !this.options.reachability?.isDown(b.id));
    return placeShards(`${bucket}/${key}`, up.length >= k + m && up.length < placeable.length ? up : placeable, k, m);
  }

  /**
   * A write whose placement reaches fewer backends than its quorum is refused before any call (a
   * 503), once the backends known down for a while have been asked again (reachability.ts recheck).
   */
  private async refuseUnreachable(input: StoreBodyInput): Promise<void> {
    const r = this.options.reachability;
    if (!r) return;
    const { k, m, quorum } = input.plan;
    const short = () => {
      const placed = this.writePlacement(input.bucket, input.key, k, m, input.policy);
      const down = placed.filter((b) => r.isDown(b.id));
      return { placed, down, refused: placed.length - down.length < quorum };
    };
    if (short().refused) await r.recheck(this.placeable);
    const { placed, down, refused } = short();
    if (refused) {
      throw new QuorumError(
        `${placed.length - down.length} of the ${placed.length} backends this write goes to are reachable (down: ${down.map((b) => b.id).join(', ')}), its write quorum is ${quorum}; refused without calling them`,
        [],
      );
    }
  }

  /**
   * `unit` as a read sees it: shards on backends known down count as missing (never called), or a
   * 503 at once when fewer than k shards are left on reachable backends (once the backends known
   * down for a while have been asked again: reachability.ts recheck).
   */
  private async readable(unit: CodedUnit): Promise<CodedUnit> {
    const r = this.options.reachability;
    if (!r) return unit;
    const downOf = () => unit.placement.flatMap((id, i) => (!unit.missing.includes(i) && r.isDown(id) ? [i] : []));
    let down = downOf();
    if (!down.length) return unit;
    if (unit.placement.length - unit.missing.length - down.length < unit.k) {
      await r.recheck(down.flatMap((i) => this.byId.get(unit.placement[i]!) ?? []));
      down = downOf();
    }
    const left = unit.placement.length - unit.missing.length - down.length;
    if (left < unit.k) {
      throw new QuorumError(
        `${left} shard(s) of a unit that needs ${unit.k} are on reachable backends (down: ${[...new Set(down.map((i) => unit.placement[i]))].join(', ')}); refused without calling them`,
        [],
      );
    }
    return { ...unit, missing: [...unit.missing, ...down] };
  }

  private async storeInline(input: StoreBodyInput, feed: BodyFeed): Promise<StoredBody> {
    const u = await this.unitFeed(input, feed, input.size, null);
    const data = new Uint8Array(u.stored);
    try {
      await u.feed.fill(u.stored, () => data);
      await feed.expectEnd();
    } catch (err) {
      feed.release();
      throw err;
    }
    const { md5, checksum } = await feed.digest.verify(input.contentMD5);
    return { storage: { kind: 'inline', data: toBase64(data), ...(u.seal ? { seal: u.seal } : {}) }, md5, checksum };
  }

  /**
   * The bytes [start, end] of object `key`; the first unit is opened before returning. `grow`:
   * more coding budget for a degraded column read's rebuilt rows, given back as each unit ends.
   */
  async open(
    bucket: string,
    key: string,
    storage: ObjectManifest['storage'],
    start: number,
    end: number,
    grow?: GrowBudget,
    customerKey?: Uint8Array,
  ): Promise<LentStream> {
    if (end < start) return lend(new ReadableStream({ start: (c) => c.close() }), 'an empty range');
    if (storage.kind === 'inline') {
      const stored = fromBase64(storage.data)!;
      if (storage.seal) {
        const dek = await openSeal(storage.seal, this.options.keyRing, customerKey);
        const from = (a: number, b: number) =>
          Promise.resolve(new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(stored.subarray(a, b + 1)), c.close()) }));
        return openSealed(from, dek, plainSizeOfSealed(stored.length, storage.seal.record), storage.seal.record, start, end);
      }
      const bytes = stored.subarray(start, end + 1);
      return lend(new ReadableStream({ start: (c) => (c.enqueue(bytes), c.close()) }), `inline object ${key}`);
    }
    const pieces: { unit: CodedUnit; from: number; to: number }[] = [];
    let offset = 0;
    for (const unit of storage.units) {
      const lo = Math.max(start, offset),
        hi = Math.min(end, offset + unit.size - 1);
      if (hi >= lo) pieces.push({ unit, from: lo - offset, to: hi - offset });
      offset += unit.size;
    }
    const openPiece = async (p: (typeof pieces)[number]) => {
      if (p.unit.missing.length) this.options.onDegradedRead?.(bucket, key, p.unit);
      const input = {
        bucket,
        unit: await this.readable(p.unit),
        backends: this.byId,
        start: p.from,
        end: p.to,
        onUnhealthy: (e: ShardReadError) => this.onUnhealthy(bucket, key, p.unit, e),
        hedgeMs: this.options.hedgeMs,
        latency: this.latency,
        prices: this.options.prices,
        grow,
        rebuildHoldBytes: this.options.columnParityBytes ?? COLUMN_PARITY_BYTES,
      };
      return openCodedUnit(input, this.options.keyRing, customerKey);
    };
    if (pieces.length === 1) return openPiece(pieces[0]!);
    let current: ReadableStreamDefaultReader<Uint8Array> | null = (await openPiece(pieces[0]!)).getReader();
    let next = 1;
    // Each piece's chunk is handed on as it is, lent by the piece until the next read.
    const pieced = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          for (;;) {
            if (!current) {
              if (next >= pieces.length) return controller.close();
              current = (await openPiece(pieces[next++]!)).getReader();
            }
            const r = await current.read();
            if (!r.done) return controller.enqueue(r.value);
            current = null;
          }
        },
        cancel: (reason) => current?.cancel(reason),
      },
      { highWaterMark: 0 },
    );
    return lend(pieced, `object ${key}, ${pieces.length} units`);
  }

  /**
   * Deletes the shards of units that will never be committed, best effort: a shard still being
   * written by a backend that does not abort cleanly may land afterwards; the unit's reservation
   * then brings the collector back for it.
   */
  /** Stores the object's tags as last set beside the shards of `unit` (its first): tag-record.ts. */
  async writeTagRecord(bucket: string, key: string, unit: CodedUnit, tags: Tag[]): Promise<void> {
    // A sealed unit's record is sealed under its data key; an SSE-C unit's key is the client's
    // (not given to a tagging call): it gets no record (a rebuild cannot open such objects anyway).
    if (unit.seal?.kid === CUSTOMER_KID) return;
    const dek = unit.seal ? await this.ring().open(unit.seal) : undefined;
    return writeTagRecord(this.byId, unit, { format: 1, bucket, key, unitId: unit.unitId, tags, setAt: new Date().toISOString() }, dek);
  }

  private ring(): KeyRing {
    if (!this.options.keyRing) throw new SealError('this object is sealed and the gateway has no key ring (config "encryption")');
    return this.options.keyRing;
  }

  /**
   * Gives every shard of `units` on a backend that enforces retention (Backend.retain) the
   * COMPLIANCE retention `retainUntil`. Answers the shards it could not retain (the gateway's
   * own lock still holds them; the caller logs). Backends without retention are skipped.
   */
  async retain(bucket: string, units: CodedUnit[], retainUntil: Date): Promise<number> {
    const slots = new Semaphore(MAX_OPEN_SUBREQUESTS);
    const calls = units.flatMap((u) => u.placement.map((id, i) => ({ backend: this.byId.get(id), key: shardKey(bucket, u.unitId, i) })));
    const results = await Promise.allSettled(calls.filter((c) => c.backend?.retain).map((c) => slots.run(() => c.backend!.retain!(c.key, { retainUntil }))));
    return results.filter((r) => r.status === 'rejected').length;
  }

  async discard(bucket: string, units: CodedUnit[]): Promise<void> {
    const slots = new Semaphore(MAX_OPEN_SUBREQUESTS);
    // A backend known down is not waited for: the units' reservations bring the collector back.
    const up = (id: string) => !this.options.reachability?.isDown(id);
    await Promise.allSettled(
      units.flatMap((u) => u.placement.map((id, i) => slots.run(async () => (up(id) ? this.byId.get(id)?.delete(shardKey(bucket, u.unitId, i)) : undefined)))),
    );
  }
}

/** Stands in for a backend known down in a write's placement: every call fails at once, without reaching it. */
function knownDown(b: Backend): Backend {
  const fail = () => Promise.reject(new BackendError(b.id, 'Unavailable', 'known down (health or maintenance): not called'));
  return { id: b.id, domain: b.domain, put: fail, get: fail, head: fail, delete: fail, list: fail };
}

/** The catalog's record of a written unit: its object bytes and, sealed, its seal. */
function sealedRecord(unit: CodedUnit, plain: number, seal: UnitSeal | undefined): CodedUnit {
  return seal ? { ...unit, size: plain, seal } : unit;
}
