/**
 * ColumnWriter: the streaming PUT path for one column unit (wide codes, k+m > 6).
 *
 * In a column unit data shard i holds the consecutive object bytes [i*S, (i+1)*S) (layout.ts),
 * so the body arrives shard by shard: data shard 0 is framed and uploaded block by block as its
 * bytes come in, then shard 1, and so on, while every block is folded into the m parity shards
 * (ParityBuilder, ISA-L's encode update). Once the last data block is in, parity is final and
 * the m parity shards are uploaded from wasm memory.
 *
 * Invariants:
 * - Memory is m parity shards of S bytes in wasm, one block, and two framed-block buffers per
 *   open upload: never the k data shards. S is bounded by the unit store (ColumnPlan).
 * - At most 6 uploads are open at once (ShardSet's slots): a data shard's upload ends when its
 *   last block and footer are queued, so the next one starts.
 * - A data shard finished before the rest of its unit carries a partial footer (format.ts); the
 *   last data shard and the parity shards carry the complete one. When this unit ends its write
 *   (`last`), the complete footer holds the write's MD5 and checksum, so the body's end is
 *   checked (IncompleteBody) before it; earlier segments of a write carry zeros there.
 * - Failures, quorum and release of the body: as UnitWriter.
 */
import { createCoder, type Coder, type ParityBuilder } from '../../coder-wasm/index.ts';
import type { CodedUnit } from '../format/manifest.ts';
import type { UnitFeed } from './body-feed.ts';
import type { ShardFooter } from '../format/shard-file.ts';
import { ShardSet, type UnitGeometry } from './shard-set.ts';
import { MAX_OPEN_SUBREQUESTS } from './subrequests.ts';

export interface WriteColumnInput extends UnitGeometry {
  /** The body, positioned at this unit's first byte. */
  feed: UnitFeed;
  /** This unit ends its write: the body must end with it, and its footer carries the digests. */
  last: boolean;
}

export class ColumnWriter {
  private readonly coder: Coder;
  private readonly parity: ParityBuilder;
  private readonly shards: ShardSet;

  constructor(private readonly input: WriteColumnInput) {
    if (input.codec !== 'rs-cauchy-gf8') throw new TypeError('a column unit is Reed-Solomon coded');
    this.shards = new ShardSet(input, 'column');
    this.coder = createCoder(input.k, input.m);
    this.parity = this.coder.parityBuilder(this.shards.layout.stripeData, Math.min(input.blockSize, this.shards.layout.stripeData));
  }

  async write(): Promise<{ unit: CodedUnit }> {
    const { shards, input } = this;
    try {
      for (let i = 0; i < input.k; i++) {
        await this.writeDataShard(i);
        if (i < input.k - 1) shards.finishShard(i, shards.footer(null)); // partial: shards 0..i are known
        shards.checkQuorum();
      }
      if (input.last) await input.feed.expectEnd();
      this.hashParity();
      const complete = shards.footer(input.last ? input.feed.digest.result() : null);
      shards.finishShard(input.k - 1, complete);
      await this.writeParity(complete);
      const written = await shards.settle();
      return { unit: shards.record(complete, written, input.last ? complete.md5 : null) };
    } catch (err) {
      input.feed.release();
      throw await shards.fail(err);
    } finally {
      this.parity.free();
      this.coder.free();
    }
  }

  /** Data shard i, block by block from the body: framed, uploaded, folded into parity. */
  private async writeDataShard(i: number): Promise<void> {
    const layout = this.shards.layout;
    const parity = this.parity;
    for (let j = 0; j < layout.stripes; j++) {
      const len = layout.blockLen(j);
      const data = layout.dataSpan(j, i).length;
      await this.input.feed.fill(data, () => parity.block());
      if (data < len) parity.block().fill(0, data, len); // zero padding past the object's end
      const file = this.shards.files[i]!;
      file.hashBlock(j, (seed) => parity.blockXxh64(len, seed));
      parity.addBlock(i, j * this.input.blockSize, len);
      // The sink copies the block out of wasm memory before the next block is read into it.
      await file.writeBlock(j, () => parity.block().subarray(0, len));
      if (!this.shards.sink(i).ok) this.shards.checkQuorum();
    }
  }

  /** Every parity block's checksum, once parity is final. */
  private hashParity(): void {
    const { layout, files } = this.shards;
    for (let r = 0; r < this.input.m; r++) {
      for (let j = 0; j < layout.stripes; j++) {
        files[this.input.k + r]!.hashBlock(j, (seed) => this.parity.parityXxh64(r, j * this.input.blockSize, layout.blockLen(j), seed));
      }
    }
  }

  /**
   * The m parity shards, uploaded from wasm memory row by row, a group at a time: each upload
   * holds a subrequest slot until its footer, so at most 5 run together (one slot stays for the
   * last data shard's upload, which may still be finishing).
   */
  private async writeParity(complete: ShardFooter): Promise<void> {
    const { k, m, blockSize } = this.input;
    const { layout, files } = this.shards;
    for (let first = 0; first < m; first += MAX_OPEN_SUBREQUESTS - 1) {
      const group = Array.from({ length: Math.min(MAX_OPEN_SUBREQUESTS - 1, m - first) }, (_, g) => first + g);
      for (let j = 0; j < layout.stripes; j++) {
        const len = layout.blockLen(j);
        await Promise.all(group.map((r) => files[k + r]!.writeBlock(j, () => this.parity.parity(r).subarray(j * blockSize, j * blockSize + len))));
      }
      for (const r of group) this.shards.finishShard(k + r, complete);
      await Promise.all(group.map((r) => this.shards.sink(k + r).done));
    }
  }
}

export function writeColumn(input: WriteColumnInput): Promise<{ unit: CodedUnit }> {
  return new ColumnWriter(input).write();
}
