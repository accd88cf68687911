/**
 * CatalogObject: the Durable Object behind DurableCatalog, with SQLite storage (sql-schema.ts).
 * One instance per bucket (routing.ts: idFromName('bucket:' + name)) holds that bucket's objects,
 * uploads, parts and garbage; the instance named '__buckets__' holds the bucket list and the
 * garbage of deleted buckets. A gateway reaches it through one entry point, dispatch(), by the
 * operation's name (operations.ts: the one table of operations); each operation is a method
 * here, whose name and arguments stay callable by RPC as gateways deployed before the table
 * call them (a deploy runs both releases side by side for seconds to minutes). Each method runs in
 * one transactionSync with no await between its checks and its writes: a Durable Object runs one
 * synchronous section at a time, so a conditional commit or a completion is atomic against every
 * other request to the bucket, and a thrown S3Error rolls the transaction back.
 * S3 errors come back as data (rpc.ts). Mutations take the garbage grace delay from the caller.
 * A request's calls may carry a settings stamp (dispatch's `stamp`; fenced() for older gateways):
 * run only if the bucket's request-path settings (its policy) are still those the request was
 * checked against (model/bucket-settings.ts).
 * An instance creates its tables only when a bucket (or the bucket list) is first written, so a
 * request naming a bucket that never existed leaves no storage behind.
 * Repair: a bucket's instance owns its repair worklist (sql-repairs.ts). Whenever it has
 * degraded units its alarm is set; the alarm hands due units to the repair queue (REPAIR_QUEUE,
 * the same binding the Worker has) and the consumer reports each outcome back (markRepaired,
 * repairFailed). The alarm is set in the same event as the commit that recorded the damage, so a
 * crash of the gateway, a lost message or a dropped queue retry cannot lose a repair.
 * The unit verbs take the unit's key last (`_key`): the client routes by it (routing.ts); one
 * instance holds every key of its bucket, so the instance has no use for it yet, and a gateway of
 * the previous release sends none.
 * Known gap: one instance bounds a bucket's request rate; partitioning a hot bucket across
 * instances slots in behind routing.ts (issue 39, docs/PARTITIONS.md).
 */
import { DurableObject } from 'cloudflare:workers';
import type { CodedUnit, ObjectManifest } from '../format/manifest.ts';
import { S3Error } from '../model/errors.ts';
import type * as S from '../model/object-store.ts';
import { reply, replyAsync, unwrap, type Fenced, type Reply } from './rpc.ts';
import { operation, type CatalogEntry } from './operations.ts';
import { settingsOf } from './settings-stamp.ts';
import { NO_SETTINGS, REQUEST_SETTINGS, type BucketSettings } from '../model/bucket-settings.ts';
import { OWNER_ROW } from '../model/account.ts';
import { ACL_ROW, OWNERSHIP_ROW, ownershipOf, type StoredObjectAcl } from '../model/acl.ts';
import { SqlMultipart } from './sql-multipart.ts';
import { SqlRepairs } from './sql-repairs.ts';
import { alarmTime } from './alarm-time.ts';
import { repairTimingOf, type RepairTiming } from '../model/repair-timing.ts';
import { createSchema, migrate } from './schema-migrations.ts';
import { allGarbage, queueGarbage, SqlObjects, takeDueGarbage } from './sql-objects.ts';
import { readState, readStates, writeState } from './sql-state.ts';
import { bucketInfo, type BucketRow, type GarbageRow } from './sql-schema.ts';
import { garbageUnitIds, type CatalogWriteConditions } from './rules.ts';
import { SCRUB_POSITION } from './scrub-progress.ts';
import { importRows, SqlJournal, type JournalStatus, type JournalTake } from './sql-journal.ts';
import type { CatalogLoss, JournalImportBatch, JournalKnown } from './types.ts';
import { BUCKET_LIST_INSTANCE, JOURNAL_BUCKET } from '../format/journal.ts';
import { listKmsKeys, readKmsKey, replaceKmsKey } from './sql-kms-keys.ts';
import { DEFAULT_ENCRYPTION_ROW } from '../model/default-encryption.ts';
import { readCatalogLoss, writeCatalogLoss } from './sql-catalog-loss.ts';
import type {
  BucketHealth,
  CommitResult,
  ScrubCursor,
  CompletedUpload,
  DegradedUnit,
  GarbageUnits,
  PartRecord,
  RepairMessage,
  RestripeChange,
  UnitRecord,
  UploadRecord,
} from './types.ts';
import { degradedUnitsOf } from './usage.ts';
import { listSealRecords, replaceSealRecords } from './sql-seals.ts';
import { commitRestripe, listVersionRecords } from './sql-restripe.ts';
import type { BackfillState } from '../model/adopt-backfill.ts';
import type { RestripeState } from './restripe-record.ts';
import type { PreparedPart, SealRecord, SealRecordCursor, ShardMove, VersionAt, VersionLookup, VersionRecord } from './types.ts';
import type { CorsRule } from '../model/cors.ts';
import type { Tag } from '../model/tagging.ts';
import type { DefaultRetention, ObjectLockConfig } from '../model/object-lock.ts';
import type { ObjectLockChange } from './types.ts';
import type { LifecycleRule } from '../model/lifecycle.ts';
import { keyVersionsPage, LIFECYCLE_PROGRESS, readProgress, type KeyVersions } from './sql-lifecycle.ts';
import type { LifecycleProgress, LifecycleRun } from './types.ts';
import { SqlAccessLog, type AccessLogBatch, type AppendResult } from './sql-access-log.ts';
import { parseStoredLogging, type LogGroup } from '../model/bucket-logging.ts';
import type { LoggingNote } from '../model/request-notes.ts';
import { parseStoredPublicAccessBlock, PUBLIC_ACCESS_BLOCK_ROW } from '../model/public-access-block.ts';
import { claimChain, endChain } from './move-chain-record.ts';
import {
  onePartition,
  owns,
  ownedRange,
  parsePartitionMap,
  PARTITION_MAP,
  PARTITION_RANGE,
  splitAt,
  type Moved,
  type OwnedRange,
  type PartitionMap,
} from './partition-map.ts';
import { bucketInstance, journalBucket, partitionInstance } from './routing.ts';
import { compareKeys } from '../model/listing.ts';
import { RequestRate } from '../model/request-rate.ts';
import { mirrorRows, sameRows, MIRROR_GENERATION, MIRROR_PENDING, RETIRING, type Mirror } from './partition-mirror.ts';
import { errorMessage } from '../model/error-message.ts';
import {
  ackChanges,
  dropRange,
  keysAfter,
  medianKey,
  peekChanges,
  pendingChanges,
  readSplit,
  replaceKeys,
  rowsOfKeys,
  startChangeLog,
  stopChangeLog,
  unkeyedReservations,
  writeSplit,
  type KeyRows,
  type PartitionShare,
  type PartitionStats,
  type SplitChange,
  type SplitState,
  type SplitStop,
} from './sql-split.ts';
import { SqlLedger } from './sql-ledger.ts';
import {
  applyStaged,
  dropStaging,
  garbageAfter,
  readMerge,
  readMergeIn,
  stageGarbage,
  stageKeys,
  startStaging,
  writeMerge,
  writeMergeIn,
  type GarbageRowOut,
  type MergeInState,
  type MergeState,
} from './sql-merge.ts';
import { completionGrowth, enforceQuota, healthUsage, instanceUsage, quotaFigures, readQuota, writeGrowth, writeQuota } from './sql-quota.ts';
import type { BucketUsage, StoredQuota } from './quota.ts';
import type { EventOrigin } from '../model/event-origin.ts';
import { checkRules, parseStoredNotification } from '../model/notification.ts';
import { notificationsOf } from '../model/notification-settings.ts';
import { creationEvent, NOTIFICATION, removalEvent, SqlOutbox } from './sql-outbox.ts';
import type { DestinationEvents, EventEntry } from './types.ts';
import type { ChangeFacts } from './event-record.ts';
import { deliverOutbox, type DeliveryOptions } from './event-delivery.ts';

/** State row of a bucket's key rotation progress (upkeep/rotate-keys.ts). */
const KEY_ROTATION = 'key-rotation';
/** State row of a bucket's drain progress (upkeep/drain-progress.ts). */
const DRAIN_PROGRESS = 'drain';
/** State row of a bucket's re-stripe progress (upkeep/restripe-progress.ts). */
const RESTRIPE_PROGRESS = 'restripe';
/** State row of an adopted bucket's backfill (worker/model/adopt-backfill.ts). */
const ADOPT_PROGRESS = 'adopt';
/** State row of the claim of an adopted bucket's backfill chain (adopt/backfill-chain.ts; catalog/move-chain-record.ts). */
const ADOPT_CHAIN = 'adopt-chain';
/** State row of a bucket's server access logging configuration (model/bucket-logging.ts); journaled. */
const LOGGING = 'logging';

/** Before the alarm pushes a settings copy again that did not reach every partition. */
const MIRROR_RETRY_MS = 1_000;
/** Root: a static split planned, not yet committed (JSON PartitionMap). */
const SPLIT_PLAN = 'partition-plan';
/** Root: since when each partition (by its low) has been small enough to merge (JSON Record<low, ms>; markSmallPartitions). */
const PARTITION_SMALL = 'partition-small';
/** Root: the next partition id (ids are never reused). */
const NEXT_PARTITION = 'partition-next-id';
/** Keys per page a split copies (each with all its rows)... */
const SPLIT_PAGE_KEYS = 200;
/** ... and bytes of rows per page (at least one key's, whatever its size: a key's rows move together), so memory stays bounded. */
const SPLIT_PAGE_BYTES = 4 * 1024 * 1024;
/** Catch-up pages before the fence goes up whatever the log's length (writes outrunning the copy wait at the fence). */
const SPLIT_CATCH_UP_ROUNDS = 50;
/** The alarm looks at a split this often, and resumes it when its driver is gone. */
const SPLIT_WATCHDOG_MS = 30_000;

/** The root's answer to a split's commit: the map, and the settings copy as the commit left it. */
interface Committed {
  map: PartitionMap;
  mirror: Mirror;
}

/** What the root commits of a merge: the range [low, high) of `from` joins the one of `into` (starting at intoLow) below it. */
interface MergeChange {
  intoLow: string;
  into: string;
  low: string;
  high: string | null;
  from: string;
}

/** A new partition as the root names it (allocatePartition). */
interface NewPartition {
  instance: string;
  region: string;
  created: number;
  mirror: Mirror;
}

type Grace = number; // milliseconds before superseded units may be deleted

export class CatalogObject extends DurableObject implements CatalogEntry {
  private schemaReady: boolean;
  /** The calls this object answers (a split for rate: upkeep/split-partitions.ts). */
  private readonly traffic = new RequestRate();

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    this.schemaReady = this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'buckets'").toArray().length > 0;
    if (this.schemaReady) {
      // Storage written by an older release is brought to this release's schema before any request.
      this.ctx.storage.transactionSync(() => migrate(this.sql));
      // Locally (npm start, tests: the env var worker/config/deployment.ts reads) the repair queue lives
      // in the process's memory, so a new instance may mean the units handed on went with the
      // last process: hand them on again now rather than after the resend time. Cloudflare's
      // Queues are durable; there the timeout alone covers a lost message.
      if ((env as { SHARDGATE_LOCAL_DEV?: string }).SHARDGATE_LOCAL_DEV === '1' && this.repairList().unsendAll() > 0) {
        void ctx.blockConcurrencyWhile(() => this.wakeRepairs(Date.now()));
      }
    }
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  /** The config's `repairs` timing (model/repair-timing.ts). */
  private repairTiming(): RepairTiming {
    return repairTimingOf(this.env as { SHARDGATE_CONFIG?: string });
  }

  /** The bucket's repair worklist, with the config's timing. */
  private repairList(): SqlRepairs {
    return new SqlRepairs(this.sql, this.repairTiming());
  }

  private ensureSchema(): void {
    if (!this.schemaReady) createSchema(this.sql);
    this.schemaReady = true;
  }

  private bucketRow(name: string): BucketRow | undefined {
    return this.schemaReady ? this.sql.exec<BucketRow>('SELECT * FROM buckets WHERE name = ?', name).toArray()[0] : undefined;
  }

  private atomic<T>(fn: () => T): Reply<T> {
    return reply(() => this.ctx.storage.transactionSync(fn));
  }

  /** Runs `fn` on this bucket's state in one transaction; NoSuchBucket unless the instance holds `bucket`. */
  private inBucket<T>(bucket: string, fn: (objects: SqlObjects, multipart: SqlMultipart) => T): Reply<T> {
    const r = this.atomic(() => {
      if (!this.bucketRow(bucket)) throw new S3Error('NoSuchBucket', undefined, { BucketName: bucket });
      const objects = new SqlObjects(this.sql, bucket);
      return fn(objects, new SqlMultipart(this.sql, objects));
    });
    const logging = this.loggingNote(bucket);
    return logging ? { ...r, logging } : r;
  }

  /** The bucket's access logging, for the reply's envelope (rpc.ts): one local read, no call. */
  private loggingNote(bucket: string): LoggingNote | undefined {
    if (!this.schemaReady) return undefined;
    const row = this.sql
      .exec<{ value: string; region: string }>(
        'SELECT s.value AS value, b.region AS region FROM state s JOIN buckets b ON b.name = ? WHERE s.name = ?',
        bucket,
        LOGGING,
      )
      .toArray()[0];
    const config = row ? parseStoredLogging(row.value) : null;
    return config ? { bucket, region: row!.region, config } : undefined;
  }

  // ---- The bucket list (instance '__buckets__') ----

  /** Every bucket the bucket list holds, in name order. */
  listBucketRecords(): S.BucketInfo[] {
    return this.schemaReady ? this.sql.exec<BucketRow>('SELECT * FROM buckets ORDER BY name').toArray().map(bucketInfo) : [];
  }

  registerBucket(name: string, region: string, created: number): Reply<void> {
    this.ensureSchema();
    return this.atomic(() => {
      if (this.bucketRow(name)) throw new S3Error('BucketAlreadyOwnedByYou', undefined, { BucketName: name });
      this.sql.exec('INSERT INTO buckets (name, region, created) VALUES (?, ?, ?)', name, region, created);
    });
  }

  getBucket(name: string): Reply<S.BucketInfo> {
    return reply(() => {
      const row = this.bucketRow(name);
      if (!row) throw new S3Error('NoSuchBucket', undefined, { BucketName: name });
      return bucketInfo(row);
    });
  }

