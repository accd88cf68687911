/**
 * `shardgate rescue`: objects back from the shard files alone, with no gateway and no catalog
 * (docs/FORMAT.md "Decoding an object without the gateway"): scan the sources, replay the catalog
 * journal found among them (rescue/journal.ts: every key's current version, inline ones and part
 * lists included, and bucket settings), plan the writes it does not know from the headers and footers, read each with the gateway's own readers (every block verified, up to
 * m missing or damaged shards per unit decoded around) and write it under --out once its MD5
 * matches the footer's. Sealed units are read with the key ring of --key / --keys-file /
 * SHARDGATE_KEYS; those whose key is not given are listed (unit, bucket if known, key id) and
 * nothing of them is written (without a key the journal cannot be told from data: the output says
 * so and names the key ids). Buckets the journal's bucket list does not hold (deleted, or hidden
 * by a catalog lost and started again) are never dropped silently: SKIPPED with their object
 * count, or written with --include-unlisted. Each object's metadata and tags go to
 * OUT/_shardgate/buckets/<bucket>.objects.json. Exit 1 when some object could not be rescued, some
 * sealed unit could not be opened, or some bucket was skipped.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { bytes, printJson } from '../format.ts';
import { Progress } from '../progress.ts';
import { keyRingFrom, SOURCE_HELP, SOURCE_OPTIONS, sourcesFrom } from '../rescue/options.ts';
import { outputPath, type Layout } from '../rescue/output.ts';
import { etagMd5, journalObjects, readJournal, type JournalObject } from '../rescue/journal.ts';
import { ringWithJournalKeys, unlockNamed } from '../rescue/kms-keys.ts';
import { etagFor } from '../../worker/model/sse.ts';
import { planObjects, sealedEntry, sealedSummary, type PlannedObject } from '../rescue/plan.ts';
import { readObject, type ReadReport } from '../rescue/read.ts';
import { BUCKET_LIST_INSTANCE, JOURNAL_BUCKET } from '../../worker/format/journal.ts';
import { bucketImages, replayJournal, type BucketImage, type VersionImage } from '../../worker/catalog/journal-replay.ts';
import { readTagRecord, UnitStore } from '../../worker/engine/index.ts';
import { withTags } from '../../worker/catalog/rules.ts';
import type { ObjectMetadata } from '../../worker/model/object-store.ts';
import { scanSources, ShardIndex } from '../rescue/scan.ts';
import { errorMessage } from '../../worker/model/error-message.ts';

const HELP = `usage: shardgate rescue (--from DIR|URL ... | --wrangler-state DIR) --out DIR [options]

Recovers objects straight from the backends' shard files: no gateway, no catalog. Every block is
checked against its XXH64 and every object against the MD5 in its shards' footer; an object is
written only when it checks out. Objects are written as OUT/<bucket>/<key>. Sealed (encrypted)
objects are decrypted with the keys given (--key, --keys-file, SHARDGATE_KEYS: below), every
record's authentication tag checked; sealed units whose key is not given are listed with the key
id they need and not written (exit 1).

  --out DIR                  where to write the objects (created)
  --layout tree|flat         tree (default): a key's '/' make folders; flat: one file per key,
                             its name the key percent-encoded (for keys that cannot be paths)
  --versions                 also every noncurrent version the catalog journal holds, into
                             OUT/_shardgate/versions/<bucket>/<key percent-encoded>/<version id>
  --include-unlisted         also the buckets the journal's bucket list does not hold (deleted
                             buckets, or buckets of a catalog that was lost and started again):
                             without it they are listed as SKIPPED and the exit code is 1

Every object's metadata (content type and the other content headers, user metadata, tags) is in
OUT/_shardgate/buckets/<bucket>.objects.json, and in --json's output.

${SOURCE_HELP}

The catalog journal: the gateway stores the catalog's changes on the backends every minute,
erasure-coded and sealed like data (docs/FORMAT.md, "The catalog journal"). When its segments are
found, rescue restores what the catalog held as of its last segment: each key's current version
(inline objects included, multipart objects with the parts chosen at completion), and each
bucket's settings (versioning, CORS, tagging, lifecycle, object lock, ...) into
OUT/_shardgate/buckets/<bucket>.json. Writes newer than the last segment come from their shard
headers. What the journal says was deleted stays deleted. Noncurrent versions, delete markers and
uploads in progress are counted, not written (--versions writes noncurrent versions; every
version and delete marker is listed in OUT/_shardgate/buckets/<bucket>.versions.json).

Limits without a journal (shards written before it, or its segments lost): inline objects cannot
be rescued; a multipart object is assembled from every part found for its upload, by part number;
versions the gateway superseded or deleted but has not collected yet may be found too: the newest
write of each key wins.`;

export const command: Command = {
  name: 'rescue',
  summary: 'recover objects from the backends alone (no gateway, no catalog), verified',
  help: HELP,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      options: {
        ...SOURCE_OPTIONS,
        out: { type: 'string' },
        layout: { type: 'string' },
        versions: { type: 'boolean' },
        'include-unlisted': { type: 'boolean' },
      },
      strict: true,
    });
    if (!values.out) throw new CliError('--out DIR is required');
    const layout = (values.layout ?? 'tree') as Layout;
    if (layout !== 'tree' && layout !== 'flat') throw new CliError('--layout is tree or flat');
    const sources = sourcesFrom(values);
    const ring = keyRingFrom(values);
    const tty = !values.json && Boolean(process.stderr.isTTY);
    const scanning = new Progress('scan', tty);
    const scan = await scanSources(sources, values.bucket, ring, (n) => scanning.update(n, n, `${n} files`));
    scanning.end();
    let index = new ShardIndex(scan.shards, scan.locked);
    const prefix = values.prefix ?? '';

    // The catalog journal first (rescue/journal.ts): what the catalog held, inline objects,
    // versions, part lists and bucket settings included.
    const jplan = await planObjects(
      scan.shards.filter((s) => s.header.bucket === JOURNAL_BUCKET),
      index,
      '',
      ring,
      [],
      { everyWrite: true },
    );
    const journal = await readJournal(jplan.objects, index, ring);
    journal.unreadable.push(...jplan.unplannable.map((u) => ({ key: u.key, reason: u.reason })));
    const images = replayJournal(journal.segments);
    const listImage = images.get(BUCKET_LIST_INSTANCE);
    // SSE-KMS units (rescue/kms-keys.ts): their named keys' table is in the bucket list's journal,
    // wrapped under the gateway's keys; the shards the scan kept locked for want of it open now.
    const keyRing = ring && listImage ? ringWithJournalKeys(ring, listImage) : ring;
    if (keyRing !== ring && (await unlockNamed(scan, keyRing!, values.bucket))) index = new ShardIndex(scan.shards, scan.locked);
    const imaged = bucketImages(images);
    const wanted = (b: BucketImage) => values.bucket === undefined || b.name === values.bucket;
    // Buckets whose own journal the bucket list does not hold: deleted, or hidden by a catalog that
    // was lost and started again. Never dropped silently: reported (exit 1), or rescued with --include-unlisted.
    const unlistedImages = imaged.unlistedBuckets.filter(wanted);
    const journaled = [...imaged.buckets.filter(wanted), ...(values['include-unlisted'] ? unlistedImages : [])];
    const byName = new Map(journaled.map((b) => [b.name, b]));

    // Shards of units the journal does not know: writes after its last segment (or no journal).
    const unknown = scan.shards.filter((s) => s.header.bucket !== JOURNAL_BUCKET && !byName.get(s.header.bucket)?.knownUnits.has(s.header.unitId));
    const { objects: fromHeaders, unplannable, sealed } = await planObjects(unknown, index, prefix, keyRing, scan.locked);
    const items = new Map<string, Item>();
    const ignored: { bucket: string; key: string; reason: string; deletedBucket?: boolean }[] = [];
    for (const b of journaled) {
      for (const o of journalObjects(b, index, prefix, values.versions)) {
        // A noncurrent version (--versions) goes beside the tree, under its version id.
        const version = o.version.current ? {} : { versionOf: o.version };
        const id = o.version.current ? '' : `\n${o.version.versionId}`;
        items.set(
          `${b.name}\n${o.version.key}${id}`,
          o.kind === 'coded' ? { kind: 'planned', o: o.planned, from: 'journal', ...version } : { kind: 'inline', o, from: 'journal', ...version },
        );
      }
    }
    for (const o of fromHeaders) {
      const b = byName.get(o.bucket);
      if (!b) {
        // A bucket the journal's bucket list does not hold: deleted, unless written after the list's last segment.
        if (listImage && o.createdAt <= listImage.takenAt && !values['include-unlisted']) {
          ignored.push({
            bucket: o.bucket,
            key: o.key,
            reason: `the catalog's bucket list of ${listImage.takenAt} has no bucket ${o.bucket} (deleted, or the catalog was lost and its journal hidden)`,
            deletedBucket: true,
          });
          continue;
        }
      } else {
        const newest = b.versions
          .filter((v) => v.key === o.key)
          .map((v) => v.lastModified)
          .sort()
          .at(-1);
        if (newest && o.createdAt <= newest) {
          ignored.push({ bucket: o.bucket, key: o.key, reason: `a write of ${o.createdAt} the catalog never held, older than its version of ${newest}` });
          continue;
        }
      }
      items.set(`${o.bucket}\n${o.key}`, { kind: 'planned', o, from: 'headers' });
    }
    // Tags set after a write are in a tag record beside its first unit (engine/tag-record.ts): the
    // objects planned from shard headers take them (the journal's already hold the latest).
    for (const item of items.values()) {
      if (item.kind !== 'planned' || item.from !== 'headers' || item.o.multipart) continue;
      const first = item.o.writes[0]?.units[0]?.unit;
      const holders = first && scan.tagRecords.get(first.unitId);
      if (!first || !holders) continue;
      const dek = first.seal && keyRing ? await keyRing.open(first.seal).catch(() => undefined) : undefined;
      const record = await readTagRecord(holders, item.o.bucket, first.unitId, dek);
      if (record) item.o.metadata = withTags((item.o.metadata ?? { user: {} }) as ObjectMetadata, record.tags);
    }
    const list = [...items.values()].sort((a, b) => (bucketOf(a) === bucketOf(b) ? (keyOf(a) < keyOf(b) ? -1 : 1) : bucketOf(a) < bucketOf(b) ? -1 : 1));
    const total = list.reduce((n, i) => n + sizeOf(i), 0);
    const inlineReader = new UnitStore([], undefined, { keyRing });
    const progress = new Progress('rescue', tty);
    let done = 0;
    const results: Record<string, unknown>[] = [];
    for (const item of list) {
      const bucket = bucketOf(item),
        key = keyOf(item),
        size = sizeOf(item);
      const path = item.versionOf ? versionPath(values.out, bucket, item.versionOf) : outputPath(values.out, bucket, key, layout);
      const temp = `${path}.shardgate-rescue-${process.pid}`;
      const o = item.kind === 'planned' ? item.o : null;
      const keys = o ? [...new Set(o.writes.flatMap((w) => w.units.flatMap((u) => (u.unit.seal ? [u.unit.seal.kid] : []))))] : [];
      const base = {
        bucket,
        key,
        size,
        path,
        from: item.from,
        ...objectMetadata(item),
        ...(item.versionOf ? { versionId: shownId(item.versionOf), current: false } : {}),
        ...(item.kind === 'inline' ? { inline: true } : {}),
        ...(o?.multipart ? { multipart: o.multipart } : {}),
        ...(keys.length ? { sealedUnder: keys } : {}),
      };
      try {
        mkdirSync(dirname(path), { recursive: true });
        const file = await open(temp, 'w');
        let report;
        try {
          const sink = async (chunk: Uint8Array) => void (await file.write(chunk));
          const onBytes = (n: number) => progress.update((done += n), total, `${bytes(done)} of ${bytes(total)}`);
          report = o ? await readObject(index, o, keyRing, sink, onBytes) : await readInline(inlineReader, (item as InlineItem).o, sink, onBytes);
        } finally {
          await file.close();
        }
        if (report.md5Mismatches.length) throw new Error(`MD5 differs from the footer's: ${JSON.stringify(report.md5Mismatches)}`);
        renameSync(temp, path);
        // Shards no source had, then shards the readers found damaged: all decoded around.
        const missing = o
          ? o.writes.flatMap((w) =>
              w.units.flatMap((u) => u.unit.missing.map((i) => ({ unitId: u.unit.unitId, shard: i, backend: u.unit.placement[i]!, reason: 'missing' }))),
            )
          : [];
        results.push({ ...base, status: 'ok', decodedAround: [...missing, ...report.unhealthy] });
      } catch (err) {
        rmSync(temp, { force: true });
        const message = errorMessage(err);
        results.push({
          ...base,
          status: 'failed',
          error: /EEXIST|ENOTDIR|EISDIR/.test(message) ? `${message} (a key that is also a folder of another key: try --layout flat)` : message,
        });
      }
    }
    // Each bucket's settings as the journal holds them (no object store has a place for them).
    const settings = journaled.map((b) => writeBucketSettings(values.out!, b, values.versions ? (v) => versionPath(values.out!, b.name, v) : null));
    progress.end();
    const failed = results.filter((r) => r.status !== 'ok');
    const skippedBuckets = skippedBucketsOf(
      values['include-unlisted'] ? [] : unlistedImages,
      ignored.filter((i) => i.deletedBucket),
      prefix,
    );
    // Each bucket's objects with their metadata and tags (a file system keeps neither).
    const objectFiles = writeObjectMetadata(values.out, results);
    const keysNeeded = [...new Set(sealed.map((u) => u.kid))].sort();
    const sealedReport = sealed.map(sealedEntry);
    const notWritten = journaled.reduce(
      (n, b) => ({
        noncurrentVersions:
          n.noncurrentVersions + (values.versions ? 0 : b.versions.filter((v) => !v.current && !v.deleteMarker && v.key.startsWith(prefix)).length),
        deleteMarkers: n.deleteMarkers + b.versions.filter((v) => v.deleteMarker && v.key.startsWith(prefix)).length,
        uploadsInProgress: n.uploadsInProgress + b.uploads,
      }),
      { noncurrentVersions: 0, deleteMarkers: 0, uploadsInProgress: 0 },
    );
    const journalSummary = {
      segments: journal.segments.length,
      unreadable: journal.unreadable,
      buckets: journaled.map((b) => ({ bucket: b.name, asOf: b.takenAt, doubts: b.doubts })),
      bucketList: listImage ? { asOf: listImage.takenAt, doubts: listImage.doubts } : null,
    };
    const doubts = [...(listImage?.doubts ?? []), ...journaled.flatMap((b) => b.doubts)];
    const summary = {
      objects: list.length,
      rescued: results.length - failed.length,
      failed: failed.length,
      bytes: total,
      filesScanned: scan.files,
      shardsFound: scan.shards.length + scan.locked.length,
      fromJournal: list.filter((i) => i.from === 'journal').length,
      fromHeaders: list.filter((i) => i.from === 'headers').length,
      inline: list.filter((i) => i.kind === 'inline').length,
      settings,
      objectFiles,
      notWritten,
      ignored,
      skippedBuckets,
      journal: journalSummary,
      journalSealed: !journal.segments.length && sealed.length > 0,
      badFiles: scan.bad,
      unplannable,
      sealedUnread: sealed.length,
      keysNeeded,
    };
    if (values.json) printJson({ summary, objects: results, sealed: sealedReport });
    else {
      for (const r of results) {
        const around = (r.decodedAround as unknown[] | undefined)?.length
          ? ` (decoded around ${(r.decodedAround as unknown[]).length} missing or damaged shard(s))`
          : '';
        process.stdout.write(
          r.status === 'ok'
            ? `ok      ${r.bucket}/${r.key}  ${bytes(r.size as number)}${r.inline ? '  [inline, from the journal]' : ''}${r.multipart ? (r.from === 'journal' ? '  [multipart: its parts as completed, from the journal]' : '  [multipart: every part found]') : ''}${around}\n`
            : `FAILED  ${r.bucket}/${r.key}: ${r.error}\n`,
        );
      }
      for (const u of unplannable) process.stdout.write(`FAILED  ${u.bucket}/${u.key} (unit ${u.unitId}): ${u.reason}\n`);
      for (const u of sealedReport)
        process.stdout.write(
          `SEALED  unit ${u.unitId}${u.bucket ? ` in bucket ${u.bucket}` : ''} (${u.shards} shard(s)): ${u.reason}; not read, nothing written\n`,
        );
      for (const b of scan.bad) process.stdout.write(`skipped ${b.source}: ${b.key}: ${b.problem}\n`);
      for (const i of ignored) process.stdout.write(`ignored ${i.bucket}/${i.key}: ${i.reason}\n`);
      for (const b of skippedBuckets)
        process.stdout.write(`SKIPPED bucket ${b.bucket}: ${b.reason}; ${b.objects} object(s) not written (--include-unlisted writes them)\n`);
      for (const u of journal.unreadable)
        process.stdout.write(`FAILED  journal segment ${u.key}: ${u.reason} (the catalog's changes it held may be missing)\n`);
      for (const d of doubts) process.stdout.write(`DOUBT   journal: ${d}\n`);
      if (journal.segments.length) {
        process.stdout.write(
          `journal: ${journal.segments.length} segment(s); ${journaled.length} bucket(s) as of ${journaled.map((b) => `${b.name} ${b.takenAt}`).join(', ') || '-'}; settings in ${join(values.out, SETTINGS_DIR)}\n`,
        );
        process.stdout.write(
          `journal: ${summary.fromJournal} object(s) from the journal (${summary.inline} inline), ${summary.fromHeaders} from shard headers of later writes; not written: ${notWritten.noncurrentVersions} noncurrent version(s)${notWritten.noncurrentVersions ? ' (--versions writes them)' : ''}, ${notWritten.deleteMarkers} delete marker(s) (listed in the versions file), ${notWritten.uploadsInProgress} multipart upload(s) in progress\n`,
        );
      } else if (sealed.length) {
        // Without the key nothing tells the journal's units from the data's: both are sealed under a shelf of the key.
        process.stdout.write(
          `journal: sealed: none readable without the key: the catalog journal, if the gateway wrote one, is among the ${sealed.length} sealed unit(s), which need key(s) ${keysNeeded.map((k) => `"${k}"`).join(', ')} (--key ID=BASE64)\n`,
        );
      } else process.stdout.write('journal: none found: objects from shard headers alone (inline objects, settings and part lists cannot be known)\n');
      process.stdout.write(
        `rescued ${summary.rescued} of ${summary.objects} object(s), ${bytes(total)}, into ${values.out} (${summary.shardsFound} shards in ${scan.files} files)\n`,
      );
      if (sealed.length) process.stdout.write(`${sealedSummary(sealed.length, keysNeeded)}\n`);
    }
    return failed.length || unplannable.length || sealed.length || journal.unreadable.length || doubts.length || skippedBuckets.length ? 1 : 0;
  },
};

type InlineItem = { kind: 'inline'; o: Extract<JournalObject, { kind: 'inline' }>; from: 'journal'; versionOf?: VersionImage };
type Item = ({ kind: 'planned'; o: PlannedObject; from: 'journal' | 'headers' } | InlineItem) & { versionOf?: VersionImage };
const bucketOf = (i: Item) => (i.kind === 'planned' ? i.o.bucket : i.o.bucket);
const keyOf = (i: Item) => (i.kind === 'planned' ? i.o.key : i.o.version.key);
const sizeOf = (i: Item) => (i.kind === 'planned' ? i.o.size : i.o.manifest.size);

/** Where bucket settings go: not a bucket name (S3 names have no '_'), so never a bucket's folder. */
const SETTINGS_DIR = '_shardgate';

