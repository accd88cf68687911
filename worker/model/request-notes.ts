/**
 * What one S3 request learns on its way that its access log record needs, carried with the
 * request across awaits (AsyncLocalStorage, as app/background.ts carries its context) so that no
 * layer passes it by hand:
 * - a bucket's logging configuration, as the catalog's replies bring it (catalog/rpc.ts): a
 *   request learns whether its bucket logs from calls it makes anyway, never from a call of its
 *   own, so a bucket without logging costs no catalog call at all;
 * - the entries a DeleteObjects request deleted (one record each).
 * Bounded: one entry per bucket the request touched, and DeleteObjects' own 1,000-key limit.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { BucketLogging } from './bucket-logging.ts';

/** What a catalog reply says of its bucket's logging (state row 'logging'). */
export interface LoggingNote {
  bucket: string;
  region: string;
  config: BucketLogging;
}

export interface RequestNotes {
  logging: Map<string, LoggingNote>;
  deleted: { key: string; versionId: string | null; status: number; error: string | null }[];
}

const current = new AsyncLocalStorage<RequestNotes>();

export function newRequestNotes(): RequestNotes {
  return { logging: new Map(), deleted: [] };
}

/** Runs `fn` as a request whose notes are `notes`. */
export function withRequestNotes<T>(notes: RequestNotes, fn: () => T): T {
  return current.run(notes, fn);
}

/** Runs `fn` outside any request's notes (work a request started but that is not part of it). */
export function outsideRequestNotes<T>(fn: () => T): T {
  return current.exit(fn);
}

export function noteLogging(note: LoggingNote): void {
  current.getStore()?.logging.set(note.bucket, note);
}

export function noteDeleted(entry: RequestNotes['deleted'][number]): void {
  current.getStore()?.deleted.push(entry);
}