  /** Removes `name` from the list and adopts the garbage its instance still held. */
  unregisterBucket(name: string, garbage: GarbageRow[]): void {
    this.ensureSchema();
    this.ctx.storage.transactionSync(() => {
      this.sql.exec('DELETE FROM buckets WHERE name = ?', name);
      for (const g of garbage) this.sql.exec('INSERT INTO garbage (not_before, entry) VALUES (?, ?)', g.not_before, g.entry);
    });
  }

  /** Garbage whose bucket instance is gone (or never existed). */
  queueOrphanGarbage(garbage: GarbageUnits, notBefore: number): void {
    this.ensureSchema();
    queueGarbage(this.sql, garbage, notBefore);
  }

  // ---- Partitions (docs/PARTITIONS.md; partition-map.ts, partition-mirror.ts) ----

  private owned: OwnedRange | null | undefined;

  /** This instance's range, or null when it owns its bucket whole (a bucket that never split). */
  private ownedRange(): OwnedRange | null {
    if (this.owned === undefined) {
      const row = this.stateRow(PARTITION_RANGE);
      this.owned = row === null ? null : (JSON.parse(row) as OwnedRange);
    }
    return this.owned;
  }

  private stateRow(name: string): string | null {
    return this.schemaReady ? readState(this.sql, name) : null;
  }

  private writeState(name: string, value: string | null): void {
    writeState(this.sql, name, value);
  }

  /** The settings copy a partition is given, as this root holds it now (partition-mirror.ts). */
  private currentMirror(): Mirror {
    return { generation: Number(this.stateRow(MIRROR_GENERATION) ?? 0), rows: mirrorRows((name) => this.stateRow(name)) };
  }

  /**
   * Moved when the caller routed by a map older than this instance's range, or by a key outside
   * it; a bucket being deleted (RETIRING) refuses its key-scoped calls meanwhile. Checked in the
   * same synchronous step that starts the operation, so a stale map costs a retry, never a wrong answer.
   */
  private movedFor(route: { key?: string; epoch: number }): Moved | Reply<never> | undefined {
    const owned = this.ownedRange();
    if (owned === null) return undefined;
    if (route.epoch < owned.epoch || (route.key !== undefined && !owns(owned, route.key))) return { moved: owned.epoch };
    if (this.stateRow(RETIRING) !== null) {
      return { error: { code: 'OperationAborted', message: 'The bucket is being deleted; try again.', fields: {} } };
    }
    return undefined;
  }

  /** The root's map when its bucket is split, else null. */
  private splitMap(): PartitionMap | null {
    const row = this.stateRow(PARTITION_MAP);
    return row === null ? null : parsePartitionMap(row);
  }

  /** The bucket's partition map (its root's): one partition unless it was split. */
  getPartitionMap(bucket: string): Reply<PartitionMap> {
    return this.inBucket(bucket, () => this.splitMap() ?? onePartition(bucketInstance(bucket)));
  }

  /**
   * A root-scoped operation of a split bucket's root: when it changed a mirrored setting, the new
   * copy goes to every partition before the operation answers (partition-mirror.ts).
   */
  private async mirrored(bucket: string, run: () => Promise<unknown>): Promise<unknown> {
    const before = mirrorRows((name) => this.stateRow(name));
    const answer = await run();
    if (this.splitMap() === null) return answer; // the bucket was deleted meanwhile
    const after = mirrorRows((name) => this.stateRow(name));
    if (!sameRows(before, after)) {
      const generation = Number(this.stateRow(MIRROR_GENERATION) ?? 0) + 1;
      this.ctx.storage.transactionSync(() => {
        this.writeState(MIRROR_GENERATION, String(generation));
        this.writeState(MIRROR_PENDING, String(generation));
      });
      await this.pushMirror(bucket);
    }
    return answer;
  }

  /** Sends the current copy to every partition; on failure the alarm tries again (and the caller sees the error). */
  private async pushMirror(bucket: string): Promise<void> {
    const map = this.splitMap();
    const pending = this.stateRow(MIRROR_PENDING);
    if (map === null || pending === null) return;
    const mirror = this.currentMirror();
    try {
      await Promise.all(map.ranges.slice(1).map((r) => this.peer(r.instance).dispatch('adoptMirror', [bucket, mirror])));
    } catch (err) {
      await this.ctx.storage.setAlarm(Date.now() + MIRROR_RETRY_MS);
      throw err;
    }
    this.ctx.storage.transactionSync(() => {
      if (this.stateRow(MIRROR_PENDING) === String(mirror.generation)) this.writeState(MIRROR_PENDING, null);
    });
  }

  private peer(instance: string): CatalogEntry {
    const ns = (this.env as { CATALOG: DurableObjectNamespace }).CATALOG;
    return ns.get(ns.idFromName(instance)) as unknown as CatalogEntry;
  }

  /** A partition takes the root's copy of the mirrored settings, unless it holds a newer one. */
  adoptMirror(bucket: string, mirror: Mirror): Reply<void> {
    return this.inBucket(bucket, () => this.takeMirror(mirror));
  }

  /**
   * Step 1 of a static split (an empty bucket that never split cut at `boundaries`, for tests and
   * operators until on-line splits land): the map it will commit, kept in a plan row so a retry
   * makes the same partitions, and what each partition is created with.
   */
  planStaticSplit(bucket: string, boundaries: string[]): Reply<{ map: PartitionMap; region: string; created: number; mirror: Mirror }> {
    return this.inBucket(bucket, (o) => {
      const row = this.bucketRow(bucket)!;
      const mirror = this.currentMirror();
      const planned = this.stateRow(SPLIT_PLAN);
      if (planned !== null) return { map: parsePartitionMap(planned), region: row.region, created: row.created, mirror };
      const done = this.splitMap();
      if (done !== null) {
        const same = done.ranges.length === boundaries.length + 1 && [...boundaries].sort(compareKeys).every((b, i) => done.ranges[i + 1]!.low === b);
        if (!same) throw new S3Error('InvalidRequest', `bucket ${bucket} is split already`);
        return { map: done, region: row.region, created: row.created, mirror }; // a retry of a split that was done
      }
      if (o.hasObjectsOrUploads()) throw new S3Error('BucketNotEmpty', 'Only an empty bucket is split statically.', { BucketName: bucket });
      const first = Number(this.stateRow(NEXT_PARTITION) ?? 1);
      let map: PartitionMap;
      try {
        // Named by the bucket's creation too: a bucket deleted and made again never meets a
        // partition of its predecessor, even one whose storage a crash left behind.
        map = splitAt(onePartition(bucketInstance(bucket)), boundaries, (i) => partitionInstance(bucket, `${row.created}.${first + i}`));
      } catch (err) {
        throw new S3Error('InvalidArgument', errorMessage(err));
      }
      this.writeState(NEXT_PARTITION, String(first + boundaries.length));
      this.writeState(SPLIT_PLAN, JSON.stringify(map));
      return { map, region: row.region, created: row.created, mirror };
    });
  }

  /** Step 2: a partition's instance made, owning `range`, with the root's settings copy. Idempotent. */
  initPartition(bucket: string, region: string, created: number, range: OwnedRange, mirror: Mirror): void {
    this.ensureSchema();
    this.ctx.storage.transactionSync(() => {
      this.sql.exec('INSERT OR IGNORE INTO buckets (name, region, created) VALUES (?, ?, ?)', bucket, region, created);
      this.writeState(PARTITION_RANGE, JSON.stringify(range));
      for (const [name, value] of Object.entries(mirror.rows)) this.writeState(name, value);
      this.writeState(MIRROR_GENERATION, String(mirror.generation));
    });
    this.owned = range;
  }

  /** Step 3: the root commits the planned map, if its bucket is still empty; settings changed meanwhile are pushed. */
  async commitStaticSplit(bucket: string): Promise<Reply<PartitionMap>> {
    const r = this.inBucket(bucket, (o) => {
      const planned = this.stateRow(SPLIT_PLAN);
      const done = this.splitMap();
      if (planned === null && done !== null) return done;
      if (planned === null) throw new S3Error('InvalidRequest', `no split of ${bucket} is planned`);
      this.writeState(SPLIT_PLAN, null);
      if (o.hasObjectsOrUploads())
        throw new S3Error('BucketNotEmpty', 'The bucket took writes while it was being split; nothing was split.', { BucketName: bucket });
      const map = parsePartitionMap(planned);
      this.writeState(PARTITION_MAP, planned);
      this.writeState(PARTITION_RANGE, JSON.stringify(ownedRange(map, 0)));
      this.writeState(MIRROR_GENERATION, String(Number(this.stateRow(MIRROR_GENERATION) ?? 0) + 1));
      this.writeState(MIRROR_PENDING, this.stateRow(MIRROR_GENERATION));
      this.owned = ownedRange(map, 0);
      return map;
    });
    if (!r.error) await this.pushMirror(bucket);
    return r;
  }

  /** Marks (true) or unmarks the bucket as being deleted; pushed to every partition before it answers. */
  setRetiring(bucket: string, on: boolean): Reply<void> {
    return this.inBucket(bucket, () => this.writeState(RETIRING, on ? String(Date.now()) : null));
  }

  /** Whether this instance holds any version or upload (a split bucket's deletion asks each). */
  holdsObjects(bucket: string): Reply<boolean> {
    return this.inBucket(bucket, (o) => {
      this.assertEventsDelivered(bucket);
      return o.hasObjectsOrUploads();
    });
  }

  /**
   * A bucket is not deleted while events of its changes wait for delivery (its outbox goes with
   * it): OperationAborted until they are delivered or dead-lettered (docs/NOTIFICATIONS.md).
   */
  private assertEventsDelivered(bucket: string): void {
    const waiting = this.outbox().backlog();
    if (waiting > 0)
      throw new S3Error(
        'OperationAborted',
        `${waiting} event(s) of this bucket are waiting for delivery to their destinations; delete it once they are delivered (shardgate events ${bucket}).`,
        { BucketName: bucket },
      );
  }

  // ---- Partitions: on-line split (sql-split.ts; docs/PARTITIONS.md "Splits on line") ----

  /** The split this instance drives (one at a time); a second caller waits for it. */
  private splitRun: Promise<Reply<PartitionMap | null>> | null = null;
  /** While a split (or merge) commits: key calls of the range moving wait here (milliseconds), then find the new owner. */
  private fence: { at: string; high: string | null; done: Promise<void>; open: () => void } | null = null;

  /** Raises the fence over [at, high) unless it is up (a call that found a move committing raised it: the driver lowers it). */
  private raiseFence(at: string, high: string | null): void {
    if (this.fence !== null) return;
    let open!: () => void;
    const done = new Promise<void>((r) => (open = r));
    this.fence = { at, high, done, open };
  }

  private lowerFence(): void {
    const fence = this.fence;
    this.fence = null;
    fence?.open();
  }

  /** The stored split state, cached (undefined: not read since this instance started). */
  private split: SplitState | null | undefined;

  private splitState(): SplitState | null {
    if (this.split === undefined) this.split = this.schemaReady ? readSplit(this.sql) : null;
    return this.split;
  }

  /** Stores the split state (inside a transaction) and keeps the cache; the cache is reread if the transaction fails. */
  private saveSplit(state: SplitState | null): void {
    this.split = undefined;
    writeSplit(this.sql, state);
  }

  /**
   * Splits the partition holding `key` at `at` (absent: its median key) while it goes on
   * answering: Q is made and filled in pages, the keys changed meanwhile are copied again, upper-half
   * calls wait for milliseconds while the last changes go over and the root commits the new map,
   * then this partition drops the upper half. Resumable from any point (the state is stored, and
   * the alarm resumes a split whose driver died); before the commit phase a failure leaves this
   * partition authoritative, after it the split only goes forward. `stopAfter` ('page', 'fence',
   * 'commit') abandons the driver at that point as a crash would (tests); the answer is then null.
   */
  async splitPartition(bucket: string, _key: string, at?: string, stopAfter?: SplitStop): Promise<Reply<PartitionMap | null>> {
    if (this.splitRun) return await this.splitRun;
    this.splitRun = this.driveSplit(bucket, at, stopAfter).finally(() => {
      this.splitRun = null;
      this.lowerFence(); // raised by a call that found the split committing, when the driver failed before its commit
    });
    return await this.splitRun;
  }

  private driveSplit(bucket: string, at: string | undefined, stopAfter: SplitStop | undefined): Promise<Reply<PartitionMap | null>> {
    return replyAsync(async () => {
      let state = this.splitState();
      if (state !== null && at !== undefined && state.at !== at)
        throw new S3Error('OperationAborted', `partition is already splitting at ${JSON.stringify(state.at)}`);
      state ??= await this.beginSplit(bucket, at);
      await this.wakeAt(Date.now() + SPLIT_WATCHDOG_MS);
      if (state.phase === 'copying') {
        const copying = state;
        const copied = await this.copyRange(
          { low: state.at, high: state.high, copied: state.copied },
          (batch) => this.sendRows(copying, batch),
          (key) => this.saveSplit((state = { ...state!, copied: key })),
          stopAfter === 'page',
        );
        if (!copied) return null;
        state = { ...state, phase: 'committing' };
        const saved = state;
        this.ctx.storage.transactionSync(() => this.saveSplit(saved));
      }
      return await this.commitSplit(state, stopAfter);
    });
  }

  /** Q's name from the root, Q made with this range's upper half and the settings copy, the change log started. */
  private async beginSplit(bucket: string, at: string | undefined): Promise<SplitState> {
    const owned = this.ownedRange() ?? { low: '', high: null, epoch: 0 };
    const chosen = unwrap(
      this.inBucket(bucket, () => {
        const key = at ?? medianKey(this.sql, owned.low, owned.high);
        if (key === null) throw new S3Error('InvalidRequest', 'The partition holds fewer than two keys: nothing to split.');
        if (key === owned.low || !owns(owned, key))
          throw new S3Error('InvalidArgument', `A split key must fall inside the partition, above its first key: ${JSON.stringify(key)}`);
        if (unkeyedReservations(this.sql) > 0) {
          throw new S3Error('SlowDown', 'Writes of an earlier release are in flight in this partition; the split can start once they end (minutes).');
        }
        if (this.mergeState() !== null) throw new S3Error('OperationAborted', 'The partition is merging into its neighbour.');
        const incoming = this.mergeInState();
        if (incoming?.phase === 'committing') throw new S3Error('SlowDown', 'A neighbour is merging into this partition; the split can start once it is done.');
        // A merge still copying gives up when it next reaches this partition (receiveMergeRows refuses it).
        if (incoming !== null) this.dropIncoming();
        return key;
      }),
    );
    const root = owned.low === '' ? null : this.peer(bucketInstance(bucket)); // the root keeps the lowest range
    const made = unwrap(root ? ((await root.dispatch('allocatePartition', [bucket])) as Reply<NewPartition>) : this.allocatePartition(bucket));
    await this.peer(made.instance).dispatch('initPartition', [
      bucket,
      made.region,
      made.created,
      { low: chosen, high: owned.high, epoch: owned.epoch },
      made.mirror,
    ]);
    const state: SplitState = { bucket, at: chosen, low: owned.low, high: owned.high, to: made.instance, copied: null, phase: 'copying', started: Date.now() };
    this.ctx.storage.transactionSync(() => {
      if (readSplit(this.sql) !== null) throw new Error('catalog: two splits of one partition'); // splitRun keeps one driver
      if (readMerge(this.sql) !== null || readMergeIn(this.sql) !== null) throw new S3Error('OperationAborted', 'The partition began a merge meanwhile.');
      startChangeLog(this.sql, chosen);
      this.saveSplit(state);
    });
    return state;
  }

