/**
 * UnitWriter: the streaming PUT path for one striped unit (codes with k+m <= 6).
 *
 * One pass over the body (BodyFeed: MD5 for the ETag and the client's checksum hashed on the
 * way): each piece is copied straight into the coder's stripe in wasm memory; each full stripe is
 * encoded, every block hashed in place (XXH64) and handed to its shard's upload, and the k+m
 * shard uploads run in parallel with known lengths.
 *
 * Invariants:
 * - Backend uploads open only once the first stripe of the body has arrived (a client that never
 *   sends its body costs no backend request).
 * - Memory is one stripe in wasm plus two framed-block buffers per shard (ShardSink), whatever
 *   the size: nothing is allocated per stripe. Every shard streams at once, so this layout is
 *   for codes with k+m <= 6 (Workers' open subrequests); wider codes use ColumnWriter.
 * - A shard whose backend fails is dropped, never retried here; below `writeQuorum` live shards
 *   the unit fails with QuorumError (as soon as that is certain) and every written shard is
 *   deleted; at quorum the missing shards are reported in `unit.missing`.
 * - The body is released, never cancelled, on failure: the app drains what is left before it
 *   answers (wrangler dev's proxy wedges on a cancelled request body).
 * - The writer checks only the length. Whether the digests match what the client declared is
 *   the caller's to verify (`feed.digest.verify()`), before it commits.
 */
import { createCoder, type Coder, type Stripe } from '../../coder-wasm/index.ts';
import type { CodedUnit } from '../format/manifest.ts';
import type { UnitFeed } from './body-feed.ts';
import { ShardSet, type UnitGeometry } from './shard-set.ts';

export { QuorumError } from './shard-set.ts';

export interface WriteUnitInput extends UnitGeometry {
  /** The body, positioned at this unit's first byte. */
  feed: UnitFeed;
}

export interface WriteUnitResult {
  unit: CodedUnit;
}

export class UnitWriter {
  private readonly replica: boolean;
  private readonly coder: Coder;
  private readonly stripe: Stripe;
  private readonly shards: ShardSet;

  constructor(private readonly input: WriteUnitInput) {
    const { k, m } = input;
    this.replica = input.codec === 'replica';
    if (this.replica && k !== 1) throw new TypeError('a replica unit has k = 1 (each shard is the data)');
    // A replica stripe holds the data once; every shard's block is framed from it.
    this.coder = createCoder(k, this.replica ? 0 : m);
    this.shards = new ShardSet(input, 'striped');
    // As long as the unit's longest block (a body of one row has short ones): what the write's lease counts (coding-budget.ts).
    this.stripe = this.coder.stripe(this.shards.layout.largestBlock);
  }

  async write(): Promise<WriteUnitResult> {
    const { shards, input } = this;
    try {
      for (let s = 0; s < shards.layout.stripes; s++) {
        const filled = await this.fillStripe(s);
        await this.emitStripe(s, filled);
        shards.checkQuorum();
      }
      await input.feed.expectEnd();
      const complete = shards.footer(input.feed.digest.result());
      for (let i = 0; i < shards.n; i++) shards.finishShard(i, complete);
      const written = await shards.settle();
      return { unit: shards.record(complete, written, complete.md5) };
    } catch (err) {
      input.feed.release();
      throw await shards.fail(err);
    } finally {
      this.stripe.free();
      this.coder.free();
    }
  }

  /** Copies stripe s's data from the body into stripe memory; returns the bytes it holds. */
  private async fillStripe(s: number): Promise<number> {
    const layout = this.shards.layout;
    const b = layout.blockLen(s);
    const stripeBytes = Math.min(layout.stripeData, this.input.size - s * layout.stripeData);
    // Data shard i holds stripe bytes [i*b, (i+1)*b): copy shard by shard.
    for (let i = 0, filled = 0; filled < stripeBytes; i++) {
      const take = Math.min(b, stripeBytes - filled);
      await this.input.feed.fill(take, () => this.stripe.shard(i));
      filled += take;
    }
    return stripeBytes;
  }

  /** Zero-pads, encodes and frames stripe s; hands every shard its block. */
  private async emitStripe(s: number, filled: number): Promise<void> {
    const { k } = this.input;
    const b = this.shards.layout.blockLen(s);
    const stripe = this.stripe;
    // Zero the padding of the last stripe so parity is well defined, then encode.
    for (let i = 0; i < k; i++) {
      const used = Math.max(0, Math.min(b, filled - i * b));
      if (used < b) stripe.shard(i).fill(0, used, b);
    }
    if (!this.replica) stripe.encode(b);
    // Each block is framed with its checksum, seeded by stripe and shard index (a replica's
    // blocks are the same bytes, each with its own checksum). The sinks copy the block out of
    // stripe memory; the stripe is refilled only after all did.
    await Promise.all(
      this.shards.files.map((file, i) => {
        const src = this.replica ? 0 : i;
        return file.block(
          s,
          (seed) => stripe.xxh64(src, 0, b, seed),
          () => stripe.shard(src).subarray(0, b),
        );
      }),
    );
  }
}

export function writeUnit(input: WriteUnitInput): Promise<WriteUnitResult> {
  return new UnitWriter(input).write();
}
