/**
 * Routing: which CatalogObject instance a catalog operation goes to, the one place that maps
 * buckets to instances (binding CATALOG, instances by name). Today a bucket is one instance,
 * 'bucket:' + its name, and the bucket list is the instance BUCKET_LIST_INSTANCE ('__buckets__':
 * no bucket name collides with it). Each row of the operation table (operations.ts) names one of
 * the routes below; a catalog spread over several instances per bucket (issue 39's partitions)
 * changes these functions, not the table and not the ports.
 * Known gap: nothing here knows keys or unit ids yet (one instance holds a whole bucket).
 */
import type { GarbageUnits } from './types.ts';
import { BUCKET_LIST_INSTANCE } from '../format/journal.ts';

/** The instance holding the bucket list (and the garbage and journal of deleted buckets). */
export const BUCKET_LIST = BUCKET_LIST_INSTANCE;

/** The instance name of a bucket's catalog. */
export function bucketInstance(bucket: string): string {
  return 'bucket:' + bucket;
}

/** A journal instance (format/journal.ts: BUCKET_LIST_INSTANCE, or a bucket's name) as an instance name. */
export function journalInstance(instance: string): string {
  return instance === BUCKET_LIST_INSTANCE ? BUCKET_LIST : bucketInstance(instance);
}

/**
 * The routes, each the instance name for an operation's arguments (as the object takes them):
 * - registry: the bucket list's instance;
 * - bucket: the instance of the bucket named first;
 * - garbage: the instance of the bucket the garbage entry (first argument) names;
 * - journal: the journal instance named first (the bucket list's, or a bucket's);
 * - sweep: takeDueGarbage(now, limit, bucket?): the bucket's instance, or without one the bucket list's.
 */
export const ROUTES = {
  registry: () => BUCKET_LIST,
  bucket: (args: readonly unknown[]) => bucketInstance(args[0] as string),
  garbage: (args: readonly unknown[]) => bucketInstance((args[0] as GarbageUnits).bucket),
  journal: (args: readonly unknown[]) => journalInstance(args[0] as string),
  sweep: (args: readonly unknown[]) => (args[2] === undefined ? BUCKET_LIST : bucketInstance(args[2] as string)),
} as const satisfies Record<string, (args: readonly unknown[]) => string>;

export type Route = keyof typeof ROUTES;

/** The instance name `route` gives for `args`. */
export function instanceFor(route: Route, args: readonly unknown[]): string {
  return ROUTES[route](args);
}