/** An inline object's bytes, from its manifest (a sealed one opened with the ring; its MD5 checked against the ETag). */
async function readInline(
  reader: UnitStore,
  o: InlineItem['o'],
  sink: (chunk: Uint8Array) => Promise<void>,
  onBytes: (n: number) => void,
): Promise<ReadReport> {
  const m = o.manifest;
  const stream = await reader.open(o.bucket, m.key, m.storage, 0, m.size - 1);
  const hash = createHash('md5');
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
    hash.update(chunk);
    await sink(chunk);
    onBytes(chunk.length);
  }
  const expected = etagMd5(m.etag);
  const got = hash.digest('hex');
  // The ETag as the gateway made it from that MD5: the MD5 itself, but not for SSE-KMS (model/sse.ts etagFor).
  return { unhealthy: [], md5Mismatches: expected && etagFor(got, m.metadata.sse) !== m.etag ? [{ write: m.versionId, expected, got }] : [] };
}

/** The id S3 shows for a version ('null' for the null version). */
const shownId = (v: VersionImage) => (v.nullVersion ? 'null' : v.versionId);

/** Where a noncurrent version goes: OUT/_shardgate/versions/<bucket>/<key percent-encoded>/<version id>. */
function versionPath(out: string, bucket: string, v: VersionImage): string {
  return join(out, SETTINGS_DIR, 'versions', bucket, encodeURIComponent(v.key), encodeURIComponent(shownId(v)));
}

