/**
 * UnitLayout: where every byte of a coded unit lives. A unit of `size` bytes is cut into stripes
 * of k * blockSize bytes; within stripe s, data shard i holds the contiguous bytes
 * [s*k*blockSize + i*b, +b) where b is the stripe's block length (blockSize, or for the last
 * stripe ceil(rest / k), zero-padded). Each shard file is: header, then per stripe an 8-byte
 * block checksum followed by the block, then a fixed-size footer (docs/FORMAT.md).
 */
import { FOOTER_FIXED_BYTES, SHARD_DIGEST_BYTES } from './format.ts';
import type { CodedUnit } from '../catalog/manifest.ts';

export const BLOCK_CHECKSUM_BYTES = 8;

export class UnitLayout {
  readonly stripes: number;
  readonly stripeData: number;
  readonly lastBlockLen: number;

  constructor(
    readonly size: number,
    readonly k: number,
    readonly m: number,
    readonly blockSize: number,
    readonly headerLen: number,
  ) {
    this.stripeData = k * blockSize;
    this.stripes = Math.ceil(size / this.stripeData);
    const rest = size - (this.stripes - 1) * this.stripeData;
    this.lastBlockLen = this.stripes === 0 ? 0 : Math.ceil(rest / k);
  }

  get shards(): number {
    return this.k + this.m;
  }

  blockLen(stripe: number): number {
    return stripe === this.stripes - 1 ? this.lastBlockLen : this.blockSize;
  }

  /** Object bytes of stripe s held by data shard i: [offset, offset + length). */
  dataSpan(stripe: number, shard: number): { offset: number; length: number } {
    const b = this.blockLen(stripe);
    const offset = stripe * this.stripeData + shard * b;
    return { offset, length: Math.max(0, Math.min(b, this.size - offset)) };
  }

  /** Offset in the shard file of stripe s's block checksum. */
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

  /** Stripes touched by object bytes [start, end] (inclusive). */
  stripeRange(start: number, end: number): { first: number; last: number } {
    return { first: Math.floor(start / this.stripeData), last: Math.floor(end / this.stripeData) };
  }
}

/** The layout of shard i of a recorded unit (header lengths differ by the shard index's digits). */
export function shardLayout(unit: Pick<CodedUnit, 'size' | 'k' | 'm' | 'blockSize' | 'headerLens'>, i: number): UnitLayout {
  return new UnitLayout(unit.size, unit.k, unit.m, unit.blockSize, unit.headerLens[i]!);
}
