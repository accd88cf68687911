/**
 * The product's catalog in one Node process: DurableCatalog over CatalogObject instances kept in
 * a Map (one per name, as Durable Object ids), each with its own SQLite database (sql.js through
 * test/support/sqlite-storage.ts). So Node tests run the same SQL and the same routing as a
 * deployed gateway. Calls go through a stub that clones arguments and results, as RPC does, and
 * runs one call at a time per instance up to its first await, as a Durable Object does.
 */
import { DurableCatalog } from '../../worker/catalog/durable-catalog.ts';
import { CatalogObject } from '../../worker/catalog/durable-object.ts';
import type { CatalogOptions } from '../../worker/catalog/rules.ts';
import { SqliteStorage } from './sqlite-storage.ts';

export interface LocalCatalogInstance {
  object: CatalogObject;
  storage: SqliteStorage;
}

/** A DurableObjectNamespace<CatalogObject> of in-process instances. */
export class LocalCatalogNamespace {
  readonly instances = new Map<string, LocalCatalogInstance>();
  /** Round trips to the instances, by method name (what the bench counts as catalog calls). */
  readonly calls = new Map<string, number>();

  private readonly env: Record<string, unknown>;
  // Instances reach each other as Durable Objects do, through their own binding (a split bucket's
  // root pushes its settings to its partitions: worker/catalog/partition-mirror.ts).
  constructor(env: Record<string, unknown> = {}) {
    this.env = { CATALOG: this, ...env };
  }

  idFromName(name: string): DurableObjectId {
    return { name, toString: () => name, equals: (o: DurableObjectId) => o.name === name } as DurableObjectId;
  }

  /** The instance named `name`, created (empty, or over `storage`) on first use. */
  instance(name: string, storage?: SqliteStorage): LocalCatalogInstance {
    let found = this.instances.get(name);
    if (!found) {
      const store = storage ?? new SqliteStorage();
      found = { object: new CatalogObject(store.objectState(), this.env as Cloudflare.Env), storage: store };
      this.instances.set(name, found);
    }
    return found;
  }

  /**
   * The instance as a process restart leaves it (a crash, or workerd evicting it): a new
   * CatalogObject over the same storage, nothing of the old one's memory kept.
   */
  restart(name: string): void {
    const found = this.instances.get(name);
    if (!found) throw new Error(`no instance ${name}`);
    this.instances.set(name, { object: new CatalogObject(found.storage.objectState(), this.env as Cloudflare.Env), storage: found.storage });
  }

  get(id: DurableObjectId): DurableObjectStub<CatalogObject> {
    const name = id.name!;
    return new Proxy(
      {},
      {
        get: (_, method: string) => {
          if (method === 'then') return undefined; // not a thenable
          return async (...args: unknown[]) => {
            const target = this.instance(name).object as unknown as Record<string, (...a: unknown[]) => unknown>;
            if (typeof target[method] !== 'function') throw new TypeError(`CatalogObject has no method ${method}`);
            // One round trip of the operation it carries: dispatch (operations.ts), or fenced as older gateways send it.
            const counted = method === 'dispatch' ? String(args[0]) : method === 'fenced' ? String(args[1]) : method;
            this.calls.set(counted, (this.calls.get(counted) ?? 0) + 1);
            return structuredClone(await target[method]!(...structuredClone(args)));
          };
        },
      },
    ) as DurableObjectStub<CatalogObject>;
  }
}

/** A whole catalog (bucket list and buckets) in this process; `namespace` reaches its instances. */
export function localCatalog(
  options: CatalogOptions = {},
  namespace = new LocalCatalogNamespace(),
  /**
   * `split: false`: buckets stay one partition even in the `split` project (a rebuild makes them so).
   * `splitEvery`: after every n-th write (whatever its answer), the partition holding its key is
   * split on line at its median (Catalog.splitPartition), or every third time merged into its lower
   * neighbour (Catalog.mergePartition), so suites meet splits and merges between any two calls.
   */
  hooks: { split?: false; splitEvery?: number } = {},
): DurableCatalog & { namespace: LocalCatalogNamespace } {
  const catalog = new DurableCatalog(namespace as unknown as DurableObjectNamespace<CatalogObject>, options) as DurableCatalog & {
    namespace: LocalCatalogNamespace;
  };
  catalog.namespace = namespace;
  const split = process.env.SHARDGATE_TEST_SPLIT;
  if (split && hooks.split !== false) {
    // The `split` test project (vitest.config.ts): every bucket is cut into partitions as it is
    // made, so suites written for one-partition buckets hold a split catalog to the same answers.
    const boundaries = split === '1' ? DEFAULT_SPLIT : split.split(',');
    const insert = catalog.insertBucket.bind(catalog);
    catalog.insertBucket = async (bucket, region, options) => {
      await insert(bucket, region, options);
      await catalog.splitBucketStatically(bucket, boundaries);
    };
  }
  // The `split` project also splits partitions on line every few writes (SHARDGATE_TEST_SPLIT_EVERY).
  const every = hooks.splitEvery ?? (hooks.split !== false ? Number(process.env.SHARDGATE_TEST_SPLIT_EVERY ?? 0) : 0);
  if (every > 0) splitOnLine(catalog, every);
  return catalog;
}

const WRITES = ['commitManifest', 'removeManifest', 'insertUpload', 'putPart', 'commitUpload', 'removeUpload'] as const;

function splitOnLine(catalog: DurableCatalog & { namespace: LocalCatalogNamespace }, every: number): void {
  let writes = 0;
  for (const name of WRITES) {
    const write = (catalog[name] as (...a: unknown[]) => Promise<unknown>).bind(catalog);
    (catalog as unknown as Record<string, unknown>)[name] = async (...args: unknown[]) => {
      try {
        return await write(...args);
      } finally {
        if (++writes % every === 0) {
          // The harness's splits are not the suite's calls: tests counting catalog calls see none of them.
          const counted = new Map(catalog.namespace.calls);
          // Every third time the partition holding the key merges into its lower neighbour instead
          // (docs/PARTITIONS.md "Merges"), so suites meet merges between calls too.
          const merge = (writes / every) % 3 === 0;
          // Too few keys, a split point at a partition's first key, the first partition (no lower
          // neighbour), events waiting: nothing to split or merge, as it would be in a gateway.
          const move = merge ? catalog.mergePartition(args[0] as string, args[1] as string) : catalog.splitPartition(args[0] as string, args[1] as string);
          await move.catch((e: { code?: string }) => {
            if (!['InvalidRequest', 'InvalidArgument', 'NoSuchBucket', ...(merge ? ['SlowDown', 'OperationAborted'] : [])].includes(String(e.code))) throw e;
          });
          catalog.namespace.calls.clear();
          for (const [k, v] of counted) catalog.namespace.calls.set(k, v);
        }
      }
    };
  }
}

/** Boundaries cutting through the keys tests use most ('a/..', 'big', 'file-1', 'k', 'obj', 'photos/..', 'x'). */
const DEFAULT_SPLIT = ['a/', 'b', 'f', 'k', 'o', 'p', 't'];
