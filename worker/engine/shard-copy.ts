/**
 * Shard copy: one shard file of a unit copied from one backend to another, as stored (a sealed
 * unit's ciphertext stays ciphertext: nothing is decoded or decrypted), for the mover
 * (upkeep/drain.ts). The copy is framed by the format's one writer (format/shard-file-writer.ts)
 * from what it reads: the source's header and footer, and every block as the shard reader hands it
 * on after checking its XXH64. So the copy is verified by construction: a rotten source block
 * fails the read, and the footer is written only if the digest of the blocks written is the
 * footer's, which must be the manifest's; the backend's put then refuses a body of another length.
 * A copy that fails leaves no complete file behind (the caller deletes a partial one).
 *
 * The header is copied unchanged, its `placement` included: a header records where the unit's
 * shards were written; where a shard lives now is the catalog's (docs/FORMAT.md).
 *
 * Backend calls: 3 ranged GETs of the source for header and footer (readShardFile), one GET of
 * its blocks (none for an empty shard), one PUT to the target. `copyCalls` says so for estimates.
 */
import type { Backend } from '../../backends/types.ts';
import { checksums } from '../../coder-wasm/index.ts';
import { BLOCK_CHECKSUM_BYTES, shardLayout } from '../format/layout.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { HEADER_PREFIX_BYTES, ShardFormatError, unitSalt } from '../format/shard-file.ts';
import { ShardFileWriter } from '../format/shard-file-writer.ts';
import { shardKey } from '../format/shard-key.ts';
import { readShardFile } from './shard-files.ts';
import { ShardReader } from './shard-reader.ts';
import { ShardSink } from './shard-sink.ts';

/** What one copy asks of its backends: GETs and bytes read from the source, PUTs and bytes written to the target. */
export interface CopyCalls {
  sourceGets: number;
  sourceBytes: number;
  targetPuts: number;
  targetBytes: number;
}

/** The backend calls copyShard makes for shard `shard` of `unit` (for the drain's estimate). */
export function copyCalls(unit: CodedUnit, shard: number): CopyCalls {
  const layout = shardLayout(unit, shard);
  const fileLen = layout.shardFileLen();
  const blocks = layout.stripes > 0;
  return { sourceGets: blocks ? 4 : 3, sourceBytes: HEADER_PREFIX_BYTES + fileLen, targetPuts: 1, targetBytes: fileLen };
}

/**
 * Copies shard `shard` of `unit` (bucket `bucket`) from `from` to `to` under the same key. Throws
 * ShardReadError / ShardFormatError when the source is missing, unreadable or rotten (the caller
 * rebuilds it from the other shards instead), BackendError when the target refuses the write.
 */
export async function copyShard(bucket: string, unit: CodedUnit, shard: number, from: Backend, to: Backend): Promise<void> {
  const key = shardKey(bucket, unit.unitId, shard);
  const layout = shardLayout(unit, shard);
  const info = await readShardFile(from, key);
  if (info.headerLen !== layout.headerLen || info.header.unitId !== unit.unitId || info.header.shardIndex !== shard) {
    throw new ShardFormatError(`${from.id}/${key}: header does not describe shard ${shard} of unit ${unit.unitId}`);
  }
  const digest = info.footer.shardDigests[shard]!.toString(16).padStart(16, '0');
  if (digest !== unit.shardDigests[shard]) throw new ShardFormatError(`${from.id}/${key}: footer digest differs from the manifest`);
  const abort = new AbortController();
  let sink: ShardSink | null = null;
  const file = new ShardFileWriter(info.header, { write: (parts) => sink!.write(parts) });
  if (file.headerBytes.length !== layout.headerLen) throw new ShardFormatError(`${key}: the header re-encodes to another length`);
  sink = new ShardSink(shard, to, key, file.fileLen, abort.signal, BLOCK_CHECKSUM_BYTES + unit.blockSize);
  const reader = layout.stripes > 0 ? new ShardReader(shard, from, key, layout, 0, layout.stripes - 1, unitSalt(unit.unitId)) : null;
  try {
    await file.writeHeader();
    for (let s = 0; s < layout.stripes; s++) {
      // A target that refused the upload stops the copy: the rest of the source is not worth its egress.
      if (!sink.ok) throw sink.failure;
      const block = await reader!.readBlock(s);
      // The reader checked this XXH64 against the stored one; the writer records it for the digest.
      await file.block(
        s,
        (seed) => checksums().xxh64(block, seed),
        () => block,
      );
    }
    await file.writeFooter(info.footer);
    if (!(await sink.close())) throw sink.failure;
  } catch (err) {
    abort.abort(err);
    sink.abort(err);
    await sink.done;
    throw err;
  } finally {
    reader?.cancel();
  }
}
