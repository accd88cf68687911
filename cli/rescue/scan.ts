/**
 * Finding the shard files of every source and reading their headers (docs/FORMAT.md: magic,
 * length, JSON, XXH64), with no catalog. Each good shard is indexed under its canonical key
 * `sg1/<bucket>/<unitId>/<i>` in a ShardIndex, a read-only Backend that the engine's own readers
 * (unit-reader.ts, column-reader.ts, shard-files.ts) read through whatever source holds it.
 * Files that are not shards are skipped; shards whose header fails its checksum, or whose name
 * disagrees with their header, are reported.
 * Sealed shards (format/seal.ts) name neither bucket nor key: their header is opened with the key
 * ring (format/sealed-header.ts). One whose key is not given is "locked": kept apart with what
 * can be known without the key (unit, geometry, the key id it needs, the bucket its file name
 * says if it has one) and indexed under the pseudo-bucket SEALED_BUCKET, so its stored bytes can
 * still be checked block by block.
 */
import { HEADER_MAGIC, HEADER_PREFIX_BYTES, decodeHeader, headerLength, type ShardHeader } from '../../worker/format/shard-file.ts';
import { JOURNAL_BUCKET } from '../../worker/format/journal.ts';
import { SHARD_KEY_ROOT, bucketShardPrefixes, parseShardKey, parseTagRecordKey, shardKey, type ShardKeyParts } from '../../worker/format/shard-key.ts';
import type { HeaderSeal, KeyRing } from '../../worker/format/seal.ts';
import { openHeader, type OpenedHeader } from '../../worker/format/sealed-header.ts';
import { BackendError, type Backend, type BlobInfo, type ByteRange, type GetResult, type ListPage } from '../../backends/types.ts';
import type { ShardSource } from './sources.ts';
import { errorMessage } from '../../worker/model/error-message.ts';

export interface FoundShard {
  source: ShardSource;
  /** The file's key in its source. */
  sourceKey: string;
  size: number;
  /** The header as a reader uses it: a sealed one opened (identity and plaintext size restored, seal kept). */
  header: OpenedHeader;
  /** The header as stored (a sealed one: no identity, the stored size). */
  raw: ShardHeader;
  headerLen: number;
}

/** A sealed shard whose key was not given (or does not open it). */
export interface LockedShard {
  source: ShardSource;
  sourceKey: string;
  size: number;
  raw: ShardHeader & { seal: HeaderSeal };
  headerLen: number;
  /** The bucket its file name says (sg1/<bucket>/...), null when the name says nothing (a wrangler blob). */
  bucket: string | null;
  /** Why it could not be opened. */
  reason: string;
}

/** Where locked shards are indexed (not a bucket name S3 allows): `sg1/(sealed)/<unitId>/<i>`. */
export const SEALED_BUCKET = '(sealed)';

export interface BadFile {
  source: string;
  key: string;
  problem: string;
}

