/**
 * Units of a bucket found on the backends (rebuild.ts, journal-restore.ts): every shard file under
 * the bucket's prefixes, grouped by unit; for each unit not `skip`ped, one complete footer read
 * and its header opened (sealed ones with the ring); a unit is described as the readers need it
 * (placement where its shards were found, missing shards, digests, MD5, checksum). Units that
 * cannot be (no complete footer, a header that does not open, fewer than k shards) are reported.
 */
import { isBackendError, type Backend } from '../../backends/types.ts';
import { toBase64 } from '../model/bytes.ts';
import { encodeHeader } from '../format/shard-file.ts';
import { maskFooterDigests, type KeyRing } from '../format/seal.ts';
import { openHeader, unitSealOf, type OpenedHeader } from '../format/sealed-header.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { bucketShardPrefixes, parseShardKey, parseTagRecordKey, shardKey } from '../format/shard-key.ts';
import { readShardFile, type ShardFileInfo } from '../engine/index.ts';
import { errorMessage } from '../model/error-message.ts';

/** A shard file read, its header opened (sealed ones decrypted). */
export type OpenedInfo = ShardFileInfo & { header: OpenedHeader };

export interface ScannedUnit {
  info: OpenedInfo;
  unit: CodedUnit;
}

export interface UnitScan {
  units: ScannedUnit[];
  unrecoverable: { unitId: string; reason: string }[];
  /** Units found and skipped (`skip` said so). */
  skipped: string[];
  /** unitId -> backends holding a tag record of it. */
  tagRecords: Map<string, Backend[]>;
  /**
   * Backends whose listing did not answer (down, hung, throttled): left out, so their shards count
   * as missing. The operator drill (test/ops/operator-drill.test.ts) found `shardgate rebuild`
   * failing whole with 503 while m backends were down, where rescue restores from the others.
   */
  unlisted: string[];
}

export async function scanUnits(
  bucket: string,
  backends: Backend[],
  ring: KeyRing | undefined,
  skip: (unitId: string) => boolean = () => false,
): Promise<UnitScan> {
  // unitId -> shard index -> backend holding it
  const found = new Map<string, Map<number, Backend>>();
  const tagRecords = new Map<string, Backend[]>();
  // The bucket's units are named by it (written before shelves) or by its shelf under a key of
  // the ring (format/shelf.ts): a unit's shelf is its header's key, so a ring that opens it names it.
  const prefixes = await bucketShardPrefixes(bucket, ring);
  const unlisted: string[] = [];
  for (const b of backends)
    for (const prefix of prefixes) {
      if (unlisted.includes(b.id)) break;
      let cursor: string | undefined;
      do {
        // A backend that does not answer is left out (named in `unlisted`): with up to m of them
        // down every unit still has k shards on the others. Any other failure still stops the scan.
        const page = await b.list(prefix, cursor).catch((err: unknown) => {
          if (!(isBackendError(err) && err.transient)) throw err;
          unlisted.push(b.id);
          return null;
        });
        if (!page) break;
        for (const e of page.entries) {
          const t = parseTagRecordKey(e.key);
          if (t) tagRecords.set(t.unitId, [...(tagRecords.get(t.unitId) ?? []), b]);
          const key = parseShardKey(e.key);
          if (!key) continue;
          if (!found.has(key.unitId)) found.set(key.unitId, new Map());
          found.get(key.unitId)!.set(key.shardIndex, b);
        }
        cursor = page.cursor;
      } while (cursor);
    }
  const out: UnitScan = { units: [], unrecoverable: [], skipped: [], tagRecords, unlisted };
  for (const [unitId, shards] of found) {
    if (skip(unitId)) {
      out.skipped.push(unitId);
      continue;
    }
    // A complete footer: any shard of a striped unit; of a column unit, the last data shard or a
    // parity shard (the others were finished early and know only some digests).
    let info: ShardFileInfo | null = null;
    for (const [i, b] of [...shards].sort(([a], [c]) => c - a)) {
      const read = await readShardFile(b, shardKey(bucket, unitId, i)).catch(() => null);
      if (read && !read.footer.partial) info = read;
      if (info) break;
    }
    if (!info) {
      out.unrecoverable.push({ unitId, reason: 'no readable shard with a complete footer' });
      continue;
    }
    // A sealed header's identity opens with the unit's data key (the key ring unwraps it); its
    // footer's digests are masked with the same key.
    const raw = info.header;
    let h: OpenedHeader;
    let footer = info.footer;
    try {
      h = await openHeader(raw, ring);
      if (raw.seal) footer = maskFooterDigests(footer, await (await ring!.open(raw.seal)).footerMask());
    } catch (err) {
      out.unrecoverable.push({ unitId, reason: errorMessage(err) });
      continue;
    }
    if (h.bucket !== bucket) continue; // another bucket's unit on a shelf of the same name (a 96-bit collision)
    if (h.uploadId) {
      out.unrecoverable.push({ unitId, reason: `part ${h.partNumber} of a multipart upload: the part list lives only in the catalog` });
      continue;
    }
    if (shards.size < h.k) {
      out.unrecoverable.push({ unitId, reason: `only ${shards.size} of the ${h.k} shards needed remain` });
      continue;
    }
    const n = h.k + h.m;
    const seal = unitSealOf(raw);
    // Where each shard was found, not the header's placement: a header records where the unit
    // was written, and the mover (upkeep/drain.ts) may have moved shards since (FORMAT.md).
    const placement = h.placement.map((id, j) => shards.get(j)?.id ?? id);
    const unit: CodedUnit = {
      unitId,
      codec: h.codec,
      size: h.size,
      ...(seal ? { seal } : {}),
      k: h.k,
      m: h.m,
      blockSize: h.blockSize,
      ...(h.layout === 'column' ? { layout: h.layout } : {}),
      placement,
      headerLens: Array.from({ length: n }, (_, j) => encodeHeader({ ...raw, shardIndex: j }).length),
      shardDigests: footer.shardDigests.map((d) => d.toString(16).padStart(16, '0')),
      missing: [...Array(n).keys()].filter((j) => !shards.has(j)),
      md5: [...footer.md5].map((x) => x.toString(16).padStart(2, '0')).join(''),
      checksum: footer.checksum ? { algorithm: footer.checksum.algorithm, type: 'FULL_OBJECT', value: toBase64(footer.checksum.digest) } : null,
    };
    out.units.push({ info: { ...info, header: h }, unit });
  }
  return out;
}
