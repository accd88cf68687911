/**
 * UnitWriter: the streaming PUT path for one coded unit.
 *
 * One pass over the body: each piece is hashed (BodyDigest: MD5 for the ETag, the client's
 * checksum) and copied straight into the coder's stripe in wasm memory; each full stripe is
 * encoded, every block hashed in place (XXH64) and framed, and the k+m shard streams go to their
 * backends in parallel with known lengths.
 *
 * Invariants:
 * - Memory is one stripe plus the sinks' small queues, whatever the size (units with k+m > 6
 *   shards are written buffered, 6 puts at a time: subrequests.ts; the unit store keeps such
 *   units small by cutting bodies into segments).
 * - A shard whose backend fails is dropped, never retried here; below `writeQuorum` live shards
 *   the unit fails with QuorumError (as soon as that is certain) and every written shard is
 *   deleted; at quorum the missing shards are reported in `unit.missing`.
 * - The body is released, never cancelled, on failure: the app drains what is left before it
 *   answers (wrangler dev's proxy wedges on a cancelled request body).
 * - The writer checks only the length. Whether the digests match what the client declared is
 *   the caller's to verify (`digest.verify()`), before it commits.
 */
import type { Backend } from '../../backends/types.ts';
import { checksums, createCoder, type Coder, type Stripe } from '../../coder-wasm/index.ts';
import { toHex } from '../model/bytes.ts';
import { BodyDigest } from '../model/digest.ts';
import { S3Error } from '../model/errors.ts';
import type { ChecksumRequest } from '../model/object-store.ts';
import { shardKey, type CodedUnit, type Codec } from '../catalog/manifest.ts';
import { BodyReader } from './body-reader.ts';
import { blockSeed, encodeFooter, encodeHeader, unitSalt, type ShardHeader } from './format.ts';
import { BLOCK_CHECKSUM_BYTES, UnitLayout } from './layout.ts';
import { BufferedShardSink, ShardSink } from './shard-sink.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore } from './subrequests.ts';

/** Fewer shards were written than the write quorum needs: the storage, not the client, failed. */
export class QuorumError extends Error {
  override readonly name = 'QuorumError';
  constructor(
    message: string,
    readonly failures: unknown[],
  ) {
    super(message);
  }
}

export interface WriteUnitInput {
  bucket: string;
  key: string;
  unitId: string;
  codec: Codec;
  k: number;
  m: number;
  blockSize: number;
  writeQuorum: number;
  /** Backends in shard order (k+m). */
  backends: Backend[];
  body: ReadableStream<Uint8Array>;
  size: number;
  /** The client's checksum to compute (and record in the footer) along with the unit's MD5. */
  checksum: ChecksumRequest | null;
  headerExtra?: Pick<ShardHeader, 'uploadId' | 'partNumber' | 'metadata' | 'segment'>;
}

export interface WriteUnitResult {
  unit: CodedUnit;
  /** The unit's bytes hashed: its MD5 and the requested checksum, not yet verified. */
  digest: BodyDigest;
}

type Sink = ShardSink | BufferedShardSink;

export class UnitWriter {
  private readonly n: number;
  private readonly replica: boolean;
  private readonly coder: Coder;
  private readonly stripe: Stripe;
  private readonly headers: Uint8Array[];
  private readonly layout: UnitLayout;
  private readonly sinks: Sink[];
  private readonly abort = new AbortController();
  private readonly reader: BodyReader;
  private readonly digest: BodyDigest;
  private readonly salt: bigint;
  /** Per shard, the XXH64 of every block written so far (the footer's shard digests). */
  private readonly blockSums: bigint[][];
  /** Unread rest of the last body piece. */
  private pending: Uint8Array | null = null;

