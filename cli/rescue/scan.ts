/**
 * Finding the shard files of every source and reading their headers (docs/FORMAT.md: magic,
 * length, JSON, XXH64), with no catalog. Each good shard is indexed under its canonical key
 * `sg1/<bucket>/<unitId>/<i>` in a ShardIndex, a read-only Backend that the engine's own readers
 * (unit-reader.ts, column-reader.ts, shard-files.ts) read through whatever source holds it.
 * Files that are not shards are skipped; shards whose header fails its checksum, or whose name
 * disagrees with their header, are reported.
 */
import { HEADER_MAGIC, HEADER_PREFIX_BYTES, decodeHeader, headerLength, type ShardHeader } from '../../worker/format/shard-file.ts';
import { parseShardKey, shardKey } from '../../worker/format/shard-key.ts';
import { BackendError, type Backend, type BlobInfo, type ByteRange, type GetResult, type ListPage } from '../../backends/types.ts';
import type { ShardSource } from './sources.ts';

export interface FoundShard {
  source: ShardSource;
  /** The file's key in its source. */
  sourceKey: string;
  size: number;
  header: ShardHeader;
  headerLen: number;
}

export interface BadFile {
  source: string;
  key: string;
  problem: string;
}

async function readBytes(backend: Backend, key: string, length: number): Promise<Uint8Array> {
  const { body } = await backend.get(key, { offset: 0, length });
  const out = new Uint8Array(length);
  let at = 0;
  for await (const piece of body as unknown as AsyncIterable<Uint8Array>) {
    out.set(piece.subarray(0, length - at), at);
    at += piece.length;
  }
  return out.subarray(0, at);
}

/** The shards of every source whose header verifies; `bucket` limits the scan. */
export async function scanSources(sources: ShardSource[], bucket: string | undefined, onFile: (files: number) => void = () => {}): Promise<{ shards: FoundShard[]; bad: BadFile[]; files: number }> {
  const shards: FoundShard[] = [];
  const bad: BadFile[] = [];
  let files = 0;
  for (const source of sources) {
    for await (const file of source.walk(bucket)) {
      onFile(++files);
      const named = parseShardKey(file.key);
      if (file.size < HEADER_PREFIX_BYTES) continue;
      try {
        const first = await readBytes(source.backend, file.key, Math.min(file.size, 4096));
        if (!HEADER_MAGIC.every((b, i) => first[i] === b)) {
          if (named) bad.push({ source: source.name, key: file.key, problem: 'not a shard file (bad magic)' });
          continue;
        }
        const headerLen = headerLength(first);
        if (headerLen > file.size) throw new Error(`header of ${headerLen} bytes in a file of ${file.size}`);
        const header = decodeHeader(headerLen <= first.length ? first.subarray(0, headerLen) : await readBytes(source.backend, file.key, headerLen));
        if (named && (named.bucket !== header.bucket || named.unitId !== header.unitId || named.shardIndex !== header.shardIndex)) {
          throw new Error(`its header says ${shardKey(header.bucket, header.unitId, header.shardIndex)}`);
        }
        if (bucket !== undefined && header.bucket !== bucket) continue;
        shards.push({ source, sourceKey: file.key, size: file.size, header, headerLen });
      } catch (err) {
        bad.push({ source: source.name, key: file.key, problem: String((err as Error)?.message ?? err) });
      }
    }
  }
  return { shards, bad, files };
}

/**
 * Every shard found, under its canonical key, as one read-only Backend: the engine's readers ask
 * for `sg1/<bucket>/<unitId>/<i>` and get the bytes of whichever source holds it (NotFound for a
 * shard no source has). Shards can be taken out (`forget`) once found damaged.
 */
export class ShardIndex implements Backend {
  readonly id = 'rescue';
  readonly domain = 'rescue';
  private readonly byKey = new Map<string, FoundShard>();

  constructor(shards: FoundShard[]) {
    for (const s of shards) {
      const key = shardKey(s.header.bucket, s.header.unitId, s.header.shardIndex);
      if (!this.byKey.has(key)) this.byKey.set(key, s); // a second copy of the same shard: the first source wins
    }
  }

  find(key: string): FoundShard | undefined {
    return this.byKey.get(key);
  }

  forget(key: string): void {
    this.byKey.delete(key);
  }

  private located(key: string): FoundShard {
    const s = this.byKey.get(key);
    if (!s) throw new BackendError(this.id, 'NotFound', key);
    return s;
  }

  async get(key: string, range?: ByteRange): Promise<GetResult> {
    const s = this.located(key);
    return s.source.backend.get(s.sourceKey, range);
  }

  async head(key: string): Promise<BlobInfo> {
    const s = this.located(key);
    return s.source.backend.head(s.sourceKey);
  }

  async put(): Promise<void> {
    throw new BackendError(this.id, 'Unavailable', 'read only');
  }
  async delete(): Promise<void> {
    throw new BackendError(this.id, 'Unavailable', 'read only');
  }
  async list(): Promise<ListPage> {
    throw new BackendError(this.id, 'Unavailable', 'not listable');
  }
}