/**
 * OUT/_shardgate/buckets/<bucket>.json: the bucket, its settings, and what its journal was; and
 * <bucket>.versions.json: every version and delete marker of every key, newest first as
 * ListObjectVersions lists them, with the file each was written to (`file`: with --versions).
 */
function writeBucketSettings(out: string, b: BucketImage, fileOf: ((v: VersionImage) => string) | null): string {
  const path = join(out, SETTINGS_DIR, 'buckets', `${b.name}.json`);
  mkdirSync(dirname(path), { recursive: true });
  const versions = {
    current: b.versions.filter((v) => v.current).length,
    noncurrent: b.versions.filter((v) => !v.current && !v.deleteMarker).length,
    deleteMarkers: b.versions.filter((v) => v.deleteMarker).length,
  };
  writeFileSync(
    path,
    JSON.stringify(
      {
        bucket: b.name,
        region: b.region,
        created: new Date(b.created).toISOString(),
        settings: b.settings,
        versions,
        uploadsInProgress: b.uploads,
        journalAsOf: b.takenAt,
        doubts: b.doubts,
      },
      null,
      2,
    ),
  );
  const listed = [...b.versions]
    .sort((x, y) => (x.key === y.key ? y.seq - x.seq : x.key < y.key ? -1 : 1))
    .map((v) => ({
      key: v.key,
      versionId: shownId(v),
      isLatest: b.versions.every((o) => o.key !== v.key || o.seq <= v.seq),
      deleteMarker: v.deleteMarker,
      lastModified: v.lastModified,
      ...(v.manifest ? { size: v.manifest.size, etag: v.manifest.etag } : {}),
      ...(v.manifest && !v.current && fileOf ? { file: fileOf(v) } : {}),
    }));
  writeFileSync(join(out, SETTINGS_DIR, 'buckets', `${b.name}.versions.json`), JSON.stringify(listed, null, 1));
  return path;
}