  private async sendRows(state: SplitState, batch: KeyRows[]): Promise<void> {
    unwrap((await this.peer(state.to).dispatch('receiveSplitRows', [state.bucket, batch])) as Reply<void>);
  }

  /**
   * The copy of a split or a merge: pages of every key in [low, high) after `copied`, each key with
   * all its rows, go by `send`, each page's last key stored by `save` (in a transaction: a crash
   * resumes after it); then pages of the change log until it is short (the rest goes over behind
   * the fence). False when stopped after the first page (`stopAfterPage`: a test's crash point).
   */
  private async copyRange(
    range: { low: string; high: string | null; copied: string | null },
    send: (batch: KeyRows[]) => Promise<void>,
    save: (copied: string) => void,
    stopAfterPage: boolean,
  ): Promise<boolean> {
    for (let after = range.copied; ; ) {
      const keys = keysAfter(this.sql, range.low, range.high, after, SPLIT_PAGE_KEYS);
      if (!keys.length) break;
      const rows = rowsOfKeys(this.sql, keys, SPLIT_PAGE_BYTES);
      await send(rows);
      const last = rows.at(-1)!.key;
      this.ctx.storage.transactionSync(() => save(last));
      if (stopAfterPage) return false;
      after = last;
    }
    for (let round = 0; round < SPLIT_CATCH_UP_ROUNDS && pendingChanges(this.sql) > SPLIT_PAGE_KEYS; round++) await this.sendChanges(send);
    return true;
  }

  /** One page of the change log copied again (by `send`); its entries cleared unless changed again meanwhile. */
  private async sendChanges(send: (batch: KeyRows[]) => Promise<void>): Promise<number> {
    const changes = peekChanges(this.sql, SPLIT_PAGE_KEYS);
    if (!changes.length) return 0;
    const rows = rowsOfKeys(
      this.sql,
      changes.map((c) => c.key),
      SPLIT_PAGE_BYTES,
    );
    await send(rows);
    const sent = changes.slice(0, rows.length);
    this.ctx.storage.transactionSync(() => ackChanges(this.sql, sent));
    return sent.length;
  }

  /** The fence, the last changes, the root's commit, then the upper half dropped (in the commit's step when this is the root). */
  private async commitSplit(state: SplitState, stopAfter: SplitStop | undefined): Promise<PartitionMap | null> {
    this.raiseFence(state.at, state.high);
    try {
      while ((await this.sendChanges((batch) => this.sendRows(state, batch))) > 0);
      if (stopAfter === 'fence') return null;
      // The quota's figures (quota.ts) on both sides of the split key, so the root can cut this partition's share in two.
      const moved = unwrap((await this.peer(state.to).dispatch('bucketUsage', [state.bucket])) as Reply<BucketUsage>);
      const change: SplitChange = {
        low: state.low,
        at: state.at,
        high: state.high,
        to: state.to,
        quota: { used: quotaFigures(this.sql), moved: { bytes: moved.bytes + moved.multipartBytes, objects: moved.objects } },
      };
      let map: PartitionMap;
      if (state.low === '') {
        map = (await this.commitSplitAtRoot(state.bucket, change, (m) => this.narrow(state, m))).map;
      } else {
        const done = unwrap((await this.peer(bucketInstance(state.bucket)).dispatch('commitPartitionSplit', [state.bucket, change])) as Reply<Committed>);
        if (stopAfter === 'commit') return null;
        map = done.map;
        this.ctx.storage.transactionSync(() => {
          this.narrow(state, map);
          // This partition's smaller share of the quota (and any setting changed since its copy) from the root's answer.
          this.takeMirror(done.mirror);
        });
      }
      await this.peer(state.to)
        .dispatch('splitCommitted', [state.bucket])
        .catch(() => undefined);
      return map;
    } finally {
      this.lowerFence();
    }
  }

  /** This partition owns the lower half at the new map's epoch; the upper half's rows go (synchronous, in a transaction). */
  private narrow(state: SplitState, map: PartitionMap): void {
    const i = map.ranges.findIndex((r) => r.low === state.low);
    const range = ownedRange(map, i);
    // Changes logged since the last page went over were made behind the fence by calls no map
    // routes (the alarm handing repairs on: hints, found again); a routed call waited at the fence.
    this.writeState(PARTITION_RANGE, JSON.stringify(range));
    // The log first: dropping the range under it would log every deleted key (and each entry
    // scanned the log for its sequence number: a split moving 100,000 keys took minutes).
    stopChangeLog(this.sql);
    dropRange(this.sql, new SqlLedger(this.sql), state.at, state.high);
    this.saveSplit(null);
    this.owned = range;
  }

  /**
   * Root: the map gains Q's range at the next epoch, once Q holds the settings copy as the root
   * holds it now (a setting changed while the copy travelled sends it again). `then` runs in the
   * same transaction (the root splitting itself narrows there). Idempotent: a split committed
   * already answers the map.
   */
  private async commitSplitAtRoot(bucket: string, change: SplitChange, then?: (map: PartitionMap) => void): Promise<Committed> {
    // The new partition's range at the epoch the map will have (or a later one's): what it numbers
    // its events by (sql-outbox.ts), so a key's sequencers go on rising across the split.
    // (Not on a retry of a commit that was made: the map's epoch is the new partition's own then.)
    const before = this.splitMap();
    if (!before?.ranges.some((r) => r.instance === change.to)) {
      unwrap((await this.peer(change.to).dispatch('raisePartitionEpoch', [bucket, (before?.epoch ?? 0) + 1])) as Reply<void>);
    }
    for (let attempt = 0; attempt < 5; attempt++) {
      const generation = Number(this.stateRow(MIRROR_GENERATION) ?? 0) + 1;
      this.ctx.storage.transactionSync(() => {
        this.writeState(MIRROR_GENERATION, String(generation));
        if (change.quota) this.cutQuotaShare(change, change.quota);
      });
      const mirror = this.currentMirror();
      unwrap((await this.peer(change.to).dispatch('adoptMirror', [bucket, mirror])) as Reply<void>);
      const map = unwrap(
        this.inBucket(bucket, () => {
          if (!sameRows(mirror.rows, this.currentMirror().rows)) return null; // changed meanwhile: again
          if (this.stateRow(RETIRING) !== null) throw new S3Error('OperationAborted', 'The bucket is being deleted.');
          const now = this.splitMap() ?? onePartition(bucketInstance(bucket));
          if (now.ranges.some((r) => r.instance === change.to)) return now; // a retry of a commit that was made
          const i = now.ranges.findIndex((r) => r.low === change.low);
          const next = now.ranges[i + 1]?.low ?? null;
          if (i < 0 || next !== change.high) throw new S3Error('OperationAborted', 'The partition changed while it was being split.');
          const out: PartitionMap = {
            epoch: now.epoch + 1,
            ranges: [...now.ranges.slice(0, i + 1), { low: change.at, instance: change.to }, ...now.ranges.slice(i + 1)],
          };
          this.writeState(PARTITION_MAP, JSON.stringify(out));
          then?.(out);
          return out;
        }),
      );
      if (map !== null) return { map, mirror };
    }
    throw new S3Error('SlowDown', 'The bucket settings changed on every try of a split; try again.');
  }

  /**
   * Root: the splitting partition's share of the quota (quota.ts) cut in two: the new partition
   * gets what moved to it and half the headroom left, the splitting one the rest, so the shares
   * still add up to the quota. A bucket that never split has no shares yet: the quota is the
   * root's share. Done once per split (a retried commit finds the new share there).
   */
  private cutQuotaShare(change: SplitChange, figures: NonNullable<SplitChange['quota']>): void {
    const q = readQuota(this.sql);
    if (q === null || q.shares?.[change.at]) return;
    const base = q.shares ? q.shares[change.low] : { bytes: q.bytes, objects: q.objects };
    if (!base) return; // a share not cut yet (quota-set.ts): the new partition waits for the next cut, as the splitting one does
    const cut = (limit: number | null, used: number, moved: number): [number | null, number | null] => {
      if (limit === null) return [null, null];
      const upper = moved + Math.floor(Math.max(0, limit - used) / 2);
      return [limit - upper, upper];
    };
    const [pb, qb] = cut(base.bytes, figures.used.bytes, figures.moved.bytes);
    const [po, qo] = cut(base.objects, figures.used.objects, figures.moved.objects);
    writeQuota(this.sql, { ...q, shares: { ...(q.shares ?? {}), [change.low]: { bytes: pb, objects: po }, [change.at]: { bytes: qb, objects: qo } } });
  }

  /** A settings copy from the root taken inside the caller's transaction, unless this instance holds a newer one. */
  private takeMirror(mirror: Mirror): void {
    if (Number(this.stateRow(MIRROR_GENERATION) ?? 0) >= mirror.generation) return;
    for (const [name, value] of Object.entries(mirror.rows)) this.writeState(name, value);
    this.writeState(MIRROR_GENERATION, String(mirror.generation));
  }

  /** Root: the commit of a split driven by another partition. */
  commitPartitionSplit(bucket: string, change: SplitChange): Promise<Reply<Committed>> {
    return replyAsync(() => this.commitSplitAtRoot(bucket, change));
  }

  /** Root: a new partition's name (ids never reused), with what it is created with. */
  allocatePartition(bucket: string): Reply<NewPartition> {
    return this.inBucket(bucket, () => {
      const row = this.bucketRow(bucket)!;
      const id = Number(this.stateRow(NEXT_PARTITION) ?? 1);
      this.writeState(NEXT_PARTITION, String(id + 1));
      return { instance: partitionInstance(bucket, `${row.created}.${id}`), region: row.region, created: row.created, mirror: this.currentMirror() };
    });
  }

  /** Q, before the root commits it: its range at the epoch the map is about to have (no map routes to it yet). */
  raisePartitionEpoch(bucket: string, epoch: number): Reply<void> {
    return this.inBucket(bucket, () => {
      const range = this.ownedRange();
      if (range === null || range.epoch >= epoch) return;
      const raised = { ...range, epoch };
      this.writeState(PARTITION_RANGE, JSON.stringify(raised));
      this.owned = raised;
    });
  }

  /** Q: rows of keys copied from the splitting partition replace what it has of them. */
  receiveSplitRows(bucket: string, batch: KeyRows[]): Reply<void> {
    return this.inBucket(bucket, () => replaceKeys(this.sql, new SqlLedger(this.sql), batch));
  }

  /** Q: the map names it now; its repair worklist (copied with the rows) wakes. */
  async splitCommitted(bucket: string): Promise<Reply<void>> {
    const r = this.inBucket(bucket, () => undefined);
    if (!r.error) await this.wakeRepairs(this.repairList().nextWake(Date.now()));
    return r;
  }

  /**
   * Before a routed call runs: when it falls in the range a split or merge is committing away from
   * here (a walk or a sum: whatever its start), it waits for the commit (a move left committing by
   * a crash is driven on first, the fence raised before anything else runs), then is checked
   * against the range as it is then. In the partition a merge commits into, a call of the range
   * arriving, or routed by a newer map (a walk or sum that may span it), waits until the rows are
   * applied, once the root committed.
   */
  private fenceFor(key: string | undefined, epoch: number): Promise<void> | null {
    // A walk or a sum (no key) reads the range moving too: it waits as well, or a listing by an old map could miss a write its new owner took.
    const inRange = (low: string, high: string | null) => key === undefined || (compareKeys(key, low) >= 0 && (high === null || compareKeys(key, high) < 0));
    if (this.fence === null && this.splitRun === null && this.mergeRun === null) {
      const split = this.splitState();
      const merge = this.mergeState();
      if (split?.phase === 'committing' && inRange(split.at, split.high)) {
        this.raiseFence(split.at, split.high);
        void this.splitPartition(split.bucket, split.at, split.at).catch(() => undefined);
      } else if (merge?.phase === 'committing') {
        this.raiseFence(merge.low, merge.high);
        void this.mergePartition(merge.bucket, merge.low).catch(() => undefined);
      }
    }
    const fence = this.fence;
    if (fence !== null && inRange(fence.at, fence.high)) return fence.done;
    const incoming = this.mergeInState();
    if (incoming?.phase === 'committing') {
      const owned = this.ownedRange();
      if ((key !== undefined && inRange(incoming.low, incoming.high)) || (owned !== null && epoch > owned.epoch)) return this.finishIncoming(incoming.bucket);
    }
    return null;
  }

  // ---- Partitions: merges (sql-merge.ts; docs/PARTITIONS.md "Merges") ----

  /** The merge this instance drives as the partition going away (Q), one at a time. */
  private mergeRun: Promise<Reply<PartitionMap | null>> | null = null;
  /** As the partition merged into (P): the apply of a committed merge a call found due. */
  private incomingRun: Promise<void> | null = null;
  /** The stored merge states, cached (undefined: not read since this instance started or last wrote them). */
  private merge: MergeState | null | undefined;
  private incoming: MergeInState | null | undefined;

  private mergeState(): MergeState | null {
    if (this.merge === undefined) this.merge = this.schemaReady ? readMerge(this.sql) : null;
    return this.merge;
  }

  private saveMerge(state: MergeState | null): void {
    this.merge = undefined;
    writeMerge(this.sql, state);
  }

  private mergeInState(): MergeInState | null {
    if (this.incoming === undefined) this.incoming = this.schemaReady ? readMergeIn(this.sql) : null;
    return this.incoming;
  }

  /** Drops what a merge into this partition staged (inside a transaction): the merge gives up when it next reaches here. */
  private dropIncoming(): void {
    this.incoming = undefined;
    dropStaging(this.sql);
  }

