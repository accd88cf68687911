/**
 * The multipart state of one bucket's CatalogObject: uploads and their parts in SQLite.
 * Synchronous like sql-objects.ts (CatalogObject wraps each mutation in transactionSync).
 * Spec: S3 CreateMultipartUpload, UploadPart (a part number uploaded again replaces the part),
 * CompleteMultipartUpload, AbortMultipartUpload, ListParts, ListMultipartUploads (uploads by key,
 * then by initiation: upload ids sort by creation time, see rules.ts).
 */
import type { CatalogWriteConditions } from './rules.ts';
import type { ObjectManifest } from '../format/manifest.ts';
import { S3Error } from '../model/errors.ts';
import type * as S from '../model/object-store.ts';
import { afterUpload, listRanges, startBound, uploadsResult, type Bound } from './range-list.ts';
import { COMPLETED_UPLOAD_MEMORY_MS, completedUpload, newUploadId, unusedPartUnits } from './rules.ts';
import { uploadInfo, uploadRecord, type UploadRow } from './sql-schema.ts';
import { rangeWhere, type SqlObjects } from './sql-objects.ts';
import type { CommitResult, CompletedUpload, PartRecord, UploadRecord } from './types.ts';

export class SqlMultipart {
  constructor(
    private readonly sql: SqlStorage,
    private readonly objects: SqlObjects,
  ) {}

  get(key: string, uploadId: string): UploadRecord {
    const row = this.sql.exec<UploadRow>('SELECT * FROM uploads WHERE upload_id = ?', uploadId).toArray()[0];
    if (!row || row.key !== key) throw new S3Error('NoSuchUpload', undefined, { UploadId: uploadId });
    return uploadRecord(row);
  }

  create(key: string, options: { metadata: S.ObjectMetadata; checksum: S.MultipartChecksumSpec | null }): UploadRecord {
    const record: UploadRecord = { key, uploadId: newUploadId(), initiated: new Date(), checksum: options.checksum, metadata: options.metadata };
    this.sql.exec(
      'INSERT INTO uploads (upload_id, key, initiated, checksum, metadata) VALUES (?, ?, ?, ?, ?)',
      record.uploadId,
      key,
      record.initiated.getTime(),
      record.checksum ? JSON.stringify(record.checksum) : null,
      JSON.stringify(record.metadata),
    );
    return record;
  }

  putPart(key: string, uploadId: string, part: PartRecord, graceMs: number): void {
    this.get(key, uploadId);
    const row = this.sql.exec<{ record: string }>('SELECT record FROM parts WHERE upload_id = ? AND part_number = ?', uploadId, part.partNumber).toArray()[0];
    const replaced: PartRecord | undefined = row && (JSON.parse(row.record) as PartRecord);
    const kept = new Set(part.units.map((u) => u.unitId));
    if (replaced)
      this.objects.queueGarbage(
        replaced.units.filter((u) => !kept.has(u.unitId)),
        Date.now() + graceMs,
      );
    this.objects.release(part.units);
    this.sql.exec('INSERT OR REPLACE INTO parts (upload_id, part_number, record) VALUES (?, ?, ?)', uploadId, part.partNumber, JSON.stringify(part));
  }

  listParts(key: string, uploadId: string, partNumberMarker: number, maxParts: number): { parts: PartRecord[]; isTruncated: boolean } {
    this.get(key, uploadId);
    const rows = this.parts(uploadId, partNumberMarker, Math.max(0, maxParts) + 1);
    return { parts: rows.slice(0, Math.max(0, maxParts)), isTruncated: rows.length > maxParts };
  }

  complete(key: string, uploadId: string, manifest: ObjectManifest, conditions: CatalogWriteConditions, graceMs: number): CommitResult {
    this.get(key, uploadId);
    const unused = unusedPartUnits(manifest, this.parts(uploadId, 0, -1), uploadId);
    const result = this.objects.commit(key, manifest, conditions, graceMs, unused);
    this.end(uploadId);
    const now = Date.now();
    this.sql.exec('DELETE FROM completed_uploads WHERE completed < ?', now - COMPLETED_UPLOAD_MEMORY_MS);
    this.sql.exec(
      'INSERT OR REPLACE INTO completed_uploads (upload_id, completed, result) VALUES (?, ?, ?)',
      uploadId,
      now,
      JSON.stringify(completedUpload(manifest, result)),
    );
    return result;
  }

  /** A completion remembered for COMPLETED_UPLOAD_MEMORY_MS, or null. */
  completed(key: string, uploadId: string): CompletedUpload | null {
    const row = this.sql
      .exec<{ result: string }>(
        'SELECT result FROM completed_uploads WHERE upload_id = ? AND completed >= ?',
        uploadId,
        Date.now() - COMPLETED_UPLOAD_MEMORY_MS,
      )
      .toArray()[0];
    const result: CompletedUpload | null = row ? JSON.parse(row.result) : null;
    return result?.key === key ? result : null;
  }

  abort(key: string, uploadId: string, graceMs: number): void {
    this.get(key, uploadId);
    this.objects.queueGarbage(
      this.parts(uploadId, 0, -1).flatMap((p) => p.units),
      Date.now() + graceMs,
    );
    this.end(uploadId);
  }

  list(options: S.ListUploadsOptions): S.ListUploadsResult {
    const { prefix, delimiter, keyMarker, uploadIdMarker, maxUploads } = options;
    const fetch = (lower: Bound, upper: string | null, limit: number) => {
      const after = lower.afterId !== undefined;
      const where = after ? '(key, upload_id) > (?, ?)' + (upper === null ? '' : ' AND key < ?') : rangeWhere('key', lower, upper);
      const args = [lower.key, ...(after ? [lower.afterId!] : []), ...(upper === null ? [] : [upper])];
      return this.sql
        .exec<UploadRow>(`SELECT * FROM uploads WHERE ${where} ORDER BY key, upload_id LIMIT ?`, ...args, limit)
        .toArray()
        .map(uploadInfo);
    };
    const start = startBound(prefix, delimiter, keyMarker, uploadIdMarker);
    return uploadsResult(listRanges(fetch, afterUpload, { prefix, delimiter, start, maxEntries: maxUploads }));
  }

  /** Parts after `marker` in part number order; limit -1: all. */
  private parts(uploadId: string, marker: number, limit: number): PartRecord[] {
    return this.sql
      .exec<{ record: string }>('SELECT record FROM parts WHERE upload_id = ? AND part_number > ? ORDER BY part_number LIMIT ?', uploadId, marker, limit)
      .toArray()
      .map((r) => JSON.parse(r.record) as PartRecord);
  }

  private end(uploadId: string): void {
    this.sql.exec('DELETE FROM parts WHERE upload_id = ?', uploadId);
    this.sql.exec('DELETE FROM uploads WHERE upload_id = ?', uploadId);
  }
}
