/**
 * Server access logging at the front door: every S3 request runs with request notes
 * (model/request-notes.ts); when a catalog reply told it that the request's bucket logs (or the
 * copy source's), its records (model/access-log-record.ts) go to the logging target after the
 * response, in the request's waitUntil (upkeep/access-log.ts delivers them). A request to a
 * bucket without logging builds nothing and calls nothing. Nothing here can fail or slow the
 * client's request: the records are handed over after the handler, and their delivery never throws.
 * Records: the request's own (its bucket and key); the GET half of a copy, to the source bucket
 * (REST.COPY.OBJECT_GET); one per entry of a DeleteObjects request.
 * Not logged (no catalog reply names the bucket's logging): requests refused before any catalog
 * call (authentication, the signer's scope), HeadBucket, CreateBucket and ListBuckets.
 * TotalTime and TurnAroundTime are both the time to the response's headers (a streamed body goes
 * on after the record is made).
 */
import { ownerRow } from '../model/account.ts';
import type { MiddlewareHandler } from 'hono';
import { logGroup } from '../model/bucket-logging.ts';
import { formatAccessLogRecord, type AccessLogFields } from '../model/access-log-record.ts';
import { newRequestNotes, withRequestNotes, type LoggingNote, type RequestNotes } from '../model/request-notes.ts';
import { splitRawUrl } from '../model/raw-url.ts';
import { accessLogOperation, copySourceOperation, DELETE_ENTRY_OPERATION } from '../s3/access-log-operations.ts';
import type { AppEnv } from '../s3/context.ts';
import { readCopySource } from '../s3/copy.ts';
import type { AccessLogDelivery } from '../upkeep/access-log.ts';
import { toS3Error } from './error-map.ts';

type Ctx = Parameters<MiddlewareHandler<AppEnv>>[0];

export function accessLogging(delivery: AccessLogDelivery): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = Date.now();
    const notes = newRequestNotes();
    await withRequestNotes(notes, next);
    if (notes.logging.size === 0) return; // no bucket of this request logs: nothing built, nothing called
    try {
      const records = accessLogRecords(c, notes, started, Date.now());
      const byTarget = new Map<string, { note: LoggingNote; lines: { at: number; line: string }[] }>();
      for (const r of records) {
        const group = logGroup(r.note.config, r.note.bucket, r.note.region);
        const id = `${r.note.config.targetBucket}\n${JSON.stringify(group)}`;
        const entry = byTarget.get(id) ?? { note: r.note, lines: [] };
        entry.lines.push({ at: started, line: r.line });
        byTarget.set(id, entry);
      }
      const keepAlive = (p: Promise<unknown>) => c.get('scope').waitUntil(p);
      for (const { note, lines } of byTarget.values()) {
        keepAlive(delivery.record(note.config.targetBucket, logGroup(note.config, note.bucket, note.region), lines, keepAlive, ownerRow(note.config.owner)));
      }
    } catch (err) {
      console.error('shardgate: access log record not made', err); // a bug; the client's answer stands
    }
  };
}

/** The records of the request in context `c` (after its handler), with the logging each goes to. */
export function accessLogRecords(c: Ctx, notes: RequestNotes, started: number, now: number): { note: LoggingNote; line: string }[] {
  const op = c.get('operation');
  const bucket = c.get('bucket');
  if (!op || !bucket) return [];
  const req = c.req.raw;
  const res = c.res;
  const auth = c.get('auth');
  const { rawPath, rawQuery } = splitRawUrl(req.url);
  const cf = (req as { cf?: { tlsCipher?: string; tlsVersion?: string } }).cf;
  const length = Number(res.headers.get('content-length') ?? '') || null;
  const range = /\/(\d+)$/.exec(res.headers.get('content-range') ?? '');
  const objectSize =
    req.method === 'GET' || req.method === 'HEAD'
      ? range
        ? Number(range[1])
        : length
      : op === 'PutObject' || op === 'UploadPart' || op === 'PostObject'
        ? (auth?.decodedContentLength ?? null)
        : null;
  const base: AccessLogFields = {
    bucket,
    time: new Date(started),
    remoteIp: req.headers.get('cf-connecting-ip'),
    requester: auth?.accessKeyId ?? null,
    requestId: c.get('requestId'),
    operation: accessLogOperation(op, req.method),
    key: c.get('key'),
    method: req.method,
    uri: rawQuery ? `${rawPath}?${rawQuery}` : rawPath,
    status: res.status,
    errorCode: c.error ? toS3Error(c.error).code : null,
    bytesSent: req.method === 'HEAD' ? null : length,
    objectSize,
    totalMs: now - started,
    turnAroundMs: now - started,
    referer: req.headers.get('referer'),
    userAgent: req.headers.get('user-agent'),
    versionId: res.headers.get('x-amz-version-id'),
    hostId: null,
    sigVersion: auth?.signature === undefined ? null : auth.signature.startsWith('sigv2') ? 'SigV2' : 'SigV4',
    cipherSuite: cf?.tlsCipher ?? null,
    authType: auth?.signature?.endsWith('-header') ? 'AuthHeader' : auth?.signature?.endsWith('-query') ? 'QueryString' : null,
    host: req.headers.get('host'),
    tlsVersion: cf?.tlsVersion ?? null,
    ...(c.get('aclRequired') ? { aclRequired: true } : {}),
  };
  const out: { note: LoggingNote; line: string }[] = [];
  const own = notes.logging.get(bucket);
  if (own) {
    out.push({ note: own, line: formatAccessLogRecord({ ...base, owner: own.config.owner }) });
    for (const d of op === 'DeleteObjects' ? notes.deleted : []) {
      out.push({
        note: own,
        line: formatAccessLogRecord({
          ...base,
          owner: own.config.owner,
          operation: DELETE_ENTRY_OPERATION,
          key: d.key,
          versionId: d.versionId,
          status: d.status,
          errorCode: d.error,
          bytesSent: null,
        }),
      });
    }
  }
  if ((op === 'CopyObject' || op === 'UploadPartCopy') && req.headers.has('x-amz-copy-source')) {
    let source: ReturnType<typeof readCopySource> | null = null;
    try {
      source = readCopySource(req.headers);
    } catch {
      source = null; // the handler refused the header
    }
    const theirs = source ? notes.logging.get(source.bucket) : undefined;
    if (source && theirs) {
      out.push({
        note: theirs,
        line: formatAccessLogRecord({
          ...base,
          owner: theirs.config.owner,
          bucket: source.bucket,
          operation: copySourceOperation(op),
          key: source.key,
          versionId: source.versionId ?? res.headers.get('x-amz-copy-source-version-id'),
          bytesSent: null,
          objectSize: null,
        }),
      });
    }
  }
  return out;
}