  /**
   * Merges the partition holding `key` (Q) into its lower neighbour P while both go on answering:
   * Q's keys are copied to P's staging in pages, the keys changed meanwhile again, then Q's calls
   * wait for milliseconds while the last changes and Q's garbage go over, the root commits the
   * map without Q, P applies what was staged and widens its range in one transaction, and Q is
   * left owning nothing (its journal goes on, empty; partition-map.ts `retired`). Resumable like a
   * split: before the commit phase a failure leaves Q authoritative (and a merge that cannot go on
   * is given up: events of Q waiting for delivery), after it the merge only goes forward.
   * `stopAfter` as for splitPartition.
   */
  async mergePartition(bucket: string, _key: string, stopAfter?: SplitStop): Promise<Reply<PartitionMap | null>> {
    if (this.mergeRun) return await this.mergeRun;
    this.mergeRun = this.driveMerge(bucket, stopAfter).finally(() => {
      this.mergeRun = null;
      this.lowerFence();
    });
    return await this.mergeRun;
  }

  private driveMerge(bucket: string, stopAfter: SplitStop | undefined): Promise<Reply<PartitionMap | null>> {
    return replyAsync(async () => {
      let state = this.mergeState() ?? (await this.beginMerge(bucket));
      await this.wakeAt(Date.now() + SPLIT_WATCHDOG_MS);
      if (state.phase === 'copying') {
        const copying = state;
        const copied = await this.copyRange(
          state,
          (batch) => this.sendMergeRows(copying, batch),
          (key) => this.saveMerge((state = { ...state, copied: key })),
          stopAfter === 'page',
        );
        if (!copied) return null;
      }
      return await this.commitMerge(state, stopAfter);
    });
  }

  /** P found in the root's map below this range, its staging started, the change log started here. */
  private async beginMerge(bucket: string): Promise<MergeState> {
    const owned = unwrap(
      this.inBucket(bucket, () => {
        const range = this.ownedRange();
        if (range === null || range.low === '') throw new S3Error('InvalidRequest', "The bucket's first partition has no lower neighbour to merge into.");
        if (this.splitState() !== null) throw new S3Error('OperationAborted', 'The partition is splitting.');
        if (this.mergeInState() !== null) throw new S3Error('OperationAborted', 'A neighbour is merging into this partition.');
        if (unkeyedReservations(this.sql) > 0) {
          throw new S3Error('SlowDown', 'Writes of an earlier release are in flight in this partition; the merge can start once they end (minutes).');
        }
        return range;
      }),
    );
    const map = unwrap((await this.peer(bucketInstance(bucket)).dispatch('getPartitionMap', [bucket])) as Reply<PartitionMap>);
    const i = map.ranges.findIndex((r) => r.low === owned.low);
    if (i < 1 || (map.ranges[i + 1]?.low ?? null) !== owned.high) throw new S3Error('OperationAborted', 'The partitions changed; try the merge again.');
    const [into, self] = [map.ranges[i - 1]!, map.ranges[i]!];
    const state: MergeState = {
      bucket,
      into: into.instance,
      intoLow: into.low,
      self: self.instance,
      low: owned.low,
      high: owned.high,
      copied: null,
      phase: 'copying',
      started: Date.now(),
    };
    const incoming: MergeInState = { bucket, from: self.instance, low: owned.low, high: owned.high, phase: 'staging' };
    unwrap((await this.peer(into.instance).dispatch('beginMergeIn', [bucket, incoming])) as Reply<void>);
    try {
      this.ctx.storage.transactionSync(() => {
        if (readMerge(this.sql) !== null || readSplit(this.sql) !== null) throw new S3Error('OperationAborted', 'The partition began a split meanwhile.');
        startChangeLog(this.sql, owned.low);
        this.saveMerge(state);
      });
    } catch (err) {
      await this.peer(into.instance)
        .dispatch('abortMergeIn', [bucket, self.instance])
        .catch(() => undefined);
      throw err;
    }
    return state;
  }

  private async sendMergeRows(state: MergeState, batch: KeyRows[]): Promise<void> {
    await this.toMergeTarget(state, 'receiveMergeRows', [state.bucket, state.self, batch]);
  }

  /** A call to P during the copy; P refusing it (it gave the merge up: a split of its own) gives the merge up here too. */
  private async toMergeTarget(state: MergeState, name: string, args: unknown[]): Promise<void> {
    const r = (await this.peer(state.into).dispatch(name, args)) as Reply<void>;
    if (r.error?.code === 'OperationAborted' && state.phase === 'copying') await this.giveUpMerge(state);
    unwrap(r);
  }

  /** Before the commit phase only: this partition stays as it was, P drops what it staged. */
  private async giveUpMerge(state: MergeState): Promise<void> {
    this.ctx.storage.transactionSync(() => {
      stopChangeLog(this.sql);
      this.saveMerge(null);
    });
    await this.peer(state.into)
      .dispatch('abortMergeIn', [state.bucket, state.self])
      .catch(() => undefined);
  }

  /** The fence, the last changes and the garbage, P told to expect the commit, the root's commit, P's apply, this partition emptied. */
  private async commitMerge(state: MergeState, stopAfter: SplitStop | undefined): Promise<PartitionMap | null> {
    this.raiseFence(state.low, state.high);
    try {
      if (state.phase === 'copying') {
        while ((await this.sendChanges((batch) => this.sendMergeRows(state, batch))) > 0);
        // Events waiting for delivery are this partition's, in its order: the merge waits until they are delivered.
        const waiting = this.outbox().backlog();
        if (waiting > 0) {
          await this.giveUpMerge(state);
          throw new S3Error('SlowDown', `${waiting} event(s) of the partition wait for delivery; the merge can be tried again once they are delivered.`);
        }
        for (let after = 0; ; ) {
          const page: GarbageRowOut[] = garbageAfter(this.sql, after, 500);
          if (!page.length) break;
          await this.toMergeTarget(state, 'receiveMergeGarbage', [state.bucket, state.self, page]);
          after = page.at(-1)!.id;
        }
        await this.toMergeTarget(state, 'mergeCommitting', [state.bucket, state.self]);
        state = { ...state, phase: 'committing' };
        const saved = state;
        this.ctx.storage.transactionSync(() => this.saveMerge(saved));
      }
      if (stopAfter === 'fence') return null;
      const change = { intoLow: state.intoLow, into: state.into, low: state.low, high: state.high, from: state.self };
      const map = unwrap((await this.peer(bucketInstance(state.bucket)).dispatch('commitPartitionMerge', [state.bucket, change])) as Reply<PartitionMap>);
      if (stopAfter === 'commit') return null;
      if (state.intoLow !== '') unwrap((await this.peer(state.into).dispatch('applyMerge', [state.bucket, state.self, map])) as Reply<void>);
      this.ctx.storage.transactionSync(() => this.retireMerged(state, map));
      return map;
    } finally {
      this.lowerFence();
    }
  }

  /** Q after the commit: every row of its range dropped (journaled: its journal goes on, empty), owning nothing at the map's epoch. */
  private retireMerged(state: MergeState, map: PartitionMap): void {
    stopChangeLog(this.sql);
    dropRange(this.sql, new SqlLedger(this.sql), state.low, state.high);
    this.sql.exec('DELETE FROM garbage'); // applied in P
    this.sql.exec('DELETE FROM reservations'); // keyed ones went with their keys; none without (beginMerge)
    const range: OwnedRange = { low: state.low, high: state.low, epoch: map.epoch };
    this.writeState(PARTITION_RANGE, JSON.stringify(range));
    this.saveMerge(null);
    this.owned = range;
  }

  /** P: staging for a merge from `incoming.from` (a merge of another neighbour committing refuses it). */
  beginMergeIn(bucket: string, incoming: MergeInState): Reply<void> {
    return this.inBucket(bucket, () => {
      const now = this.mergeInState();
      if (now?.phase === 'committing') throw new S3Error('OperationAborted', 'Another merge into this partition is committing.');
      if (this.splitState() !== null || this.mergeState() !== null) throw new S3Error('OperationAborted', 'The partition is splitting or merging.');
      if ((this.ownedRange()?.high ?? null) !== incoming.low) throw new S3Error('OperationAborted', 'The partitions are not neighbours (the map changed).');
      this.incoming = undefined;
      startStaging(this.sql, incoming);
    });
  }

  /** P: the staging of `from`'s merge, or OperationAborted (it was given up here). */
  private stagingOf(from: string): MergeInState {
    const incoming = this.mergeInState();
    if (incoming === null || incoming.from !== from) throw new S3Error('OperationAborted', 'The merge was given up by the partition it goes into.');
    return incoming;
  }

  receiveMergeRows(bucket: string, from: string, batch: KeyRows[]): Reply<void> {
    return this.inBucket(bucket, () => {
      this.stagingOf(from);
      stageKeys(this.sql, batch);
    });
  }

  receiveMergeGarbage(bucket: string, from: string, rows: GarbageRowOut[]): Reply<void> {
    return this.inBucket(bucket, () => {
      this.stagingOf(from);
      stageGarbage(this.sql, rows);
    });
  }

  /** P: every row of `from` is staged; from here this partition neither splits nor gives the merge up. */
  mergeCommitting(bucket: string, from: string): Reply<void> {
    return this.inBucket(bucket, () => {
      const incoming = this.stagingOf(from);
      this.incoming = undefined;
      writeMergeIn(this.sql, { ...incoming, phase: 'committing' });
    });
  }

  /** P: the merge from `from` was given up before its commit. */
  abortMergeIn(bucket: string, from: string): Reply<void> {
    return this.inBucket(bucket, () => {
      if (this.mergeInState()?.from === from) this.dropIncoming();
    });
  }

  /** P: the root committed `map` without `from`: its staged rows applied, this range widened. Idempotent. */
  async applyMerge(bucket: string, from: string, map: PartitionMap): Promise<Reply<void>> {
    const r = this.inBucket(bucket, () => {
      const incoming = this.mergeInState();
      if (incoming !== null && incoming.from !== from) throw new S3Error('OperationAborted', 'Another merge is staged here.');
      this.applyIncoming(map);
    });
    // The repair worklist rows that came with the keys wake here now.
    if (!r.error) await this.wakeRepairs(this.repairList().nextWake(Date.now()));
    return r;
  }

  /** Inside a transaction: the staged rows into this partition's tables and its range widened to `map`'s (nothing when applied already). */
  private applyIncoming(map: PartitionMap): void {
    const incoming = this.mergeInState();
    const owned = this.ownedRange();
    if (incoming === null || owned === null) return;
    const i = map.ranges.findIndex((r) => r.low === owned.low);
    const range = ownedRange(map, i);
    if (i < 0 || range.high !== incoming.high) throw new Error('catalog: a merge was committed for another range');
    applyStaged(this.sql, new SqlLedger(this.sql));
    this.incoming = undefined;
    this.writeState(PARTITION_RANGE, JSON.stringify(range));
    this.owned = range;
  }

  /** P: a call found the merge due here: applied once the root's map no longer names the partition that merges. */
  private finishIncoming(bucket: string): Promise<void> {
    this.incomingRun ??= (async () => {
      const map =
        this.ownedRange()?.low === ''
          ? this.splitMap()!
          : unwrap((await this.peer(bucketInstance(bucket)).dispatch('getPartitionMap', [bucket])) as Reply<PartitionMap>);
      const incoming = this.mergeInState();
      if (incoming === null || map.ranges.some((r) => r.instance === incoming.from)) return; // applied already, or not committed yet
      this.ctx.storage.transactionSync(() => this.applyIncoming(map));
      await this.wakeRepairs(this.repairList().nextWake(Date.now()));
    })().finally(() => {
      this.incomingRun = null;
    });
    return this.incomingRun;
  }

  /**
   * Root: the map without the merged partition (`from`), at the next epoch; the two quota shares
   * joined; when the root is the partition merged into, the staged rows applied in the same
   * transaction. Idempotent: a merge committed already answers the map.
   */
  async commitPartitionMerge(bucket: string, change: MergeChange): Promise<Reply<PartitionMap>> {
    const r = this.inBucket(bucket, () => {
      const now = this.splitMap();
      if (now === null) throw new S3Error('InvalidRequest', `bucket ${bucket} is not split`);
      if (!now.ranges.some((x) => x.instance === change.from)) return now; // a retry of a commit that was made
      if (this.stateRow(RETIRING) !== null) throw new S3Error('OperationAborted', 'The bucket is being deleted.');
      const i = now.ranges.findIndex((x) => x.instance === change.into);
      const q = now.ranges[i + 1];
      if (
        i < 0 ||
        now.ranges[i]!.low !== change.intoLow ||
        q?.instance !== change.from ||
        q.low !== change.low ||
        (now.ranges[i + 2]?.low ?? null) !== change.high
      )
        throw new S3Error('OperationAborted', 'The partitions changed while they were being merged.');
      const out: PartitionMap = { epoch: now.epoch + 1, ranges: now.ranges.filter((_, j) => j !== i + 1), retired: [...(now.retired ?? []), change.from] };
      this.writeState(PARTITION_MAP, JSON.stringify(out));
      this.joinQuotaShares(change);
      const small = this.stateRow(PARTITION_SMALL);
      if (small !== null) {
        const since = JSON.parse(small) as Record<string, number>;
        delete since[change.low];
        this.writeState(PARTITION_SMALL, JSON.stringify(since));
      }
      this.writeState(MIRROR_GENERATION, String(Number(this.stateRow(MIRROR_GENERATION) ?? 0) + 1));
      this.writeState(MIRROR_PENDING, this.stateRow(MIRROR_GENERATION));
      if (change.intoLow === '') this.applyIncoming(out);
      return out;
    });
    // The joined share reaches P (and every setting every partition) now; on failure the alarm pushes again.
    if (!r.error) await this.pushMirror(bucket).catch(() => undefined);
    if (!r.error && change.intoLow === '') await this.wakeRepairs(this.repairList().nextWake(Date.now()));
    return r;
  }

  /** Root: the merged partition's quota share added to its neighbour's (a limit of neither stays none). */
  private joinQuotaShares(change: MergeChange): void {
    const q = readQuota(this.sql);
    const [p, gone] = [q?.shares?.[change.intoLow], q?.shares?.[change.low]];
    if (!q?.shares || !p || !gone) return;
    const add = (a: number | null, b: number | null) => (a === null || b === null ? null : a + b);
    const shares = { ...q.shares, [change.intoLow]: { bytes: add(p.bytes, gone.bytes), objects: add(p.objects, gone.objects) } };
    delete shares[change.low];
    writeQuota(this.sql, { ...q, shares });
  }