  constructor(private readonly input: WriteUnitInput) {
    const { k, m, blockSize, size } = input;
    this.n = k + m;
    this.replica = input.codec === 'replica';
    if (this.replica && k !== 1) throw new TypeError('a replica unit has k = 1 (each shard is the data)');
    // A replica stripe holds the data once; every shard's block is framed from it.
    this.coder = createCoder(k, this.replica ? 0 : m);
    this.stripe = this.coder.stripe(blockSize);
    const createdAt = new Date().toISOString(); // one value: every shard's header differs only by its index
    const placement = input.backends.map((b) => b.id);
    this.headers = input.backends.map((_, i) =>
      encodeHeader({ format: 1, codec: input.codec, bucket: input.bucket, key: input.key, unitId: input.unitId, size, k, m, blockSize, shardIndex: i, placement, createdAt, ...input.headerExtra }),
    );
    // Header lengths differ only by the shard index's digits; each shard has its own layout.
    const layouts = this.headers.map((h) => new UnitLayout(size, k, m, blockSize, h.length));
    this.layout = layouts[0]!;
    // Too many shards to stream at once within Workers' subrequest limit: buffer and send 6 at a time.
    const sem = this.n > MAX_OPEN_SUBREQUESTS ? new Semaphore(MAX_OPEN_SUBREQUESTS) : null;
    this.sinks = input.backends.map((b, i) => {
      const key = shardKey(input.bucket, input.unitId, i), len = layouts[i]!.shardFileLen();
      return sem ? new BufferedShardSink(i, b, key, len, this.abort.signal, (fn) => sem.run(fn)) : new ShardSink(i, b, key, len, this.abort.signal);
    });
    this.reader = new BodyReader(input.body);
    this.digest = new BodyDigest(input.checksum);
    this.salt = unitSalt(input.unitId);
    this.blockSums = Array.from({ length: this.n }, () => []);
  }

  async write(): Promise<WriteUnitResult> {
    try {
      await Promise.all(this.sinks.map((s, i) => s.write(this.headers[i]!)));
      for (let s = 0; s < this.layout.stripes; s++) {
        const filled = await this.fillStripe(s);
        await this.emitStripe(s, filled);
        // Stop reading as soon as the quorum is out of reach: the client gets its answer sooner.
        if (this.liveShards() < this.input.writeQuorum) throw this.quorumFailure();
      }
      await this.expectEnd();
      const shardDigests = await this.writeFooter();
      const results = await Promise.all(this.sinks.map((s) => s.close()));
      if (results.filter(Boolean).length < this.input.writeQuorum) throw this.quorumFailure();
      return { unit: this.unitRecord(shardDigests, results), digest: this.digest };
    } catch (err) {
      throw await this.fail(err);
    } finally {
      this.stripe.free();
      this.coder.free();
    }
  }

  private liveShards(): number {
    return this.sinks.filter((x) => x.ok).length;
  }

  /** Copies stripe s's data from the body into stripe memory; returns the bytes it holds. */
  private async fillStripe(s: number): Promise<number> {
    const { size } = this.input;
    const b = this.layout.blockLen(s);
    const stripeBytes = Math.min(this.layout.stripeData, size - s * this.layout.stripeData);
    let filled = 0;
    while (filled < stripeBytes) {
      if (!this.pending || this.pending.length === 0) {
        this.pending = await this.reader.next();
        if (!this.pending) throw new S3Error('IncompleteBody', `the body ended after ${this.digest.size} of ${size} bytes`);
        this.digest.update(this.pending);
      }
      // Data shard i holds stripe bytes [i*b, (i+1)*b): copy shard by shard.
      while (filled < stripeBytes && this.pending.length > 0) {
        const shard = Math.floor(filled / b), at = filled % b;
        const take = Math.min(b - at, stripeBytes - filled, this.pending.length);
        this.stripe.shard(shard).set(this.pending.subarray(0, take), at);
        this.pending = this.pending.subarray(take);
        filled += take;
      }
    }
    return filled;
  }