/** The object's metadata as S3 shows it (content headers, user metadata, tags), for the output. */
function objectMetadata(item: Item): {
  metadata?: {
    contentType?: string;
    contentEncoding?: string;
    contentDisposition?: string;
    contentLanguage?: string;
    cacheControl?: string;
    expires?: string;
    user: Record<string, string>;
    tags: { key: string; value: string }[];
  };
} {
  const m = (item.kind === 'planned' ? item.o.metadata : item.o.manifest.metadata) as ObjectMetadata | undefined;
  if (!m || typeof m !== 'object') return {};
  const { contentType, contentEncoding, contentDisposition, contentLanguage, cacheControl, expires } = m;
  const headers = Object.fromEntries(
    Object.entries({ contentType, contentEncoding, contentDisposition, contentLanguage, cacheControl, expires }).filter(([, v]) => v !== undefined),
  );
  return { metadata: { ...headers, user: m.user ?? {}, tags: (m.tags ?? []).map((t) => ({ key: t.key, value: t.value })) } };
}

/**
 * OUT/_shardgate/buckets/<bucket>.objects.json: every object written, with its file, size and
 * metadata (content headers, user metadata, tags): what the files alone cannot keep.
 */
function writeObjectMetadata(out: string, results: Record<string, unknown>[]): string[] {
  const byBucket = new Map<string, Record<string, unknown>[]>();
  for (const r of results) if (r.status === 'ok') byBucket.set(String(r.bucket), [...(byBucket.get(String(r.bucket)) ?? []), r]);
  const files: string[] = [];
  for (const [bucket, list] of byBucket) {
    const path = join(out, SETTINGS_DIR, 'buckets', `${bucket}.objects.json`);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(
      path,
      JSON.stringify(
        list.map((r) => ({
          key: r.key,
          ...(r.versionId ? { versionId: r.versionId } : {}),
          file: r.path,
          size: r.size,
          ...(r.metadata ? (r.metadata as object) : {}),
        })),
        null,
        1,
      ),
    );
    files.push(path);
  }
  return files;
}

