/**
 * ShardFileWriter: the one writer of the shard file format (docs/FORMAT.md): the header, then
 * block rows 0..rows-1, each framed as its XXH64 (8 bytes, little-endian, seeded by
 * `blockSeed(unitSalt(unitId), row, shardIndex)`) followed by the block, then the footer, whose
 * shard digest is the XXH64 of the block checksums written. The engine's writers (ShardSet:
 * UnitWriter, ColumnWriter), the shard rebuild of repair (engine/shard-rebuild.ts) and the mover's
 * shard copy (engine/shard-copy.ts) all frame through it.
 *
 * Contract:
 * - Everything follows from the header: the layout (how many rows, each block's length, the
 *   file's length for a Content-Length), the unit salt and the shard index.
 * - The writer owns the order: the header goes first (queued by the first write of any kind),
 *   rows in order, each hashed before it is written, the footer last, once every row is written
 *   and only if the footer's digest for this shard is the digest of the blocks written. A
 *   call out of order throws ShardFormatError (a bug in the caller, never a client's fault).
 * - It holds no bytes and knows no transport: framed chunks go to a ChunkSink (the engine's
 *   ShardSink, an upload). `bytes()` is called by the sink, synchronously, when it copies the
 *   chunk, so the caller may pass views of wasm memory (which move when memory grows).
 * - The checksum is computed by the caller (`hash(seed)`), over the block where it lies (wasm
 *   stripe or parity memory), so the bytes are hashed once, in place.
 */
import { checksums } from '../../coder-wasm/index.ts';
import { BLOCK_CHECKSUM_BYTES, UnitLayout } from './layout.ts';
import { ShardFormatError, blockSeed, encodeFooter, encodeHeader, footerOfShard, unitSalt, type ShardFooter, type ShardHeader } from './shard-file.ts';

/** Where framed chunks go, in order (the engine's ShardSink is one). */
export interface ChunkSink {
  /** Queues the bytes `parts()` returns, back to back, as one chunk; `parts` is called once, synchronously, when they are copied. */
  write(parts: () => readonly Uint8Array[]): Promise<void>;
}

export class ShardFileWriter {
  readonly shardIndex: number;
  readonly headerBytes: Uint8Array;
  readonly layout: UnitLayout;
  /** The XXH64 of every block hashed so far, in row order. */
  readonly blockSums: bigint[] = [];
  private readonly salt: bigint;
  private headerQueued = false;
  private rowsWritten = 0;
  private finished = false;

  constructor(
    readonly header: ShardHeader,
    private readonly out: ChunkSink,
  ) {
    this.shardIndex = header.shardIndex;
    this.headerBytes = encodeHeader(header);
    this.layout = new UnitLayout(header.size, header.k, header.m, header.blockSize, this.headerBytes.length, header.layout);
    this.salt = unitSalt(header.unitId);
  }

  /** Bytes of the whole file: header, framed blocks, footer. */
  get fileLen(): number {
    return this.layout.shardFileLen();
  }

  /** Queues the header (done by the first write of any kind when not called before). */
  writeHeader(): Promise<void> {
    if (this.headerQueued) throw new ShardFormatError(`shard ${this.shardIndex}: header written twice`);
    this.headerQueued = true;
    const bytes = this.headerBytes;
    return this.out.write(() => [bytes]);
  }

  /** Records row `row`'s block checksum: `hash(seed)` is the block's XXH64 under `seed`. Rows in order. */
  hashBlock(row: number, hash: (seed: bigint) => bigint): bigint {
    if (row !== this.blockSums.length || row >= this.layout.stripes)
      throw new ShardFormatError(`shard ${this.shardIndex}: row ${row} hashed out of order (${this.blockSums.length} of ${this.layout.stripes} hashed)`);
    const sum = hash(blockSeed(this.salt, row, this.shardIndex));
    this.blockSums.push(sum);
    return sum;
  }

  /** Queues row `row`, hashed before: its checksum, then `bytes()` (exactly the row's block length). */
  writeBlock(row: number, bytes: () => Uint8Array): Promise<void> {
    if (row !== this.rowsWritten || row >= this.blockSums.length)
      throw new ShardFormatError(`shard ${this.shardIndex}: row ${row} written out of order or before it was hashed`);
    this.rowsWritten++;
    if (!this.headerQueued) void this.writeHeader();
    const sum = checksumBytes(this.blockSums[row]!);
    const len = this.layout.blockLen(row);
    return this.out.write(() => {
      const block = bytes();
      if (block.length !== len) throw new ShardFormatError(`shard ${this.shardIndex}: row ${row} is ${block.length} bytes, not ${len}`);
      return [sum, block];
    });
  }

  /** hashBlock then writeBlock. */
  block(row: number, hash: (seed: bigint) => bigint, bytes: () => Uint8Array): Promise<void> {
    this.hashBlock(row, hash);
    return this.writeBlock(row, bytes);
  }

  /** This shard's digest: XXH64 over its block checksums (little-endian), seeded by its index. */
  digest(): bigint {
    return digestOf(this.blockSums, this.shardIndex);
  }

  /**
   * Queues the footer this shard carries given its unit's complete footer (footerOfShard: a
   * column unit's early data shards carry a partial one). Every row must be written, and
   * `complete` must hold this shard's own digest.
   */
  writeFooter(complete: ShardFooter): Promise<void> {
    if (this.finished) throw new ShardFormatError(`shard ${this.shardIndex}: footer written twice`);
    if (this.rowsWritten !== this.layout.stripes)
      throw new ShardFormatError(`shard ${this.shardIndex}: footer after ${this.rowsWritten} of ${this.layout.stripes} rows`);
    if (complete.shardDigests[this.shardIndex] !== this.digest())
      throw new ShardFormatError(`shard ${this.shardIndex}: the footer's digest is not the digest of the blocks written`);
    this.finished = true;
    if (!this.headerQueued) void this.writeHeader();
    const bytes = encodeFooter(footerOfShard(complete, this.header, this.shardIndex));
    return this.out.write(() => [bytes]);
  }
}

/** A block checksum as it is stored before the block: 8 bytes, little-endian. */
export function checksumBytes(sum: bigint): Uint8Array {
  const out = new Uint8Array(BLOCK_CHECKSUM_BYTES);
  new DataView(out.buffer).setBigUint64(0, sum, true);
  return out;
}

/** A shard's digest: XXH64 over its block checksums (little-endian), seeded by its index. */
export function digestOf(sums: readonly bigint[], shardIndex: number): bigint {
  const bytes = new Uint8Array(8 * sums.length);
  const view = new DataView(bytes.buffer);
  sums.forEach((v, j) => view.setBigUint64(8 * j, v, true));
  return checksums().xxh64(bytes, BigInt(shardIndex));
}
