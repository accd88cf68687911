/**
 * Routing: which CatalogObject instance a catalog operation goes to, the one place that maps
 * buckets to instances (binding CATALOG, instances by name). Today a bucket is one instance,
 * 'bucket:' + its name, and the bucket list is the instance BUCKET_LIST_INSTANCE ('__buckets__':
 * no bucket name collides with it). Each row of the operation table (operations.ts) names one of
 * the routes below; a catalog spread over several instances per bucket (issue 39's partitions)
 * changes these functions, not the table and not the ports.
 * Key-scoped operations are routed by their key, the unit verbs too (they name the unit's key:
 * a unit id names no partition, docs/PARTITIONS.md says why).
 */
import type { GarbageUnits } from './types.ts';
import { BUCKET_LIST_INSTANCE } from '../format/journal.ts';
import { ownerOf, type PartitionMap } from './partition-map.ts';

/** The instance holding the bucket list (and the garbage and journal of deleted buckets). */
export const BUCKET_LIST = BUCKET_LIST_INSTANCE;

/** The instance name of a bucket's catalog. */
export function bucketInstance(bucket: string): string {
  return 'bucket:' + bucket;
}

/** The instance name of partition `id` of a bucket (ids are never reused: partition-map.ts). */
export function partitionInstance(bucket: string, id: string): string {
  return PARTITION_PREFIX + bucket + '/' + id;
}

/**
 * A journal instance (format/journal.ts: BUCKET_LIST_INSTANCE, a bucket's name, or a partition's
 * `<bucket>/<id>`: bucket names hold no '/') as an instance name.
 */
export function journalInstance(instance: string): string {
  if (instance === BUCKET_LIST_INSTANCE) return BUCKET_LIST;
  return instance.includes('/') ? PARTITION_PREFIX + instance : bucketInstance(instance);
}

/** The journal instance of a partition's instance name (`part:<bucket>/<id>` -> `<bucket>/<id>`). */
export function partitionJournal(instance: string): string {
  return instance.slice(PARTITION_PREFIX.length);
}

/** The bucket a journal instance belongs to (a partition's: the part before its '/'). */
export function journalBucket(instance: string): string {
  return instance.split('/')[0]!;
}

const PARTITION_PREFIX = 'part:';

/**
 * The routes, each the instance name for an operation's arguments (as the object takes them).
 * Within a bucket a route names the operation's scope (docs/PARTITIONS.md), so that a bucket
 * spread over several instances changes these functions and nothing else; today a bucket is one
 * instance, and every scope within it names that instance:
 * - registry: the bucket list's instance;
 * - root: the bucket's settings and life (its root instance, named first);
 * - key: one key's versions, uploads and units: the instance holding `key` (partitionOf);
 * - walk: a listing in key order, from the instance holding its start (across several: the client
 *   goes on to the next, docs/PARTITIONS.md);
 * - partition: one instance's own upkeep state (cursors, progress, worklists);
 * - sum: a figure summed over the bucket's instances;
 * - garbage: the instance of the bucket the garbage entry (first argument) names;
 * - journal: the journal instance named first (the bucket list's, or a bucket's);
 * - sweep: takeDueGarbage(now, limit, bucket?): the bucket's instance, or without one the bucket list's.
 */
export const ROUTES = {
  registry: () => BUCKET_LIST,
  root: (args: readonly unknown[]) => bucketInstance(args[0] as string),
  key: (args: readonly unknown[], key?: string) => partitionOf(args[0] as string, key!),
  walk: (args: readonly unknown[]) => bucketInstance(args[0] as string),
  partition: (args: readonly unknown[]) => bucketInstance(args[0] as string),
  sum: (args: readonly unknown[]) => bucketInstance(args[0] as string),
  garbage: (args: readonly unknown[]) => bucketInstance((args[0] as GarbageUnits).bucket),
  journal: (args: readonly unknown[]) => journalInstance(args[0] as string),
  sweep: (args: readonly unknown[]) => (args[2] === undefined ? BUCKET_LIST : bucketInstance(args[2] as string)),
} as const satisfies Record<string, (args: readonly unknown[], key?: string) => string>;

export type Route = keyof typeof ROUTES;

/** The routes inside one bucket, whose request-path operations carry the bucket's settings stamp. */
export const IN_BUCKET: ReadonlySet<Route> = new Set<Route>(['root', 'key', 'walk', 'partition', 'sum']);

/**
 * The instance holding `key` of `bucket` by `map` (the root's, as an isolate last saw it); without
 * one, the bucket's root, which owns every key until the bucket is split (docs/PARTITIONS.md).
 */
export function partitionOf(bucket: string, key: string, map?: PartitionMap): string {
  return map ? ownerOf(map, key) : bucketInstance(bucket);
}

/** The instance `route` gives for `args` (`key`: the key a key-scoped operation is routed by). */
export function instanceFor(route: Route, args: readonly unknown[], key?: string): string {
  return ROUTES[route](args, key);
}