/** Buckets a rescue did not write: their own journal's image, or only shard headers the bucket list says are of a deleted bucket. */
function skippedBucketsOf(
  unlisted: BucketImage[],
  ignored: { bucket: string }[],
  prefix: string,
): { bucket: string; reason: string; objects: number; journalAsOf: string | null }[] {
  const out = new Map<string, { bucket: string; reason: string; objects: number; journalAsOf: string | null }>();
  for (const b of unlisted) {
    const objects = b.versions.filter((v) => v.current && v.key.startsWith(prefix)).length;
    out.set(b.name, {
      bucket: b.name,
      reason: `its journal (as of ${b.takenAt}) holds it, the bucket list's does not: deleted, or the catalog was lost and its journal hidden`,
      objects,
      journalAsOf: b.takenAt,
    });
  }
  for (const i of ignored) {
    const e = out.get(i.bucket) ?? {
      bucket: i.bucket,
      reason: "the bucket list's journal does not hold it and its shards are older than that journal: deleted, or the catalog was lost",
      objects: 0,
      journalAsOf: null,
    };
    if (!out.has(i.bucket) || e.journalAsOf === null) e.objects++;
    out.set(i.bucket, e);
  }
  return [...out.values()].sort((a, b) => (a.bucket < b.bucket ? -1 : 1));
}
