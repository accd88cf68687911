/**
 * The catalog's ports, one per consumer, so that each layer sees only what it uses: every call
 * names its bucket, and every key-scoped call its key (the unit verbs the unit's key, last: the
 * catalog routes them by it, as it routes the key's versions; a unit not stored under that key
 * is one not stored). A port is derived, never declared: the verbs whose rows in the operation
 * table (operations.ts) name it, as DurableCatalog answers them (a forwarded verb's type comes
 * from its CatalogObject method and row, an `own` one's from DurableCatalog's method), each with
 * its method's doc comment as its contract. A port that needs another's verbs adds them here.
 * - BucketCatalog and ObjectCatalog: the object store (engine/ec-store.ts);
 * - UpkeepCatalog: repair, scrub, moves and rebuild (upkeep/), by unit; GarbageCatalog: the collector;
 * - HealthCatalog: what ops reads (ops/data-health.ts);
 * - LifecycleCatalog, KeyCatalog, RestripeCatalog, JournalCatalog, QuotaCatalog,
 *   PartitionCatalog: those jobs and the admin API; AdoptCatalog and AdoptChainCatalog, declared
 *   by their consumer (model/adopt-backfill.ts, below the catalog), are checked against theirs.
 * `Catalog` is all of them: what the composition root builds.
 */
import type { OPERATIONS, PortName } from './operations.ts';
import type { DurableCatalog } from './durable-catalog.ts';
import type { QuotaSetter } from './quota-set.ts';
import type { AdoptCatalog as AdoptPort, AdoptChainCatalog as AdoptChainPort } from '../model/adopt-backfill.ts';

/** Port verbs DurableCatalog answers with no operation of their name (they span instances or keep state), with their port. */
interface ClientVerbs {
  insertBucket: 'BucketCatalog';
  removeBucket: 'BucketCatalog';
  cachedBucketSettings: 'BucketCatalog';
  splitBucketStatically: 'PartitionCatalog';
  partitionsOf: 'PartitionCatalog';
  journalInstances: 'JournalCatalog';
}

type Table = typeof OPERATIONS;
/** Each port verb's port. */
type Homes = { [K in keyof Table as Table[K] extends { port: PortName } ? K : never]: Table[K] extends { port: infer P } ? P : never } & ClientVerbs;
/** The verbs of port `P`. */
type VerbsOf<P extends PortName> = { [K in keyof Homes]: Homes[K] extends P ? K : never }[keyof Homes];
/** Port `P` as DurableCatalog answers it (Pick keeps each method's doc comment). */
type Port<P extends PortName> = Pick<DurableCatalog, VerbsOf<P>>;

/** The bucket list, which every sweep over the buckets starts from. */
export type BucketList = Port<'BucketList'>;
/** The collector's verbs (upkeep/collector.ts): units whose shards are to be deleted. */
export type GarbageCatalog = Port<'GarbageCatalog'>;
/** A bucket's life and settings. */
export type BucketCatalog = Port<'BucketCatalog'> & BucketList;
/** Objects, versions and multipart uploads of a bucket. */
export type ObjectCatalog = Port<'ObjectCatalog'> & BucketCatalog;
/** The catalog journal (sql-journal.ts, format/journal.ts): instances are named by bucket or partition, and the bucket list by BUCKET_LIST_INSTANCE. */
export type JournalCatalog = Port<'JournalCatalog'> & Pick<GarbageCatalog, 'queueGarbage'>;
/** What ops reads (ops/data-health.ts): each bucket's health, the deleted buckets' garbage, the bucket list's journal, the catalog-loss record. */
export type HealthCatalog = Port<'HealthCatalog'> & BucketList & Pick<JournalCatalog, 'journalStatus' | 'catalogLoss'>;
/** Repair, scrub, moves and rebuild (upkeep/), by unit. */
export type UpkeepCatalog = Port<'UpkeepCatalog'> & BucketList & GarbageCatalog & Pick<HealthCatalog, 'deletedBucketGarbage'>;
/** What the lifecycle job reads and records (upkeep/lifecycle.ts); it deletes through the object store, as DeleteObject does. */
export type LifecycleCatalog = Port<'LifecycleCatalog'> & BucketList & Pick<ObjectCatalog, 'listUploadRecords'>;
/**
 * The key table of named KMS keys (sql-kms-keys.ts, in the bucket list's instance): records as
 * JSON (model/kms-key.ts KmsKeyRecord), each replaced only if unchanged since read.
 */
export type KmsKeyCatalog = Port<'KmsKeyCatalog'>;
/**
 * Key rotation (upkeep/rotate-keys.ts): the records that may hold wrapped data keys, paged, and
 * replaced only if unchanged since read. The catalog never holds a key.
 */
export type KeyCatalog = Port<'KeyCatalog'> & BucketList & KmsKeyCatalog;
/** Re-striping (upkeep/restripe.ts): versions paged in key order, each rewritten only if unchanged since read. */
export type RestripeCatalog = Port<'RestripeCatalog'> & BucketList & Pick<HealthCatalog, 'bucketHealth'> & Pick<ObjectCatalog, 'reserveUnits'>;
/** Bucket quotas and usage (catalog/quota.ts, docs/QUOTAS.md): the admin API's and the status's. */
export type QuotaCatalog = Port<'QuotaCatalog'>;
/** A bucket's partitions (docs/PARTITIONS.md): the map, splits and merges, bulk loads, figures. */
export type PartitionCatalog = Port<'PartitionCatalog'>;
/** The adoption backfill's record (model/adopt-backfill.ts declares what it takes; this is checked to be it). */
export type AdoptCatalog = Port<'AdoptCatalog'>;
export type AdoptChainCatalog = Port<'AdoptChainCatalog'>;

/** Every port verb: what the composition root builds (DurableCatalog). */
export type Catalog = Pick<DurableCatalog, keyof Homes>;

// The ports their consumers declare (below the catalog, or called by DurableCatalog) are what the rows derive.
const consumersAgree: [AdoptCatalog, AdoptChainCatalog, QuotaCatalog & PartitionCatalog] extends [AdoptPort, AdoptChainPort, QuotaSetter] ? true : never = true;
void consumersAgree;
