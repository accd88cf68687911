/**
 * writeUnit: the streaming PUT path for one coded unit. One pass over the body: each piece is
 * hashed (MD5 for the ETag, the client's checksum) and copied straight into the coder's stripe
 * in wasm memory; each full stripe is encoded, every block hashed in place (XXH64) and framed,
 * and the k+m shard streams go to their backends in parallel with known lengths. Memory is one
 * stripe plus the sinks' small queues, whatever the size.
 * Write quorum: shards whose backend fails are dropped; below `writeQuorum` the unit fails with
 * QuorumError and its written shards are deleted; at quorum the missing shards are reported.
 * Units with k+m > 6 shards are written buffered, 6 puts at a time (subrequests.ts); the unit
 * store keeps such units small by cutting bodies into segments.
 */
import { createHash } from 'node:crypto';
import type { Backend } from '../../backends/types.ts';
import { createCoder } from '../../coder-wasm/index.ts';
import type { Hasher } from '../model/checksums.ts';
import { S3Error } from '../model/errors.ts';
import { fromBase64, toHex } from '../model/bytes.ts';
import { BodyReader } from './body-reader.ts';
import { blockSeed, encodeFooter, encodeHeader, unitSalt, type ShardHeader } from './format.ts';
import { BLOCK_CHECKSUM_BYTES, UnitLayout } from './layout.ts';
import type { CodedUnit, Codec } from '../catalog/manifest.ts';
import { shardKey } from '../catalog/manifest.ts';
import { BufferedShardSink, ShardSink } from './shard-sink.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore } from './subrequests.ts';
import { checksums } from '../../coder-wasm/index.ts';

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
  checksum: { algorithm: NonNullable<CodedUnit['checksum']>['algorithm']; hasher: Hasher } | null;
  headerExtra?: Pick<ShardHeader, 'uploadId' | 'partNumber' | 'metadata' | 'segment'>;
}

export interface WriteUnitResult {
  unit: CodedUnit;
  md5: Uint8Array;
  checksumDigest: Uint8Array | null;
}

