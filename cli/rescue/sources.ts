/**
 * Where `shardgate rescue` and `verify` read shard files from, with no gateway: S3-compatible
 * buckets (the backends themselves, by URL) and local directories. A directory is walked whole
 * and every file that starts with the shard magic counts, whatever its name: a plain copy of a
 * backend bucket (`aws s3 sync s3://shards ./dir`: files under sg1/<bucket>/<unitId>/<i>) and a
 * wrangler/miniflare R2 bucket directory alike. Miniflare keeps each R2 object's bytes as one file
 * `<state>/v3/r2/<bucket>/blobs/<blob id>` (the key -> blob mapping lives in its own SQLite
 * database under v3/r2/miniflare-R2BucketObject/, which is not needed: a shard's header names its
 * bucket, unit and index). Sources are read only.
 * Known gaps: a directory blob of an object miniflare has deleted but not yet removed looks like
 * any other shard (it is a unit the gateway had superseded or deleted: newest-wins picks the
 * current one, but a deleted object can come back).
 */
import { createReadStream, existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { S3Backend } from '../../backends/s3.ts';
import { BackendError, type Backend, type BlobInfo, type ByteRange, type GetResult, type ListPage } from '../../backends/types.ts';
import { CliError } from '../command.ts';
import { bucketPrefix } from '../../worker/format/shard-key.ts';

/** A source of shard files: a read-only Backend and how to walk it. */
export interface ShardSource {
  /** What the operator named (a path or a URL without its secret). */
  name: string;
  backend: Backend;
  /** Candidate shard files: every file of a directory; a bucket's keys under `prefixes` (all of `sg1/` by default). */
  walk(prefixes?: string[]): AsyncIterable<{ key: string; size: number }>;
}

/** A local directory as a read-only Backend: keys are paths relative to it, with '/' separators. */
export class DirectoryBackend implements Backend {
  readonly domain = 'local';
  constructor(
    readonly id: string,
    readonly root: string,
  ) {}

  private path(key: string): string {
    const p = resolve(this.root, key);
    if (!p.startsWith(resolve(this.root) + sep)) throw new BackendError(this.id, 'NotFound', `${key}: outside ${this.root}`);
    return p;
  }

  async head(key: string): Promise<BlobInfo> {
    try {
      const s = statSync(this.path(key));
      return { size: s.size, lastModified: s.mtime };
    } catch {
      throw new BackendError(this.id, 'NotFound', key);
    }
  }

  async get(key: string, range?: ByteRange): Promise<GetResult> {
    const { size } = await this.head(key);
    if (range && range.offset + range.length > size) throw new BackendError(this.id, 'Corrupt', `${key}: range past the end (${size} bytes)`);
    if (range?.length === 0) return { size, body: new ReadableStream({ start: (c) => c.close() }) };
    const stream = createReadStream(
      this.path(key),
      range ? { start: range.offset, end: range.offset + range.length - 1, highWaterMark: 1 << 20 } : { highWaterMark: 1 << 20 },
    );
    return { size, body: Readable.toWeb(stream) as unknown as ReadableStream<Uint8Array> };
  }

  async put(): Promise<void> {
    throw new BackendError(this.id, 'Unavailable', 'a rescue source is read only');
  }
  async delete(): Promise<void> {
    throw new BackendError(this.id, 'Unavailable', 'a rescue source is read only');
  }
  async list(): Promise<ListPage> {
    throw new BackendError(this.id, 'Unavailable', 'walk() a directory source');
  }

  *files(dir = this.root): Generator<{ key: string; size: number }> {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, entry.name);
      if (entry.isDirectory()) yield* this.files(p);
      else if (entry.isFile()) yield { key: relative(this.root, p).split(sep).join('/'), size: statSync(p).size };
    }
  }
}

function directorySource(path: string): ShardSource {
  const backend = new DirectoryBackend(`dir:${path}`, path);
  return {
    name: path,
    backend,
    async *walk() {
      yield* backend.files();
    },
  };
}

/** `http(s)://[KEY:SECRET@]host[:port]/bucket[?region=R&style=virtual]`; keys default to AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. */
function s3Source(spec: string, env: NodeJS.ProcessEnv): ShardSource {
  const url = new URL(spec);
  const bucket = decodeURIComponent(url.pathname.replace(/^\/+|\/+$/g, ''));
  if (!bucket || bucket.includes('/')) throw new CliError(`${spec}: name the backend bucket as the URL's path (https://host/bucket)`);
  const accessKeyId = decodeURIComponent(url.username) || env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = decodeURIComponent(url.password) || env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey)
    throw new CliError(`${url.host}/${bucket}: no key (put KEY:SECRET@ in the URL, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)`);
  const name = `${url.protocol}//${url.host}/${bucket}`;
  const backend = new S3Backend({
    id: name,
    domain: url.host,
    endpoint: `${url.protocol}//${url.host}`,
    bucket,
    region: url.searchParams.get('region') ?? 'us-east-1',
    pathStyle: url.searchParams.get('style') !== 'virtual',
    accessKeyId,
    secretAccessKey,
    retries: 2,
    timeoutMs: 30_000,
  });
  return {
    name,
    backend,
    async *walk(prefixes = [bucketPrefix()]) {
      for (const prefix of prefixes) {
        let cursor: string | undefined;
        do {
          const page = await backend.list(prefix, cursor);
          for (const e of page.entries) yield { key: e.key, size: e.size };
          cursor = page.cursor;
        } while (cursor);
      }
    },
  };
}

/** The R2 bucket directories of a wrangler state directory (`.wrangler/state` or its v3/r2). */
export function wranglerStateDirs(state: string): string[] {
  const r2 = [join(state, 'v3', 'r2'), join(state, 'r2'), state].find((d) => existsSync(d) && readdirSync(d).some((n) => existsSync(join(d, n, 'blobs'))));
  if (!r2) throw new CliError(`${state}: no R2 bucket directories (…/v3/r2/<bucket>/blobs) found`);
  return readdirSync(r2)
    .filter((n) => !n.startsWith('miniflare-') && existsSync(join(r2, n, 'blobs')))
    .sort()
    .map((n) => join(r2, n));
}

export function openSources(specs: string[], env: NodeJS.ProcessEnv = process.env): ShardSource[] {
  return specs.map((spec) => {
    if (/^https?:\/\//i.test(spec)) return s3Source(spec, env);
    if (!existsSync(spec) || !statSync(spec).isDirectory()) throw new CliError(`${spec}: not a directory (or an http(s):// URL of an S3 bucket)`);
    return directorySource(spec);
  });
}
