/**
 * UnitLayout: where every byte of a coded unit lives. Each shard file is: header, then block rows
 * j = 0..rows-1, each an 8-byte block checksum followed by the block, then a fixed-size footer
 * (docs/FORMAT.md). Row j of every shard forms one Reed-Solomon stripe: parity block j is coded
 * from the k data blocks j. Two ways to map object bytes onto data blocks:
 * - 'striped' (k+m <= 6: every shard streams at once): row s holds k × blockSize consecutive
 *   object bytes, data shard i the bytes [s*k*blockSize + i*b, +b) where b is the row's block
 *   length (blockSize, or for the last row ceil(rest / k), zero-padded).
 * - 'column' (wide codes, whose shards cannot all stream at once within Workers' 6 open
 *   subrequests): data shard i holds the consecutive object bytes [i*S, (i+1)*S) with
 *   S = ceil(size / k), cut into blocks of blockSize (the last one shorter), zero-padded past
 *   `size`. A writer sends data shard 0 whole, then shard 1, ... while folding each into parity.
 */
import { FOOTER_FIXED_BYTES, SHARD_DIGEST_BYTES } from './shard-file.ts';
import { storedSize } from './seal.ts';
import type { CodedUnit, UnitLayoutKind } from './manifest.ts';

export const BLOCK_CHECKSUM_BYTES = 8;

export class UnitLayout {
  /** Block rows (stripes) of every shard. */
  readonly stripes: number;
  /** Striped: object bytes per row (k × blockSize). Column: bytes per data shard (S). */
  readonly stripeData: number;
  readonly lastBlockLen: number;

  constructor(
    readonly size: number,
    readonly k: number,
    readonly m: number,
    readonly blockSize: number,
    readonly headerLen: number,
    readonly kind: UnitLayoutKind = 'striped',
  ) {
    if (kind === 'column') {
      this.stripeData = Math.ceil(size / k);
      this.stripes = Math.ceil(this.stripeData / blockSize);
      this.lastBlockLen = this.stripes === 0 ? 0 : this.stripeData - (this.stripes - 1) * blockSize;
    } else {
      this.stripeData = k * blockSize;
      this.stripes = Math.ceil(size / this.stripeData);
      const rest = size - (this.stripes - 1) * this.stripeData;
      this.lastBlockLen = this.stripes === 0 ? 0 : Math.ceil(rest / k);
    }
  }

  get shards(): number {
    return this.k + this.m;
  }

  /** Column layout: bytes of object data each data shard holds (the last one may hold fewer). */
  get shardData(): number {
    return this.kind === 'column' ? this.stripeData : this.stripes * this.blockSize;
  }

  /**
   * The longest block of any row, never more than blockSize: what a writer's stripe and its
   * uploads' buffers must hold. A unit of one row (a body smaller than k full blocks) has blocks
   * only as long as its data.
   */
  get largestBlock(): number {
    return this.stripes > 1 ? this.blockSize : Math.max(1, this.lastBlockLen);
  }

  blockLen(stripe: number): number {
    return stripe === this.stripes - 1 ? this.lastBlockLen : this.blockSize;
  }

  /** Object bytes of row `stripe` held by data shard i: [offset, offset + length). */
  dataSpan(stripe: number, shard: number): { offset: number; length: number } {
    const b = this.blockLen(stripe);
    const offset = this.kind === 'column' ? shard * this.stripeData + stripe * this.blockSize : stripe * this.stripeData + shard * b;
    return { offset, length: Math.max(0, Math.min(b, this.size - offset)) };
  }

  /** Offset in the shard file of row s's block checksum. */
  blockOffset(stripe: number): number {
    return this.headerLen + stripe * (BLOCK_CHECKSUM_BYTES + this.blockSize);
  }

  footerOffset(): number {
    return this.stripes === 0 ? this.headerLen : this.blockOffset(this.stripes - 1) + BLOCK_CHECKSUM_BYTES + this.lastBlockLen;
  }

  footerLen(): number {
    return FOOTER_FIXED_BYTES + SHARD_DIGEST_BYTES * this.shards;
  }

  shardFileLen(): number {
    return this.footerOffset() + this.footerLen();
  }

  /** Striped layout: rows touched by object bytes [start, end] (inclusive). */
  stripeRange(start: number, end: number): { first: number; last: number } {
    return { first: Math.floor(start / this.stripeData), last: Math.floor(end / this.stripeData) };
  }
}

/** The layout of shard i of a recorded unit (header lengths differ by the shard index's digits). */
export function shardLayout(unit: Pick<CodedUnit, 'size' | 'seal' | 'k' | 'm' | 'blockSize' | 'headerLens' | 'layout'>, i: number): UnitLayout {
  // The geometry is of the stored bytes: a sealed unit's records are longer than its plaintext.
  return new UnitLayout(storedSize(unit), unit.k, unit.m, unit.blockSize, unit.headerLens[i]!, unit.layout);
}