  /** Zero-pads, encodes and frames stripe s; hands every shard its block. */
  private async emitStripe(s: number, filled: number): Promise<void> {
    const { k } = this.input;
    const b = this.layout.blockLen(s);
    const stripe = this.stripe;
    // Zero the padding of the last stripe so parity is well defined, then encode.
    for (let i = 0; i < k; i++) {
      const used = Math.max(0, Math.min(b, filled - i * b));
      if (used < b) stripe.shard(i).fill(0, used, b);
    }
    if (!this.replica) stripe.encode(b);
    // Replicas share one copy of the block (chunks are never modified downstream); each still
    // has its own checksum, seeded by its shard index.
    const shared = this.replica ? stripe.shard(0).slice(0, b) : null;
    const chunks = this.sinks.map((_, i) => {
      const src = this.replica ? 0 : i;
      const sum = stripe.xxh64(src, 0, b, blockSeed(this.salt, s, i));
      this.blockSums[i]!.push(sum);
      const chunk = new Uint8Array(BLOCK_CHECKSUM_BYTES + (shared ? 0 : b));
      new DataView(chunk.buffer).setBigUint64(0, sum, true);
      if (!shared) chunk.set(stripe.shard(src).subarray(0, b), BLOCK_CHECKSUM_BYTES);
      return chunk;
    });
    await Promise.all(this.sinks.map(async (sink, i) => {
      await sink.write(chunks[i]!);
      if (shared) await sink.write(shared);
    }));
  }

  /** IncompleteBody when the body goes on past its declared size. */
  private async expectEnd(): Promise<void> {
    if ((this.pending && this.pending.length > 0) || !(await this.reader.atEnd())) {
      throw new S3Error('IncompleteBody', `the body is longer than its declared ${this.input.size} bytes`);
    }
  }

  private async writeFooter(): Promise<bigint[]> {
    const { md5, checksum, checksumDigest } = this.digest.result();
    const shardDigests = this.blockSums.map((sums, i) => digestOf(sums, i));
    const footer = encodeFooter({
      md5,
      checksum: checksum && checksumDigest ? { algorithm: checksum.algorithm, digest: checksumDigest } : null,
      shardDigests,
    });
    await Promise.all(this.sinks.map((s) => s.write(footer)));
    return shardDigests;
  }

  private unitRecord(shardDigests: bigint[], written: boolean[]): CodedUnit {
    const { unitId, codec, size, k, m, blockSize } = this.input;
    return {
      unitId, codec, size, k, m, blockSize,
      placement: this.input.backends.map((b) => b.id),
      headerLens: this.headers.map((h) => h.length),
      shardDigests: shardDigests.map((d) => d.toString(16).padStart(16, '0')),
      missing: written.flatMap((ok, i) => (ok ? [] : [i])),
      md5: toHex(this.digest.result().md5),
    };
  }

  /** Stops every shard, deletes what was written, and says why the write failed. */
  private async fail(err: unknown): Promise<unknown> {
    const failure = err instanceof S3Error || err instanceof QuorumError ? err : this.sinks.some((s) => !s.ok) ? this.quorumFailure() : err;
    for (const s of this.sinks) s.abort(err);
    this.abort.abort(err);
    this.reader.release();
    await Promise.allSettled(this.sinks.map((s) => s.done));
    await Promise.allSettled(this.sinks.map((s) => s.backend.delete(s.key)));
    return failure;
  }

  private quorumFailure(): QuorumError {
    const written = this.liveShards();
    return new QuorumError(`only ${written} of ${this.n} shards were written; the write quorum is ${this.input.writeQuorum}`, this.sinks.filter((s) => !s.ok).map((s) => s.failure));
  }
}

export function writeUnit(input: WriteUnitInput): Promise<WriteUnitResult> {
  return new UnitWriter(input).write();
}

/** A shard's digest: XXH64 over its block checksums (little-endian), seeded by its index. */
export function digestOf(sums: bigint[], shardIndex: number): bigint {
  const bytes = new Uint8Array(8 * sums.length);
  const view = new DataView(bytes.buffer);
  sums.forEach((v, j) => view.setBigUint64(8 * j, v, true));
  return checksums().xxh64(bytes, BigInt(shardIndex));
}