  /**
   * Notes which partitions (by the low of their range) are small enough to merge now; answers
   * since when each has been (the first time it was noted small since it last was not).
   *
   * Root: which partitions (by their low) have been small since when: `small` are those small now
   * (the cron's measure, upkeep/split-partitions.ts); each keeps the time it was first seen small,
   * the others are forgotten. Answers the times.
   */
  markSmallPartitions(bucket: string, small: string[], now: number): Reply<Record<string, number>> {
    return this.inBucket(bucket, () => {
      const before = JSON.parse(this.stateRow(PARTITION_SMALL) ?? '{}') as Record<string, number>;
      const since: Record<string, number> = {};
      for (const low of small) since[low] = before[low] ?? now;
      // Written only when it changed: a state row is journaled, and the cron notes every 5 minutes.
      if (JSON.stringify(since) !== JSON.stringify(before)) this.writeState(PARTITION_SMALL, Object.keys(since).length ? JSON.stringify(since) : null);
      return since;
    });
  }

  /** What the split thresholds are compared with (config `partitions`): read from the ledger and the database, no scan. */
  partitionStats(bucket: string): Reply<PartitionStats> {
    return this.inBucket(bucket, () => {
      const { low: _l, high: _h, ...stats } = this.partitionShare();
      return stats;
    });
  }

  /** This partition's range and figures (in its bucket's health: health-sum.ts lists every partition's). */
  private partitionShare(): PartitionShare {
    const ledger = (name: string) => this.sql.exec<{ value: number }>('SELECT value FROM ledger WHERE name = ?', name).toArray()[0]?.value ?? 0;
    const owned = this.ownedRange();
    return {
      low: owned?.low ?? '',
      high: owned?.high ?? null,
      versions: ledger('objects'),
      bytes: ledger('bytes'),
      databaseBytes: this.sql.databaseSize,
      splitting: this.splitState()?.phase ?? null,
      merging: this.mergeState()?.phase ?? (this.mergeInState() !== null ? 'receiving' : null),
      requestsPerSecond: this.traffic.perSecond(Date.now()),
      hotMedian: this.traffic.hotMedian(owned?.low ?? '', owned?.high ?? null),
    };
  }