export async function writeUnit(input: WriteUnitInput): Promise<WriteUnitResult> {
  const { k, m, blockSize, size } = input;
  const n = k + m;
  const replica = input.codec === 'replica';
  if (replica && k !== 1) throw new TypeError('a replica unit has k = 1 (each shard is the data)');
  // A replica stripe holds the data once; every shard's block is framed from it.
  const coder = createCoder(k, replica ? 0 : m);
  const createdAt = new Date().toISOString(); // one value: every shard's header differs only by its index
  const headers = input.backends.map((_, i) =>
    encodeHeader({
      format: 1, codec: input.codec, bucket: input.bucket, key: input.key, unitId: input.unitId,
      size, k, m, blockSize, shardIndex: i, placement: input.backends.map((b) => b.id),
      createdAt, ...input.headerExtra,
    }),
  );
  // Header lengths differ only by the shard index's digits; each shard has its own layout.
  const layouts = headers.map((h) => new UnitLayout(size, k, m, blockSize, h.length));
  const abort = new AbortController();
  // Too many shards to stream at once within Workers' subrequest limit: buffer and send 6 at a time.
  const sem = n > MAX_OPEN_SUBREQUESTS ? new Semaphore(MAX_OPEN_SUBREQUESTS) : null;
  const sinks = input.backends.map((b, i) => {
    const key = shardKey(input.bucket, input.unitId, i), len = layouts[i]!.shardFileLen();
    return sem ? new BufferedShardSink(i, b, key, len, abort.signal, (fn) => sem.run(fn)) : new ShardSink(i, b, key, len, abort.signal);
  });
  const stripe = coder.stripe(blockSize);
  const reader = new BodyReader(input.body);
  const md5 = createHash('md5');
  const blockSums: bigint[][] = Array.from({ length: n }, () => []);
  const layout = layouts[0]!;
  const salt = unitSalt(input.unitId);
  try {
    await Promise.all(sinks.map((s, i) => s.write(headers[i]!)));
    let pending: Uint8Array | null = null; // unread rest of the last body piece
    let received = 0;
    for (let s = 0; s < layout.stripes; s++) {
      const b = layout.blockLen(s);
      const stripeBytes = Math.min(layout.stripeData, size - s * layout.stripeData);
      let filled = 0;
      while (filled < stripeBytes) {
        if (!pending || pending.length === 0) {
          pending = await reader.next();
          if (!pending) throw new S3Error('IncompleteBody', `the body ended after ${received} of ${size} bytes`);
          md5.update(pending);
          input.checksum?.hasher.update(pending);
          received += pending.length;
        }
        // Data shard i holds stripe bytes [i*b, (i+1)*b): copy shard by shard.
        while (filled < stripeBytes && pending.length > 0) {
          const shard = Math.floor(filled / b), at = filled % b;
          const take = Math.min(b - at, stripeBytes - filled, pending.length);
          stripe.shard(shard).set(pending.subarray(0, take), at);
          pending = pending.subarray(take);
          filled += take;
        }
      }
      await emitStripe(s, b, filled);
      // Stop reading as soon as the quorum is out of reach: the client gets a 503 sooner.
      if (sinks.filter((x) => x.ok).length < input.writeQuorum) throw quorumFailure(sinks.filter((x) => x.ok).length);
    }
    if ((pending && pending.length > 0) || !(await reader.atEnd())) {
      throw new S3Error('IncompleteBody', `the body is longer than its declared ${size} bytes`);
    }
    const md5Bytes = new Uint8Array(md5.digest());
    const checksumDigest = input.checksum ? fromBase64(input.checksum.hasher.digestBase64())! : null;
    const shardDigests = blockSums.map((sums, i) => digestOf(sums, i));
    const footer = encodeFooter({
      md5: md5Bytes,
      checksum: input.checksum && checksumDigest ? { algorithm: input.checksum.algorithm, digest: checksumDigest } : null,
      shardDigests,
    });
    await Promise.all(sinks.map((s) => s.write(footer)));
    const results = await Promise.all(sinks.map((s) => s.close()));
    const written = results.filter(Boolean).length;
    if (written < input.writeQuorum) throw quorumFailure(written);
    return {
      md5: md5Bytes,
      checksumDigest,
      unit: {
        unitId: input.unitId, codec: input.codec, size, k, m, blockSize,
        placement: input.backends.map((b) => b.id),
        headerLens: headers.map((h) => h.length),
        shardDigests: shardDigests.map((d) => d.toString(16).padStart(16, '0')),
        missing: results.flatMap((ok, i) => (ok ? [] : [i])),
        md5: toHex(md5Bytes),
      },
    };
  } catch (err) {
    const failure = err instanceof S3Error || err instanceof QuorumError ? err : quorumFailureFrom(err);
    for (const s of sinks) s.abort(err);
    abort.abort(err);
    // Release, not cancel, the body: the app drains what is left before answering (a client
    // still sending gets its error response; wrangler dev's proxy wedges on a cancelled body).
    reader.release();
    await Promise.allSettled(sinks.map((s) => s.done));
    await Promise.allSettled(sinks.map((s) => s.backend.delete(s.key)));
    throw failure;
  } finally {
    stripe.free();
    coder.free();
  }

  async function emitStripe(s: number, b: number, filled: number) {
    // Zero the padding of the last stripe so parity is well defined, then encode.
    for (let i = 0; i < k; i++) {
      const used = Math.max(0, Math.min(b, filled - i * b));
      if (used < b) stripe.shard(i).fill(0, used, b);
    }
    if (!replica) stripe.encode(b);
    // Replicas share one copy of the block (chunks are never modified downstream); each still
    // has its own checksum, seeded by its shard index.
    const shared = replica ? stripe.shard(0).slice(0, b) : null;
    const chunks = sinks.map((_, i) => {
      const src = replica ? 0 : i;
      const sum = stripe.xxh64(src, 0, b, blockSeed(salt, s, i));
      blockSums[i]!.push(sum);
      const chunk = new Uint8Array(BLOCK_CHECKSUM_BYTES + (shared ? 0 : b));
      new DataView(chunk.buffer).setBigUint64(0, sum, true);
      if (!shared) chunk.set(stripe.shard(src).subarray(0, b), BLOCK_CHECKSUM_BYTES);
      return chunk;
    });
    await Promise.all(sinks.map(async (sink, i) => {
      await sink.write(chunks[i]!);
      if (shared) await sink.write(shared);
    }));
  }

  function quorumFailure(written: number): QuorumError {
    return new QuorumError(`only ${written} of ${n} shards were written; the write quorum is ${input.writeQuorum}`, sinks.filter((s) => !s.ok).map((s) => s.failure));
  }

  function quorumFailureFrom(err: unknown): unknown {
    return sinks.some((s) => !s.ok) ? quorumFailure(sinks.filter((s) => s.ok).length) : err;
  }
}

/** A shard's digest: XXH64 over its block checksums (little-endian), seeded by its index. */
export function digestOf(sums: bigint[], shardIndex: number): bigint {
  const bytes = new Uint8Array(8 * sums.length);
  const view = new DataView(bytes.buffer);
  sums.forEach((v, j) => view.setBigUint64(8 * j, v, true));
  return checksums().xxh64(bytes, BigInt(shardIndex));
}