export interface ScanResult {
  shards: FoundShard[];
  locked: LockedShard[];
  /** Unit id -> the sources holding a tag record beside it (engine/tag-record.ts: tags set after the write), found by file name. */
  tagRecords: Map<string, Backend[]>;
  bad: BadFile[];
  files: number;
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

/** The shards of every source whose header verifies; `bucket` limits the scan, `ring` opens sealed headers. */
export async function scanSources(
  sources: ShardSource[],
  bucket: string | undefined,
  ring?: KeyRing,
  onFile: (files: number) => void = () => {},
): Promise<ScanResult> {
  const shards: FoundShard[] = [];
  const locked: LockedShard[] = [];
  const bad: BadFile[] = [];
  const tagRecords = new Map<string, Backend[]>();
  let files = 0;
  // A bucket's shards: under its name, or on its shelves (one per key of the ring: format/shelf.ts).
  // The catalog journal's segments too: they say what the catalog held of the bucket (journal.ts).
  const prefixes = bucket === undefined ? undefined : [...(await bucketShardPrefixes(bucket, ring)), ...(await bucketShardPrefixes(JOURNAL_BUCKET, ring))];
  const directories = new Set(prefixes?.map((p) => p.slice(SHARD_KEY_ROOT.length, -1)));
  /** Whether a file the walk found may be of `bucket` by its name (a directory source walks everything). */
  const mayBelong = (named: ShardKeyParts | null) => bucket === undefined || !named || directories.has(named.directory);
  for (const source of sources) {
    for await (const file of source.walk(prefixes)) {
      onFile(++files);
      const named = parseShardKey(file.key);
      const tagRecord = parseTagRecordKey(file.key);
      if (tagRecord) {
        // Read later by its canonical key, which is its name in this source (a wrangler blob, named
        // by a hash, is not recognised: its object keeps the tags of its write).
        tagRecords.set(tagRecord.unitId, [...(tagRecords.get(tagRecord.unitId) ?? []), source.backend]);
        continue;
      }
      if (!mayBelong(named)) continue;
      if (file.size < HEADER_PREFIX_BYTES) continue;
      try {
        const first = await readBytes(source.backend, file.key, Math.min(file.size, 4096));
        if (!HEADER_MAGIC.every((b, i) => first[i] === b)) {
          if (named) bad.push({ source: source.name, key: file.key, problem: 'not a shard file (bad magic)' });
          continue;
        }
        const headerLen = headerLength(first);
        if (headerLen > file.size) throw new Error(`header of ${headerLen} bytes in a file of ${file.size}`);
        const raw = decodeHeader(headerLen <= first.length ? first.subarray(0, headerLen) : await readBytes(source.backend, file.key, headerLen));
        if (named && (named.unitId !== raw.unitId || named.shardIndex !== raw.shardIndex)) {
          throw new Error(`its header says unit ${raw.unitId} shard ${raw.shardIndex}`);
        }
        const seal = raw.seal;
        if (seal && !ring?.has(seal.kid)) {
          locked.push({
            source,
            sourceKey: file.key,
            size: file.size,
            raw: raw as LockedShard['raw'],
            headerLen,
            bucket: named?.bucket ?? null,
            reason: `sealed under key "${seal.kid}", which was not given`,
          });
          continue;
        }
        let header: OpenedHeader;
        try {
          header = await openHeader(raw, ring);
        } catch (err) {
          if (!seal) throw err;
          // The ring has a key of that id, and it does not open this header: another key under the same id.
          locked.push({
            source,
            sourceKey: file.key,
            size: file.size,
            raw: raw as LockedShard['raw'],
            headerLen,
            bucket: named?.bucket ?? null,
            reason: errorMessage(err),
          });
          continue;
        }
        if (named && named.bucket !== null && named.bucket !== header.bucket)
          throw new Error(`its header says ${shardKey(header.bucket, header.unitId, header.shardIndex)}`);
        if (bucket !== undefined && header.bucket !== bucket && header.bucket !== JOURNAL_BUCKET) continue;
        shards.push({ source, sourceKey: file.key, size: file.size, header, raw, headerLen });
      } catch (err) {
        bad.push({ source: source.name, key: file.key, problem: errorMessage(err) });
      }
    }
  }
  return { shards, locked, tagRecords, bad, files };
}

/**
 * Every shard found, under its canonical key, as one read-only Backend: the engine's readers ask
 * for `sg1/<bucket>/<unitId>/<i>` and get the bytes of whichever source holds it (NotFound for a
 * shard no source has). Shards can be taken out (`forget`) once found damaged. Locked shards
 * (sealed, their key not given) are under `sg1/(sealed)/<unitId>/<i>`.
 */
export class ShardIndex implements Backend {
  readonly id = 'rescue';
  readonly domain = 'rescue';
  private readonly byKey = new Map<string, FoundShard | LockedShard>();

  constructor(shards: FoundShard[], locked: LockedShard[] = []) {
    for (const s of shards) {
      const key = shardKey(s.header.bucket, s.header.unitId, s.header.shardIndex);
      if (!this.byKey.has(key)) this.byKey.set(key, s); // a second copy of the same shard: the first source wins
    }
    for (const s of locked) {
      const key = shardKey(SEALED_BUCKET, s.raw.unitId, s.raw.shardIndex);
      if (!this.byKey.has(key)) this.byKey.set(key, s);
    }
  }

  find(key: string): FoundShard | LockedShard | undefined {
    return this.byKey.get(key);
  }

  forget(key: string): void {
    this.byKey.delete(key);
  }

  private located(key: string): FoundShard | LockedShard {
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
