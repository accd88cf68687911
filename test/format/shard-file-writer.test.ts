/**
 * The one shard-file writer (worker/format/shard-file-writer.ts) on its own, into memory: the
 * file it frames is exactly as long as the layout says, reads back with the codec (header,
 * block checksums seeded by place, footer), and calls out of order are refused.
 */
import { describe, expect, it } from 'vitest';
import { checksums } from '../../coder-wasm/index.ts';
import { BLOCK_CHECKSUM_BYTES } from '../../worker/format/layout.ts';
import { ShardFileWriter, type ChunkSink } from '../../worker/format/shard-file-writer.ts';
import { ShardFormatError, blockSeed, decodeFooter, decodeHeader, headerLength, unitSalt, type ShardHeader } from '../../worker/format/shard-file.ts';

function memorySink(): ChunkSink & { bytes(): Uint8Array } {
  const chunks: Uint8Array[] = [];
  return {
    write: async (parts) => void chunks.push(...parts().map((p) => p.slice())),
    bytes: () => Uint8Array.from(chunks.flatMap((c) => [...c])),
  };
}

const header = (over: Partial<ShardHeader> = {}): ShardHeader => ({
  format: 1,
  codec: 'rs-cauchy-gf8',
  bucket: 'b',
  key: 'k',
  unitId: '00000000000000001234567890ab',
  size: 10_000,
  k: 4,
  m: 2,
  blockSize: 1024,
  shardIndex: 5,
  placement: ['a', 'b', 'c', 'd', 'e', 'f'],
  createdAt: '2026-01-01T00:00:00.000Z',
  ...over,
});

describe('ShardFileWriter', () => {
  it("frames a whole file: the layout's length, readable by the codec, each block checksummed in its place", async () => {
    for (const h of [header(), header({ layout: 'column', shardIndex: 1 }), header({ size: 0 })]) {
      const out = memorySink();
      const file = new ShardFileWriter(h, out);
      const blocks = Array.from({ length: file.layout.stripes }, (_, j) => new Uint8Array(file.layout.blockLen(j)).fill(j + 1));
      for (const [j, block] of blocks.entries())
        await file.block(
          j,
          (seed) => checksums().xxh64(block, seed),
          () => block,
        );
      const digests = Array.from({ length: 6 }, (_, i) => (i === h.shardIndex ? file.digest() : 7n));
      await file.writeFooter({ md5: new Uint8Array(16).fill(9), checksum: null, shardDigests: digests });
      const bytes = out.bytes();
      expect(bytes.length).toBe(file.fileLen);
      expect(decodeHeader(bytes)).toEqual(h);
      const at = headerLength(bytes);
      const view = new DataView(bytes.buffer);
      for (const [j, block] of blocks.entries()) {
        const offset = file.layout.blockOffset(j);
        expect(offset).toBe(at + j * (BLOCK_CHECKSUM_BYTES + h.blockSize));
        expect(view.getBigUint64(offset, true)).toBe(checksums().xxh64(block, blockSeed(unitSalt(h.unitId), j, h.shardIndex)));
      }
      const footer = decodeFooter(bytes.subarray(file.layout.footerOffset()), 6);
      expect(footer.partial ?? false).toBe(h.layout === 'column' && h.shardIndex < h.k - 1);
      expect(footer.shardDigests[h.shardIndex]).toBe(file.digest());
    }
  });

  it('refuses rows out of order, a block of the wrong length, an early footer or one with another digest', async () => {
    const file = new ShardFileWriter(header(), memorySink());
    const block = (j: number) => new Uint8Array(file.layout.blockLen(j));
    const hash = (seed: bigint) => seed;
    expect(() => file.hashBlock(1, hash)).toThrow(ShardFormatError);
    expect(() => file.writeBlock(0, () => block(0))).toThrow(ShardFormatError); // not hashed yet
    await expect(file.block(0, hash, () => new Uint8Array(3))).rejects.toThrow(ShardFormatError);
    expect(() => file.writeFooter({ md5: new Uint8Array(16), checksum: null, shardDigests: Array(6).fill(file.digest()) })).toThrow(/footer after/);
    for (let j = 1; j < file.layout.stripes; j++) await file.block(j, hash, () => block(j));
    expect(() => file.writeFooter({ md5: new Uint8Array(16), checksum: null, shardDigests: Array(6).fill(0n) })).toThrow(/digest/);
  });
});