  /** Sets the alarm to `at` unless it is set earlier: one alarm serves repairs, splits and events. */
  private async wakeAt(at: number): Promise<void> {
    const when = alarmTime(at, Date.now());
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > when) await this.ctx.storage.setAlarm(when);
  }

  // ---- One bucket's lifecycle (instance 'bucket:' + name) ----

  /**
   * `objectLock`: the bucket is created with Object Lock enabled (and so versioning Enabled).
   * `owner`: its `owner` state row (model/account.ts ownerRow; null, the default account, removes
   * one a deleted bucket of that name might have left), written in the same step.
   * `access`: its Object Ownership and ACL rows (model/acl.ts; absent, as a gateway of the previous
   * release sends it: BucketOwnerEnforced, private), in the same step too.
   */
  initBucket(
    name: string,
    region: string,
    created: number,
    objectLock = false,
    owner: string | null = null,
    access: { ownership: string | null; acl: string | null } = { ownership: null, acl: null },
  ): void {
    this.ensureSchema();
    this.ctx.storage.transactionSync(() => {
      this.sql.exec('INSERT OR IGNORE INTO buckets (name, region, created) VALUES (?, ?, ?)', name, region, created);
      const objects = new SqlObjects(this.sql, name);
      if (objectLock) objects.enableObjectLock();
      objects.setState(OWNER_ROW, owner);
      objects.setState(OWNERSHIP_ROW, access.ownership);
      objects.setState(ACL_ROW, access.acl);
    });
  }

  /** Ends the bucket if it holds no objects and no uploads (BucketNotEmpty), returning its pending
   *  garbage (kept here until destroyIfRetired). Idempotent, so a failed deleteBucket can be retried. */
  retireBucket(bucket: string): Reply<GarbageRow[]> {
    if (!this.schemaReady) return { ok: [] };
    return this.atomic(() => {
      if (new SqlObjects(this.sql, bucket).hasObjectsOrUploads()) throw new S3Error('BucketNotEmpty', undefined, { BucketName: bucket });
      this.assertEventsDelivered(bucket);
      this.sql.exec('DELETE FROM buckets WHERE name = ?', bucket);
      // The instance's journal segments go with it (the bucket list's journal records the deletion).
      const journal = new SqlJournal(this.sql, bucket).files();
      const files = journal.length
        ? [{ not_before: Date.now(), entry: JSON.stringify({ bucket: JOURNAL_BUCKET, units: journal } satisfies GarbageUnits) }]
        : [];
      return [...allGarbage(this.sql, bucket), ...files];
    });
  }

  /** Frees the storage of a retired instance (its garbage now lives in '__buckets__'); `bucket` names it (routing.ts). */
  async destroyIfRetired(_bucket?: string): Promise<void> {
    if (!this.schemaReady || this.sql.exec('SELECT 1 FROM buckets').toArray().length > 0) return; // re-created meanwhile
    this.schemaReady = false;
    this.owned = undefined;
    [this.split, this.merge, this.incoming] = [undefined, undefined, undefined];
    this.outboxOfStorage = undefined;
    await this.ctx.storage.deleteAll();
  }

  // ---- The catalog journal (sql-journal.ts; upkeep/journal.ts stores its segments) ----

  /**
   * The instance's next segment to store, or null when nothing is due.
   *
   * The instance's next journal segment (`instance`: the bucket's name, or BUCKET_LIST_INSTANCE),
   * or null when nothing is due or the instance holds nothing.
   */
  takeJournal(instance: string, now: number, maxBytes: number): JournalTake | null {
    if (!this.schemaReady) return null;
    return this.ctx.storage.transactionSync(() => new SqlJournal(this.sql, instance).take(now, maxBytes));
  }

  /**
   * The segment of `take` is stored as `units`; false when the instance is gone (delete what was written).
   *
   * The segment of `take` is stored as `units`. False when the instance was retired meanwhile
   * (its bucket deleted): the caller deletes the segment it wrote, which nothing else knows of.
   */
  journalWritten(instance: string, take: JournalTake, units: CodedUnit[], now: number, graceMs: number): boolean {
    if (!this.schemaReady) return false;
    this.ctx.storage.transactionSync(() => new SqlJournal(this.sql, instance).written(take, units, now, graceMs));
    return true;
  }

  /**
   * Writes a batch of the bucket's journaled rows back (a lost catalog restored); returns the rows written. NoSuchBucket, InvalidRequest.
   *
   * Rows of the bucket's journal written back (sql-journal.ts importRows), for a catalog that lost
   * them; `finish` on the last batch: the journal goes on after the imported one. The first batch
   * is refused when the bucket holds any version: a journal restores a lost catalog, it never
   * merges into a live one. Units recorded missing go on the repair worklist, as on a commit.
   */
  async importJournal(bucket: string, batch: JournalImportBatch): Promise<Reply<number>> {
    const r = this.inBucket(bucket, (o) => {
      if (batch.first && this.ownedRange() !== null) {
        throw new S3Error('InvalidRequest', `bucket ${bucket} is split into partitions: a journal is imported only into a bucket of one partition`);
      }
      if (batch.first && !batch.merge && this.sql.exec('SELECT 1 FROM versions LIMIT 1').toArray().length) {
        throw new S3Error('InvalidRequest', `bucket ${bucket} holds objects: a journal is imported only into a catalog that lost them`);
      }
      const n = importRows(this.sql, o.ledger, batch.rows, Date.now());
      if (batch.finish) new SqlJournal(this.sql, bucket).continueAfter(batch.finish);
      // Restored events were written past the outbox object: it learns its figures (the last
      // sequencer, the backlog) from storage again, so a new event's sequencer follows theirs.
      this.outboxOfStorage = undefined;
      return n;
    });
    if (!r.error) await this.wakeRepairs(this.repairList().nextWake(Date.now()));
    // Undelivered events came back with their changes: delivered from the alarm, as after a commit.
    if (!r.error && batch.rows.some((x) => x.t === 'event_outbox')) await this.wakeAt(Date.now());
    return r;
  }

  /** The instance's journal: what is stored, what waits, how redundant; null when the instance holds no bucket or no schema yet. */
  journalStatus(instance: string): JournalStatus | null {
    return this.schemaReady ? new SqlJournal(this.sql, instance).status() : null;
  }

  /**
   * The journal units the instance knows (its segment files, and journal units it holds for
   * deletion) and the last segment number it handed out; null when the instance holds no bucket
   * (a bucket's) or no schema yet.
   */
  journalKnown(instance: string): JournalKnown | null {
    if (!this.schemaReady) return null;
    if (instance !== BUCKET_LIST_INSTANCE && !this.sql.exec('SELECT 1 FROM buckets WHERE name = ?', journalBucket(instance)).toArray().length) return null;
    return new SqlJournal(this.sql, instance).known();
  }

  /** The instance's journal goes on after `from` (a journal on the backends discarded: its files adopted, deleted once a new generation completes; SqlJournal.continueAfter). */
  journalContinueAfter(instance: string, from: NonNullable<JournalImportBatch['finish']>): void {
    this.ensureSchema();
    this.ctx.storage.transactionSync(() => new SqlJournal(this.sql, instance).continueAfter(from));
  }

  /** The instance's segment files and their units, in segment order (the journal's upkeep: journal-upkeep.ts). */
  journalFiles(instance: string): { segment: number; units: CodedUnit[] }[] {
    return this.journalKnown(instance) ? new SqlJournal(this.sql, instance).segmentFiles() : [];
  }

  /**
   * The segment's units become `after` (shards recorded missing or repaired, or the segment
   * rewritten: units of `before` not in `after` go to the garbage) if its units are still
   * `before` (ids, in order); false when the segment is gone or was changed meanwhile.
   */
  journalReplaceUnits(instance: string, segment: number, before: string[], after: CodedUnit[], notBefore: number): boolean {
    if (!this.journalKnown(instance)) return false;
    return this.ctx.storage.transactionSync(() => new SqlJournal(this.sql, instance).replaceUnits(segment, before, after, notBefore));
  }

  /** The key table of named KMS keys (the bucket list's instance: sql-kms-keys.ts). */
  listKmsKeys(): string[] {
    return this.schemaReady ? listKmsKeys(this.sql) : [];
  }

  /** The named key's record (JSON of model/kms-key.ts KmsKeyRecord), or null. */
  getKmsKey(id: string): string | null {
    return this.schemaReady ? readKmsKey(this.sql, id) : null;
  }

  /** Writes `after` if the record is still `before` (null: absent); whether it did. */
  replaceKmsKey(id: string, before: string | null, after: string): boolean {
    this.ensureSchema();
    return this.ctx.storage.transactionSync(() => replaceKmsKey(this.sql, id, before, after));
  }

  /** What the backends' journal holds beyond this catalog (upkeep/catalog-loss.ts): the bucket list's instance keeps it (sql-catalog-loss.ts). */
  catalogLoss(): CatalogLoss {
    return this.schemaReady ? readCatalogLoss(this.sql) : { lost: {}, suspect: {} };
  }

  /** Replaces the catalog-loss record (upkeep/catalog-loss.ts computes it; rebuild and discard clear entries). */
  setCatalogLoss(loss: CatalogLoss): void {
    this.ensureSchema();
    writeCatalogLoss(this.sql, loss);
  }

  queueGarbage(garbage: GarbageUnits, notBefore: number): Reply<void> {
    return this.inBucket(garbage.bucket, () => queueGarbage(this.sql, garbage, notBefore));
  }

  /** Ends reservations of a write of `key` refused before any shard was written (no-op for unknown ids). */
  releaseUnits(bucket: string, unitIds: string[], _key: string): Reply<void> {
    return this.inBucket(bucket, (o) => o.release(unitIds.map((unitId) => ({ unitId }))));
  }
  /** The bucket's CORS rules, or null when it has none. NoSuchBucket if missing. */
  getBucketCors(bucket: string): Reply<CorsRule[] | null> {
    return this.inBucket(bucket, (o) => {
      const value = o.getState('cors');
      return value === null ? null : (JSON.parse(value) as CorsRule[]);
    });
  }
  /** Replaces the bucket's CORS rules; null removes them. NoSuchBucket if missing. */
  setBucketCors(bucket: string, rules: CorsRule[] | null): Reply<void> {
    return this.inBucket(bucket, (o) => o.setState('cors', rules === null ? null : JSON.stringify(rules)));
  }
  // ---- Quota and usage (quota.ts, sql-quota.ts) ----
  /** The bucket's quota as stored (its root's), or null. NoSuchBucket. */
  getBucketQuota(bucket: string): Reply<StoredQuota | null> {
    return this.inBucket(bucket, () => readQuota(this.sql));
  }
  /** Replaces it (null: no quota); copied to every partition of a split bucket before it answers. Use quota.ts setQuota, which cuts the shares. */
  setBucketQuota(bucket: string, quota: StoredQuota | null): Reply<void> {
    return this.inBucket(bucket, () => writeQuota(this.sql, quota));
  }
  /** Usage over every version and partition (one instance per partition; a count of the versions of each). NoSuchBucket. */
  bucketUsage(bucket: string): Reply<BucketUsage> {
    return this.inBucket(bucket, () => instanceUsage(this.sql, this.quotaRange()));
  }

  /** The bucket's request-path settings and their stamp (model/bucket-settings.ts). */
  getBucketSettings(bucket: string): Reply<BucketSettings> {
    return this.inBucket(bucket, () => this.requestSettings());
  }

  private requestSettings(): BucketSettings {
    if (!this.schemaReady) return NO_SETTINGS;
    // One query for every row: each fenced write asks (a row a query was 2% of a 64 KiB PUT's Worker CPU).
    const rows = readStates(this.sql, REQUEST_SETTINGS);
    return settingsOf((name) => rows.get(name) ?? null);
  }

  /**
   * The one entry point (operations.ts): runs operation `name` with `args` (as its method takes
   * them) and answers what the method answers. With `stamp`, the operation must be a fenced one
   * (a request's): it runs only if the bucket's request-path settings still have the stamp the
   * caller's request was checked against; else nothing is done and the answer is the settings
   * as they are now (Fenced: DurableCatalog checks the request again and repeats the call). The
   * comparison and the start of the method are one synchronous step, and each method's checks
   * and writes are one transaction, so no request acts on settings older than its bucket holds.
   */
  async dispatch(name: string, args: unknown[], stamp?: string, route?: { key?: string; epoch: number }): Promise<unknown> {
    const op = operation(name);
    if (op === undefined) throw new Error(`CatalogObject.dispatch: no operation ${String(name)}`);
    this.traffic.count(Date.now(), op.to === 'key' ? (route?.key ?? (op.key ? op.key(args as never) : (args[1] as string))) : undefined);
    const method = this[name as keyof this] as (...a: unknown[]) => unknown;
    // Nothing to wait for is the common case: no await then, so the check below and the method stay one step with the call's arrival.
    const fence = route && op.to !== 'root' && op.to !== 'registry' ? this.fenceFor(op.to === 'key' ? route.key : undefined, route.epoch) : null;
    if (fence !== null) await fence;
    const moved = route && op.to !== 'root' && op.to !== 'registry' ? this.movedFor(route) : undefined;
    if (moved) return moved;
    // The cached range, not the map's row: no read per root call of a bucket that never split.
    if (op.to === 'root' && this.ownedRange() !== null) return await this.mirrored(args[0] as string, () => this.run(op.fenced, method, args, stamp));
    return await this.run(op.fenced, method, args, stamp);
  }

  private async run(fenced: true | undefined, method: (...a: unknown[]) => unknown, args: unknown[], stamp?: string): Promise<unknown> {
    if (stamp === undefined) return await method.apply(this, args);
    if (!fenced) throw new Error(`CatalogObject.fenced: ${String(method.name)} is not a request-path method`);
    const now = this.requestSettings();
    if (now.stamp !== stamp) return { stale: now } satisfies Fenced<unknown>;
    return { ran: await method.apply(this, args) } satisfies Fenced<unknown>;
  }

  /** dispatch() with a stamp, as gateways deployed before the operation table send it. */
  async fenced(expect: string, method: string, args: unknown[]): Promise<Fenced<unknown>> {
    return (await this.dispatch(method, args, expect)) as Fenced<unknown>;
  }

  /** The bucket policy's JSON document as put (state row 'policy'), or null when it has none. NoSuchBucket if missing. */
  getBucketPolicy(bucket: string): Reply<string | null> {
    return this.inBucket(bucket, (o) => o.getState('policy'));
  }
  /**
   * Answers the settings with their new stamp (the isolate that made the change sees it at once).
   * A policy the caller judged public is refused (AccessDenied) when the bucket's public access
   * block has BlockPublicPolicy: read in the same transaction as the write, so no public access
   * block put meanwhile can be passed by.
   */
  setBucketPolicy(bucket: string, policy: string | null, isPublic = false): Reply<BucketSettings> {
    return this.inBucket(bucket, (o) => {
      if (policy !== null && isPublic && parseStoredPublicAccessBlock(o.getState(PUBLIC_ACCESS_BLOCK_ROW))?.blockPublicPolicy) {
        throw new S3Error('AccessDenied', "Access Denied: the bucket's public access block (BlockPublicPolicy) refuses a public policy");
      }
      o.setState('policy', policy);
      return this.requestSettings();
    });
  }
  /** The public access block's JSON (model/public-access-block.ts; state row 'public-access-block'), or null. NoSuchBucket if missing. */
  getBucketPublicAccessBlock(bucket: string): Reply<string | null> {
    return this.inBucket(bucket, (o) => o.getState(PUBLIC_ACCESS_BLOCK_ROW));
  }
  /** Replaces it (null removes it); answers the settings with their new stamp. */
  setBucketPublicAccessBlock(bucket: string, value: string | null): Reply<BucketSettings> {
    return this.inBucket(bucket, (o) => {
      o.setState(PUBLIC_ACCESS_BLOCK_ROW, value);
      return this.requestSettings();
    });
  }
  /**
   * Changes the bucket's Object Ownership and ACL rows (model/acl.ts; a field left out stays, null
   * removes the row), in one step, and answers the settings with their new stamp. Refused when the
   * result would be an ACL beyond the owner's on a bucket whose ownership disables ACLs: 400
   * InvalidBucketAclWithObjectOwnership when the change sets the ownership, AccessControlListNotSupported
   * when it sets the ACL, as S3 answers each; read in the write's transaction, so two changes racing
   * cannot leave a bucket owner-enforced with grants.
   */
  setBucketAccess(bucket: string, change: { ownership?: string | null; acl?: string | null }): Reply<BucketSettings> {
    return this.inBucket(bucket, (o) => {
      const ownership = change.ownership !== undefined ? change.ownership : o.getState(OWNERSHIP_ROW);
      const acl = change.acl !== undefined ? change.acl : o.getState(ACL_ROW);
      if (acl !== null && !ownershipOf(ownership).aclsEnabled)
        throw new S3Error(change.ownership !== undefined ? 'InvalidBucketAclWithObjectOwnership' : 'AccessControlListNotSupported');
      if (change.ownership !== undefined) o.setState(OWNERSHIP_ROW, change.ownership);
      if (change.acl !== undefined) o.setState(ACL_ROW, change.acl);
      return this.requestSettings();
    });
  }
  /** Replaces the ACL of a version (metadata.acl; undefined: the bucket owner's alone): sql-objects.ts setAcl. NoSuchKey, NoSuchVersion. */
  setObjectAcl(bucket: string, key: string, acl: StoredObjectAcl | undefined, versionId?: string): Reply<void> {
    return this.inBucket(bucket, (o) => o.setAcl(key, acl, versionId));
  }
  /** Replaces the default encryption (state row 'encryption', model/default-encryption.ts; null removes it); answers the settings. */
  setBucketEncryption(bucket: string, value: string | null): Reply<BucketSettings> {
    return this.inBucket(bucket, (o) => {
      o.setState(DEFAULT_ENCRYPTION_ROW, value);
      return this.requestSettings();
    });
  }
  /** The bucket's access logging configuration (JSON of model/bucket-logging.ts; state row 'logging'), or null. NoSuchBucket if missing. */
  getBucketLogging(bucket: string): Reply<string | null> {
    return this.inBucket(bucket, (o) => o.getState(LOGGING));
  }
  /** Replaces it (already validated); null turns logging off. NoSuchBucket if missing. */
  setBucketLogging(bucket: string, value: string | null): Reply<void> {
    return this.inBucket(bucket, (o) => o.setState(LOGGING, value));
  }
  /**
   * Access log records into the TARGET bucket's instance (sql-access-log.ts), with a batch due now
   * claimed for the caller to deliver. NoSuchBucket when the target is gone.
   *
   * Access log records for the log objects this bucket receives (sql-access-log.ts).
   */
  appendAccessLog(
    bucket: string,
    group: LogGroup,
    lines: { at: number; line: string }[],
    now: number,
    rollMs: number,
    owner: string | null = null,
  ): Reply<AppendResult> {
    return this.inBucket(bucket, (o) => {
      // The target must still belong to the logging source's account (model/account.ts ownerRow).
      if (o.getState(OWNER_ROW) !== owner) throw new S3Error('AccessDenied', `bucket ${bucket} no longer belongs to the logging source's account`);
      return new SqlAccessLog(this.sql).append(group, lines, now, rollMs);
    });
  }
  /** A batch due for delivery (its claim expired, or its oldest record `rollMs` old), claimed; null when none. */
  takeAccessLog(bucket: string, now: number, rollMs: number): Reply<AccessLogBatch | null> {
    return this.inBucket(bucket, () => new SqlAccessLog(this.sql).take(now, rollMs));
  }
  /** The batch's log object is stored (or never can be): its records go. Idempotent. */
  accessLogDelivered(bucket: string, batchId: string): Reply<void> {
    return this.inBucket(bucket, () => new SqlAccessLog(this.sql).delivered(batchId));
  }
  /** The bucket's tags, or null when it has none. NoSuchBucket if missing. */
  getBucketTagging(bucket: string): Reply<Tag[] | null> {
    return this.inBucket(bucket, (o) => {
      const value = o.getState('tagging');
      return value === null ? null : (JSON.parse(value) as Tag[]);
    });
  }
  /** Replaces the bucket's tags; null removes them. NoSuchBucket if missing. */
  setBucketTagging(bucket: string, tags: Tag[] | null): Reply<void> {
    return this.inBucket(bucket, (o) => o.setState('tagging', tags === null ? null : JSON.stringify(tags)));
  }
  /**
   * Replaces the tags of the current version, or of version `versionId` (metadata.tags; []
   *  removes them) in place: same version, same units, nothing queued, and marks the unit that
   *  carries its tag record (rules.ts withTagsRecorded), which it returns: null when the object
   *  has none (inline, multipart). NoSuchKey when there is no object (NoSuchVersion).
   */
  async setObjectTags(bucket: string, key: string, tags: Tag[], versionId?: string, origin?: EventOrigin): Promise<Reply<CodedUnit | null>> {
    let due: number | null = null;
    const r = this.inBucket(bucket, (o) => {
      const unit = o.setTags(key, tags, versionId);
      if (!this.announcing()) return unit; // no rules: no read of its own
      const found = o.lookup(key, versionId ?? null);
      const manifest = found.kind === 'object' ? found.manifest : null;
      const event = origin?.op === 'DeleteObjectTagging' ? 's3:ObjectTagging:Delete' : 's3:ObjectTagging:Put';
      due = this.announce(
        bucket,
        {
          event,
          key,
          ...(manifest ? { size: manifest.size, etag: manifest.etag } : {}),
          ...(found.kind === 'object' && found.versionId !== undefined ? { versionId: found.versionId } : {}),
        },
        origin,
      );
      return unit;
    });
    if (!r.error && due !== null) await this.wakeAt(due);
    return r;
  }
  /** The bucket's lifecycle rules (state row 'lifecycle'), or null when it has none. NoSuchBucket if missing. */
  getBucketLifecycle(bucket: string): Reply<LifecycleRule[] | null> {
    return this.inBucket(bucket, (o) => o.lifecycle());
  }
  /** Replaces the bucket's lifecycle rules; null removes them (the job's progress stays). NoSuchBucket if missing. */
  setBucketLifecycle(bucket: string, rules: LifecycleRule[] | null): Reply<void> {
    return this.inBucket(bucket, (o) => o.setLifecycle(rules));
  }
  /** The bucket's rules, when they were set and the job's progress (LifecycleRun). NoSuchBucket. */
  getLifecycleRun(bucket: string): Reply<LifecycleRun> {
    return this.inBucket(bucket, (o) => ({ rules: o.lifecycle(), setAt: o.lifecycleSetAt(), progress: readProgress(o.getState(LIFECYCLE_PROGRESS)) }));
  }
  /** Keys after `afterKey` with all their versions, newest first, about `maxVersions` versions (sql-lifecycle.ts). NoSuchBucket. */
  listKeyVersions(bucket: string, afterKey: string | null, maxVersions: number): Reply<{ keys: KeyVersions[]; atEnd: boolean }> {
    return this.inBucket(bucket, () => keyVersionsPage(this.sql, afterKey, Math.max(1, Math.min(maxVersions, 5000))));
  }
  /** Records the lifecycle job's progress (null: none). NoSuchBucket. */
  setLifecycleProgress(bucket: string, progress: LifecycleProgress | null): Reply<void> {
    return this.inBucket(bucket, (o) => o.setState(LIFECYCLE_PROGRESS, progress === null ? null : JSON.stringify(progress)));
  }
  /** The bucket's versioning state, null when never configured. NoSuchBucket. */
  getVersioning(bucket: string): Reply<S.VersioningStatus | null> {
    return this.inBucket(bucket, (o) => o.versioning());
  }
  /** Sets the bucket's versioning (Enabled or Suspended; never back to unversioned). InvalidBucketState while Object Lock is on and `status` is Suspended. NoSuchBucket. */
  setVersioning(bucket: string, status: S.VersioningStatus): Reply<void> {
    return this.inBucket(bucket, (o) => o.setVersioning(status));
  }
  /** The bucket's Object Lock configuration, null when lock is not enabled. NoSuchBucket. */
  getObjectLock(bucket: string): Reply<ObjectLockConfig | null> {
    return this.inBucket(bucket, (o) => o.objectLock());
  }
  /** Sets the default retention; enables lock on a versioning-Enabled bucket (else InvalidBucketState). */
  setObjectLock(bucket: string, rule: DefaultRetention | null): Reply<void> {
    return this.inBucket(bucket, (o) => o.setObjectLock(rule));
  }
  /** PutObjectRetention / PutObjectLegalHold on the current version or `versionId` (sql-objects.ts changeObjectLock). */
  changeObjectLock(bucket: string, key: string, versionId: string | undefined, change: ObjectLockChange, bypass: boolean): Reply<void> {
    return this.inBucket(bucket, (o) => o.changeObjectLock(key, versionId, change, bypass));
  }
  /** Up to `limit` records after `after` (null: from the start): versions, then parts. NoSuchBucket. */
  listSealRecords(bucket: string, after: SealRecordCursor | null, limit: number): Reply<SealRecord[]> {
    return this.inBucket(bucket, () => listSealRecords(this.sql, after, Math.max(1, Math.min(limit, 500))));
  }
  /** Replaces each record still equal to `before` by `after`; how many were. NoSuchBucket. */
  replaceSealRecords(bucket: string, items: { at: SealRecordCursor; before: string; after: string }[]): Reply<number> {
    return this.inBucket(bucket, () => replaceSealRecords(this.sql, items));
  }
  /**
   * Commits a shard's move, compare-and-set: if the bucket still stores unit `move.unitId` with
   * shard `move.shard` on `move.from`, its placement names `move.to` instead (in every place the
   * unit is recorded: the version's manifest, the ledger's shard counts, the repair worklist; a
   * shard recorded missing was rebuilt there, so it is missing no more), and the copy on `from`
   * is queued for deletion at `notBefore` (reads in flight still use it). Answers 'moved', or
   * 'gone' when the unit is no longer stored or its placement changed meanwhile (a concurrent
   * overwrite, delete or move won): nothing changed, and the new copy is the caller's to delete.
   */
  commitMove(bucket: string, move: ShardMove, notBefore: number): Reply<'moved' | 'gone'> {
    return this.inBucket(bucket, (o) => o.moveShard(move, notBefore));
  }
  /** The bucket's drain progress record (state 'drain'; upkeep/drain-progress.ts), or null. */
  getDrainState(bucket: string): Reply<string | null> {
    return this.inBucket(bucket, (o) => o.getState(DRAIN_PROGRESS));
  }
  /** Replaces the drain progress record (null removes it). NoSuchBucket. */
  setDrainState(bucket: string, value: string | null): Reply<void> {
    return this.inBucket(bucket, (o) => o.setState(DRAIN_PROGRESS, value));
  }
  /**
   * Claims the bucket for mover chain `chain` (upkeep/move-chain.ts), compare-and-set: true, with
   * the claim renewed at `now`, unless another chain claimed it less than `staleMs` ago (false,
   * nothing changed). catalog/move-chain-record.ts.
   */
  claimMoveChain(bucket: string, chain: string, now: number, staleMs: number): Reply<boolean> {
    return this.inBucket(bucket, (o) => {
      const claim = claimChain(o.getState(DRAIN_PROGRESS), chain, now, staleMs);
      if (claim.owned) o.setState(DRAIN_PROGRESS, claim.row);
      return claim.owned;
    });
  }
  /** Ends `chain`'s claim on the bucket (nothing if another chain holds it). */
  endMoveChain(bucket: string, chain: string): Reply<void> {
    return this.inBucket(bucket, (o) => o.setState(DRAIN_PROGRESS, endChain(o.getState(DRAIN_PROGRESS), chain)));
  }
  /** Stored object versions (no delete markers) after `after` (null: from the first), at most `limit`. NoSuchBucket. */
  listVersionRecords(bucket: string, after: VersionAt | null, limit: number): Reply<VersionRecord[]> {
    return this.inBucket(bucket, () => listVersionRecords(this.sql, after, Math.max(1, Math.min(limit, 500))));
  }
  /**
   * Swaps the storage of the version at `at` for `storage` if its manifest is still `before`;
   * its old units are queued for deletion at `notBefore`. 'gone': the version was deleted or
   * changed meanwhile and nothing changed but the rewrite's units, queued for deletion now.
   * The rewrite's reservations end either way. `change.storageClass`: the version's storage class
   * becomes it in the same step (a lifecycle transition, issue 44; null: STANDARD). NoSuchBucket.
   */
  commitRestripe(
    bucket: string,
    at: VersionAt,
    before: string,
    storage: ObjectManifest['storage'],
    notBefore: number,
    change?: RestripeChange,
  ): Reply<'rewritten' | 'gone'> {
    return this.inBucket(bucket, (o) => commitRestripe(this.sql, o, at, before, storage, notBefore, change));
  }
  /** Replaces the bucket's re-stripe record (state 'restripe'; restripe-record.ts; bucketHealth answers it); null removes it. */
  setRestripeState(bucket: string, value: string | null): Reply<void> {
    return this.inBucket(bucket, (o) => o.setState(RESTRIPE_PROGRESS, value));
  }
  getAdoptState(bucket: string): Reply<string | null> {
    return this.inBucket(bucket, (o) => o.getState(ADOPT_PROGRESS));
  }
  setAdoptState(bucket: string, value: string | null): Reply<void> {
    return this.inBucket(bucket, (o) => o.setState(ADOPT_PROGRESS, value));
  }
  claimAdoptChain(bucket: string, chain: string, now: number, staleMs: number): Reply<boolean> {
    return this.inBucket(bucket, (o) => {
      const claim = claimChain(o.getState(ADOPT_CHAIN), chain, now, staleMs);
      if (claim.owned) o.setState(ADOPT_CHAIN, claim.row);
      return claim.owned;
    });
  }
  endAdoptChain(bucket: string, chain: string): Reply<void> {
    return this.inBucket(bucket, (o) => o.setState(ADOPT_CHAIN, endChain(o.getState(ADOPT_CHAIN), chain)));
  }
  /** The bucket's rotation progress record (state 'key-rotation'), or null. */
  getRotationState(bucket: string): Reply<string | null> {
    return this.inBucket(bucket, (o) => o.getState(KEY_ROTATION));
  }
  /** Replaces the rotation progress record (null removes it). NoSuchBucket. */
  setRotationState(bucket: string, value: string | null): Reply<void> {
    return this.inBucket(bucket, (o) => o.setState(KEY_ROTATION, value));
  }
  /**
   * Ids of the units this bucket's catalog holds for deletion (superseded or deleted, not yet
   * collected) or reserved by writes not yet committed: shards a rebuild finds on the backends
   * under these ids must never become visible again.
   */
  pendingUnitIds(bucket: string): Reply<string[]> {
    return this.inBucket(bucket, () => allGarbage(this.sql, bucket).flatMap((r) => garbageUnitIds(JSON.parse(r.entry) as GarbageUnits)));
  }
  /** Where the background scrubber stopped in this bucket, or null: the next run starts a pass. */
  getScrubCursor(bucket: string): Reply<ScrubCursor | null> {
    return this.inBucket(bucket, (o) => {
      const value = o.getState(SCRUB_POSITION);
      return value === null ? null : (JSON.parse(value) as ScrubCursor);
    });
  }
  /**
   * The scrubber checked every shard of `checked` (unit ids) and stopped at `cursor` (null: the
   * pass is complete, every unit in it checked).
   */
  recordScrub(bucket: string, checked: string[], cursor: ScrubCursor | null): Reply<void> {
    return this.inBucket(bucket, (o) => {
      const now = Date.now(); // one instant: the units checked belong to the pass this run starts or continues
      o.checked(checked, now);
      o.ledger.scrubMoved(cursor, now);
      o.setState(SCRUB_POSITION, cursor === null ? null : JSON.stringify(cursor));
    });
  }
  /** The unit with this id among the bucket's stored object versions, or null (never, or no longer, stored). NoSuchBucket. */
  getUnit(bucket: string, unitId: string, _key: string): Reply<UnitRecord | null> {
    return this.inBucket(bucket, (o) => o.unit(unitId));
  }
  /** The bucket's units in id order after `afterUnit` (null: from the first), at most `limit`. NoSuchBucket. */
  listUnits(bucket: string, afterUnit: string | null, limit: number): Reply<UnitRecord[]> {
    return this.inBucket(bucket, (o) => o.units(afterUnit, limit));
  }

  /** The bucket's counts and health as of `now` (NoSuchBucket if missing); no scan of objects. */
  bucketHealth(bucket: string, now: number): Reply<BucketHealth> {
    return this.inBucket(bucket, (o) => {
      const lifecycle = readProgress(o.getState(LIFECYCLE_PROGRESS));
      const journal = new SqlJournal(this.sql, bucket).status();
      const restripe = o.getState(RESTRIPE_PROGRESS);
      const adopt = o.getState(ADOPT_PROGRESS);
      const events = this.outbox().status(now);
      return {
        ...(events.length ? { events } : {}),
        ...o.ledger.health(bucket, now),
        partitions: [this.partitionShare()],
        ...(lifecycle ? { lifecycle } : {}),
        journal,
        ...(restripe ? { restripe: JSON.parse(restripe) as RestripeState } : {}),
        ...(adopt ? { adopt: JSON.parse(adopt) as BackfillState } : {}),
        ...healthUsage(this.sql),
      };
    });
  }
  /** Degraded units in (key, unitId) order after `after` (null: from the start), at most `limit`. NoSuchBucket. */
  listDegradedUnits(bucket: string, after: { key: string; unitId: string } | null, limit: number): Reply<DegradedUnit[]> {
    return this.inBucket(bucket, (o) => o.ledger.degraded(after, limit));
  }

  /**
   * Garbage of buckets already deleted (units still on the backends): queued, and due at `now`.
   *
   * The bucket list's instance: garbage adopted from deleted buckets.
   */
  deletedBucketGarbage(now: number): { queued: number; due: number } {
    if (!this.schemaReady) return { queued: 0, due: 0 };
    return this.sql.exec<{ queued: number; due: number }>('SELECT COUNT(*) AS queued, COALESCE(SUM(not_before <= ?), 0) AS due FROM garbage', now).one();
  }

  /**
   * A PUT's one catalog call before its commit: checks `conditions` against the key's current
   * object (PreconditionFailed, NoSuchKey; NoSuchBucket), then reserves `unitIds` as
   * reserveUnits does, atomically; a refused write reserves nothing. The writer withholds every
   * shard's last bytes until this has answered, so no shard is stored unreserved (ec-store.ts).
   * `size`, the body's declared length, is checked against the bucket's quota in the same step
   * (QuotaExceeded: catalog/quota.ts), so a write past the quota stores nothing.
   *
   * `size`: the body's declared length, checked against the bucket's quota here (sql-quota.ts); absent from an older gateway.
   */
  prepareWrite(bucket: string, key: string, conditions: CatalogWriteConditions, unitIds: string[], expires: number, size?: number): Reply<void> {
    return this.inBucket(bucket, (o) => {
      this.outbox().assertRoom(notificationsOf(this.env as { SHARDGATE_CONFIG?: string })); // strict mode: SlowDown before any shard is sent
      o.prepare(key, conditions, unitIds, expires);
      if (size !== undefined) enforceQuota(this.sql, bucket, this.quotaRange(), () => writeGrowth(this.sql, o, key, size));
    });
  }

  /** This instance's range for its quota share: null when it owns its bucket whole. */
  private quotaRange(): string | null {
    return this.ownedRange()?.low ?? null;
  }

  /**
   * An UploadPart's one catalog call before putPart: the upload must exist (NoSuchUpload;
   * NoSuchBucket), then `unitIds` are reserved as reserveUnits does, atomically; answers the
   * upload's checksum spec and its SSE record. Like prepareWrite, it runs while the part's shards upload.
   */
  preparePart(bucket: string, key: string, uploadId: string, unitIds: string[], expires: number, size?: number): Reply<PreparedPart> {
    return this.inBucket(bucket, (o, mp) => {
      const { checksum, metadata } = mp.get(key, uploadId);
      if (size !== undefined) enforceQuota(this.sql, bucket, this.quotaRange(), () => ({ bytes: size, objects: 0 }));
      o.reserve(unitIds, expires, key);
      return { checksum, sse: metadata.sse ?? null };
    });
  }

  /**
   * Records that shards are about to be written under these unit ids (NoSuchBucket if missing).
   * A commit or putPart naming a unit releases its reservation; one still held at `expires` is a
   * write that never committed (a crash, a refused or abandoned upload), and takeDueGarbage hands
   * it to the collector. Reserving before any shard is stored (prepareWrite: before any shard's
   * footer is sent) is what makes every orphan findable. `key`: the key being written (the
   * units are reserved where it is kept; docs/PARTITIONS.md).
   *
   * `key` absent: sent by a gateway of an earlier release (an on-line split waits for such reservations to end).
   */
  reserveUnits(bucket: string, unitIds: string[], expires: number, key?: string): Reply<void> {
    return this.inBucket(bucket, (o) => o.reserve(unitIds, expires, key ?? null));
  }

  /** The bucket list's instance holds no reservations: only a bucket's own instance names one bucket. */
  takeDueGarbage(now: number, limit: number, bucket?: string): GarbageUnits[] {
    return this.schemaReady ? this.ctx.storage.transactionSync(() => takeDueGarbage(this.sql, now, limit, bucket)) : [];
  }

  // ---- Event notifications (sql-outbox.ts, event-delivery.ts, docs/NOTIFICATIONS.md) ----

  /** The bucket's notification rules (JSON of model/notification.ts NotificationRule[]), or null. NoSuchBucket if missing. */
  getBucketNotification(bucket: string): Reply<string | null> {
    return this.inBucket(bucket, (o) => o.getState(NOTIFICATION));
  }

  /**
   * Replaces them (null: none), their ARNs checked against the gateway's destinations; queues an s3:TestEvent per destination.
   *
   * Replaces the rules (null: none), their ARNs checked against the gateway's destinations (AWS's
   * InvalidArgument), and queues the s3:TestEvent AWS sends each destination, in one transaction.
   */
  async setBucketNotification(bucket: string, value: string | null, requestId = ''): Promise<Reply<void>> {
    const settings = notificationsOf(this.env as { SHARDGATE_CONFIG?: string });
    let due: number | null = null;
    const r = this.inBucket(bucket, (o) => {
      const rules = parseStoredNotification(value);
      if (rules) checkRules(rules, (name) => Object.hasOwn(settings.destinations, name));
      o.setState(NOTIFICATION, rules ? JSON.stringify(rules) : null);
      if (rules) due = this.outbox().announceTest(bucket, rules, this.ownedRange()?.epoch ?? 0, Date.now(), requestId, settings);
    });
    if (!r.error && due !== null) await this.wakeAt(due);
    return r;
  }

  /**
   * Event delivery figures per destination (catalog/sql-outbox.ts), summed over the bucket's partitions. NoSuchBucket.
   *
   * This partition's delivery figures per destination.
   */
  eventStatus(bucket: string, now: number): Reply<DestinationEvents[]> {
    return this.inBucket(bucket, () => this.outbox().status(now));
  }

  /**
   * The bucket's newest events and their delivery state, newest first, at most `limit`. NoSuchBucket.
   *
   * This partition's newest events, newest first.
   */
  listEvents(bucket: string, limit: number): Reply<EventEntry[]> {
    return this.inBucket(bucket, () => this.outbox().recent(Math.max(1, Math.min(limit, 1000))));
  }

  /** The event outbox of this object's storage (one, so it keeps what it learned: sql-outbox.ts). */
  private outboxOfStorage: SqlOutbox | undefined;
  private outbox(): SqlOutbox {
    this.outboxOfStorage ??= new SqlOutbox(this.sql);
    return this.outboxOfStorage;
  }

  /** Whether the bucket has notification rules (one state row read, in the caller's transaction). */
  private announcing(): boolean {
    return this.outbox().rules() !== null;
  }

  /** The change's event rows, in the caller's transaction; when their delivery is due (null: no rule matched). */
  private announce(bucket: string, change: ChangeFacts, origin: EventOrigin | undefined): number | null {
    const settings = notificationsOf(this.env as { SHARDGATE_CONFIG?: string });
    const region = this.bucketRow(bucket)?.region ?? '';
    return this.outbox().announce(change, { bucket, region, epoch: this.ownedRange()?.epoch ?? 0, origin, now: Date.now() }, settings);
  }

  /** What an ObjectCreated event says of the committed version. */
  private created(key: string, manifest: ObjectManifest, done: CommitResult): Omit<ChangeFacts, 'event'> {
    return { key, size: manifest.size, etag: manifest.etag, ...(done.versionId !== undefined ? { versionId: done.versionId } : {}) };
  }

  /**
   * Sends this partition's due events (event-delivery.ts); answers when the next are due.
   * The alarm runs it; tests call it with their clock.
   */
  async deliverEvents(now: number, options: DeliveryOptions = {}): Promise<number | null> {
    if (!this.schemaReady || this.sql.exec('SELECT 1 FROM buckets').toArray().length !== 1) return null;
    const settings = notificationsOf(this.env as { SHARDGATE_CONFIG?: string });
    const atomic = <T>(fn: () => T): T => this.ctx.storage.transactionSync(fn);
    return await deliverOutbox(this.outbox(), settings, this.env as unknown as Record<string, unknown>, now, atomic, options);
  }

  /** Sets the alarm to `at` unless it is set earlier. */
  // ---- Objects and multipart uploads of the bucket ----

  /** The manifest of the key's current version, or null. NoSuchBucket if the bucket is missing. */
  getManifest(bucket: string, key: string): Reply<ObjectManifest | null> {
    return this.inBucket(bucket, (o) => o.get(key));
  }
  /**
   * The current version of `key` (versionId null) or the version named ('null': the null
   * version), with the id S3 shows for it. NoSuchBucket if the bucket is missing.
   */
  getVersion(bucket: string, key: string, versionId: string | null): Reply<VersionLookup> {
    return this.inBucket(bucket, (o) => o.lookup(key, versionId));
  }
  /**
   * Atomically checks `conditions` against the current object (If-None-Match '*': 412 if it
   * exists; If-Match: NoSuchKey when absent, 412 on ETag mismatch) and installs `manifest` as the
   * key's newest version (manifest.versionId). Versioning Enabled: every older version stays (its
   * units too). Otherwise (never versioned, Suspended) the new version is the null version and
   * the null version it replaces, if any, has its units queued for deletion after the grace
   * delay. Answers the version id S3 sends back and the new version's lifecycle expiration (CommitResult).
   */
  async commitManifest(
    bucket: string,
    key: string,
    manifest: ObjectManifest,
    conditions: CatalogWriteConditions,
    grace: Grace,
    origin?: EventOrigin,
  ): Promise<Reply<CommitResult>> {
    let due: number | null = null;
    const r = this.inBucket(bucket, (o) => {
      // An inline write's first call, a coded one's second (a write racing it may have used the room meanwhile).
      if (!conditions.restoring) enforceQuota(this.sql, bucket, this.quotaRange(), () => writeGrowth(this.sql, o, key, manifest.size));
      const done = o.commit(key, manifest, conditions, grace);
      due = this.announce(bucket, { event: creationEvent(origin, false), ...this.created(key, manifest, done) }, origin);
      return done;
    });
    if (!r.error && degradedUnitsOf(manifest).length) await this.wakeRepairs(Date.now() + this.repairTiming().retryFirstMs);
    if (!r.error && due !== null) await this.wakeAt(due);
    return r;
  }
  /**
   * A bulk load: each item committed as commitManifest commits it (quota, ledger, versions,
   * events), all in one transaction. Sent to one partition by the client with every key of the
   * batch its own (DurableCatalog.commitManifests); a key it does not own answers Moved and
   * nothing is written. The route names no key, so a split or merge committing here holds the
   * whole batch at its fence, whichever keys it holds.
   */
  async commitManifests(
    bucket: string,
    items: { key: string; manifest: ObjectManifest; conditions: CatalogWriteConditions }[],
    grace: Grace,
    origin?: EventOrigin,
  ): Promise<Reply<CommitResult[]> | Moved> {
    const owned = this.ownedRange();
    if (owned !== null && items.some((i) => !owns(owned, i.key))) return { moved: owned.epoch };
    let due: number | null = null;
    const r = this.inBucket(bucket, (o) =>
      items.map(({ key, manifest, conditions }) => {
        if (!conditions.restoring) enforceQuota(this.sql, bucket, this.quotaRange(), () => writeGrowth(this.sql, o, key, manifest.size));
        const done = o.commit(key, manifest, conditions, grace);
        const at = this.announce(bucket, { event: creationEvent(origin, false), ...this.created(key, manifest, done) }, origin);
        if (at !== null) due = Math.min(due ?? at, at);
        return done;
      }),
    );
    if (!r.error && items.some((i) => degradedUnitsOf(i.manifest).length)) await this.wakeRepairs(Date.now() + this.repairTiming().retryFirstMs);
    if (!r.error && due !== null) await this.wakeAt(due);
    return r;
  }
  /**
   * Records shards of unit `unitId` found missing or rotten (by a read or the scrubber): reads
   * skip them from now on and the unit goes on the repair worklist. Nothing happens if the bucket
   * no longer stores that unit.
   */
  async markMissing(bucket: string, unitId: string, shards: number[], _key: string): Promise<Reply<void>> {
    const r = this.inBucket(bucket, (o) => o.markMissing(unitId, shards));
    if (!r.error) await this.wakeRepairs(Date.now());
    return r;
  }
  /**
   * Takes `shards` off the `missing` list of unit `unitId`, once a repair has rewritten them, so
   * reads use them again. Nothing happens if the unit is no longer stored (its version was
   * replaced or deleted while the repair ran).
   */
  async markRepaired(bucket: string, unitId: string, shards: number[], _key: string): Promise<Reply<void>> {
    const r = this.inBucket(bucket, (o) => {
      const repairs = this.repairList();
      const wroteTo = repairs.targetsOf(unitId, shards); // those backends answer again
      o.markRepaired(unitId, shards);
      repairs.reset(wroteTo); // progress: whatever kept the others back may be gone too
    });
    if (!r.error) await this.wakeRepairs(Date.now());
    return r;
  }
  /**
   * A repair attempt of the unit failed: it is retried later, with backoff (sql-repairs.ts);
   * `unreachable`: the backends its shards could not be written to, backed off for every unit of
   * the bucket (absent from a gateway of an earlier release).
   */
  async repairFailed(bucket: string, unitId: string, error: string, unreachable: string[], _key: string): Promise<Reply<void>> {
    const r = this.inBucket(bucket, () => this.repairList().failed(unitId, error, Date.now(), unreachable ?? []));
    if (!r.error) await this.wakeRepairs(this.repairList().nextWake(Date.now()));
    return r;
  }
  /**
   * Makes sure the bucket's degraded units are being repaired: `reset` (a backend is healthy
   * again, a read found a degraded unit) makes every one due now; without it only an idle
   * worklist is woken.
   */
  async repairSoon(bucket: string, reset: boolean, backend?: string): Promise<Reply<void>> {
    const r = this.inBucket(bucket, () => {
      if (reset) this.repairList().reset(backend ? [backend] : []);
    });
    if (!r.error) await this.wakeRepairs(reset ? Date.now() : this.repairList().nextWake(Date.now()));
    return r;
  }

  /** Sets the alarm to `at` unless it is set earlier (null: nothing to wake for). */
  private async wakeRepairs(at: number | null): Promise<void> {
    if (at !== null && this.repairQueue) await this.wakeAt(at);
  }

  private get repairQueue(): Queue<RepairMessage> | undefined {
    return (this.env as { REPAIR_QUEUE?: Queue<RepairMessage> }).REPAIR_QUEUE;
  }

  /** The repair worklist's and the settings copy's run, then the event outbox's (whatever the first did). */
  override async alarm(): Promise<void> {
    const split = this.splitState();
    if (split !== null) {
      // A split whose driver died (a crash, a lost caller) goes on from its stored state.
      if (this.splitRun === null) void this.splitPartition(split.bucket, split.at, split.at).catch(() => undefined);
      await this.wakeAt(Date.now() + SPLIT_WATCHDOG_MS);
    }
    const merge = this.mergeState();
    if (merge !== null) {
      // So does a merge (one given up, events waiting, ends there).
      if (this.mergeRun === null) void this.mergePartition(merge.bucket, merge.low).catch(() => undefined);
      await this.wakeAt(Date.now() + SPLIT_WATCHDOG_MS);
    }
    try {
      await this.repairAlarm();
    } finally {
      const next = await this.deliverEvents(Date.now());
      if (next !== null) await this.wakeAt(Math.max(next, Date.now()));
    }
  }

  /** Hands the due units of the worklist to the repair queue, then sets the next wake-up. */
  private async repairAlarm(): Promise<void> {
    const bucketName = this.schemaReady ? this.sql.exec<{ name: string }>('SELECT name FROM buckets').toArray()[0]?.name : undefined;
    if (bucketName !== undefined && this.stateRow(MIRROR_PENDING) !== null) await this.pushMirror(bucketName);
    const queue = this.repairQueue;
    const bucket = this.schemaReady ? this.sql.exec<{ name: string }>('SELECT name FROM buckets').toArray() : [];
    if (!queue || bucket.length !== 1) return; // the bucket list's instance holds no objects
    const name = bucket[0]!.name;
    const repairs = this.repairList();
    const due = this.ctx.storage.transactionSync(() => repairs.takeDue(Date.now()));
    if (due.length) {
      try {
        await queue.sendBatch(
          due.map((u) => ({ body: { bucket: name, key: u.key, unitId: u.unitId, shards: u.missing, reason: { kind: 'worklist' } } satisfies RepairMessage })),
        );
      } catch (err) {
        console.error(JSON.stringify({ level: 'error', msg: 'catalog: could not queue repairs', bucket: name, units: due.length, error: errorMessage(err) }));
        this.ctx.storage.transactionSync(() => repairs.unsend(due));
      }
    }
    const next = repairs.nextWake(Date.now());
    // More due than one batch: the next batch after the first retry delay (each send is a queue message).
    if (next !== null)
      await this.ctx.storage.setAlarm(alarmTime(due.length && next <= Date.now() ? Date.now() + this.repairTiming().retryFirstMs : next, Date.now()));
  }
  /**
   * DeleteObject. With `versionId`: removes exactly that version (none: no error); if it was
   * the newest, the next newest becomes current. Without: a bucket never versioned removes the
   * key; Enabled adds a delete marker; Suspended replaces the null version by a null marker.
   * Removed object versions have their units queued for deletion. `conditions` are checked in
   * the same transaction as the delete, against the version named or the current version
   * (model/conditions.ts checkDeleteConditions: 412, or NoSuchKey with no current object): a
   * mismatch changes nothing, and no write can come between the check and the delete.
   * A locked object version (model/object-lock.ts) is never removed: AccessDenied, unless
   * `bypassGovernance` and its lock is GOVERNANCE retention only. A delete marker may always be added.
   *
   * `conditions` a string: the If-Match of a gateway deployed before conditional deletes (the
   *  worker and this object may run different versions for a moment during a deploy), kept a
   *  condition, never read as none.
   */
  async removeManifest(
    bucket: string,
    key: string,
    conditions: S.DeleteConditions | string | undefined,
    grace: Grace,
    versionId?: string,
    bypassGovernance = false,
    origin?: EventOrigin,
  ): Promise<Reply<S.DeleteObjectResult>> {
    const checked = typeof conditions === 'string' ? { ifMatch: conditions } : conditions;
    let due: number | null = null;
    const r = this.inBucket(bucket, (o) => {
      const announcing = this.announcing(); // no rules: no read of its own
      const existed = announcing && o.lookup(key, versionId ?? null).kind !== 'none';
      const done = o.delete(key, checked, grace, versionId, bypassGovernance);
      // A delete that removed nothing and made no marker changed nothing: no event.
      const marker = done.deleteMarker === true && versionId === undefined;
      if (announcing && (existed || marker)) {
        const change: ChangeFacts = { event: removalEvent(marker, origin), key, ...(done.versionId !== undefined ? { versionId: done.versionId } : {}) };
        due = this.announce(bucket, change, origin);
      }
      return done;
    });
    if (!r.error && due !== null) await this.wakeAt(due);
    return r;
  }
  /** ListObjectVersions: keys in listing order, newest version first within a key (model/listing.ts rules). */
  listVersions(bucket: string, options: S.ListVersionsOptions): Reply<S.ListVersionsResult> {
    return this.inBucket(bucket, (o) => o.listVersions(options));
  }
  /** S3 listing rules: see worker/model/listing.ts (shared budget, no repeated prefixes). */
  listManifests(bucket: string, options: S.ListObjectsOptions): Reply<S.ListObjectsResult> {
    return this.inBucket(bucket, (o) => o.list(options));
  }
  /** Starts a multipart upload of `key` (CreateMultipartUpload): its id, metadata and checksum spec. NoSuchBucket. */
  insertUpload(bucket: string, key: string, options: { metadata: S.ObjectMetadata; checksum: S.MultipartChecksumSpec | null }): Reply<UploadRecord> {
    return this.inBucket(bucket, (o, mp) => {
      o.assertLockable(options.metadata);
      return mp.create(key, options);
    });
  }
  /** NoSuchUpload unless the upload exists for this key. */
  getUpload(bucket: string, key: string, uploadId: string): Reply<UploadRecord> {
    return this.inBucket(bucket, (_, mp) => mp.get(key, uploadId));
  }
  /** Records a part (replacing the same part number, whose unit is queued for deletion). NoSuchUpload. */
  putPart(bucket: string, key: string, uploadId: string, part: PartRecord, grace: Grace): Reply<void> {
    return this.inBucket(bucket, (_, mp) => mp.putPart(key, uploadId, part, grace));
  }
  /** Parts in ascending part number, after `partNumberMarker`, at most `maxParts`. NoSuchUpload. */
  listPartRecords(bucket: string, key: string, uploadId: string, marker: number, maxParts: number): Reply<{ parts: PartRecord[]; isTruncated: boolean }> {
    return this.inBucket(bucket, (_, mp) => mp.listParts(key, uploadId, marker, maxParts));
  }
  /**
   * Atomically: checks the upload still exists (NoSuchUpload) and `conditions`, commits
   * `manifest`, ends the upload and remembers its result (getCompletedUpload) for
   * COMPLETED_UPLOAD_MEMORY_MS; units of parts not named in the manifest and, as commitManifest
   * says, the replaced null version's units are queued for deletion. Answers as commitManifest.
   */
  async commitUpload(
    bucket: string,
    key: string,
    uploadId: string,
    manifest: ObjectManifest,
    conditions: CatalogWriteConditions,
    grace: Grace,
    origin?: EventOrigin,
  ): Promise<Reply<CommitResult>> {
    let due: number | null = null;
    const r = this.inBucket(bucket, (o, mp) => {
      enforceQuota(this.sql, bucket, this.quotaRange(), () => completionGrowth(this.sql, o, key, uploadId, manifest.size));
      const done = mp.complete(key, uploadId, manifest, conditions, grace);
      due = this.announce(bucket, { event: creationEvent(origin, true), ...this.created(key, manifest, done) }, origin);
      return done;
    });
    if (!r.error && degradedUnitsOf(manifest).length) await this.wakeRepairs(Date.now() + this.repairTiming().retryFirstMs);
    if (!r.error && due !== null) await this.wakeAt(due);
    return r;
  }
  /** The result of upload `uploadId` of `key` if it completed within COMPLETED_UPLOAD_MEMORY_MS, else null. */
  getCompletedUpload(bucket: string, key: string, uploadId: string): Reply<CompletedUpload | null> {
    return this.inBucket(bucket, (_, mp) => mp.completed(key, uploadId));
  }
  /** Ends the upload (NoSuchUpload if unknown); its parts' units are queued for deletion. */
  removeUpload(bucket: string, key: string, uploadId: string, grace: Grace): Reply<void> {
    return this.inBucket(bucket, (_, mp) => mp.abort(key, uploadId, grace));
  }
  /** ListMultipartUploads: uploads in key then initiation order (model/listing.ts rules). NoSuchBucket. */
  listUploadRecords(bucket: string, options: S.ListUploadsOptions): Reply<S.ListUploadsResult> {
    return this.inBucket(bucket, (_, mp) => mp.list(options));
  }
}
