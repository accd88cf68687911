/**
 * S3 errors across Durable Object RPC. An exception thrown inside a Durable Object reaches the
 * caller as a plain Error: its class, `code` and `fields` are lost. So CatalogObject returns the
 * S3 errors of the Catalog contract as data (`Reply`) and DurableCatalog rethrows them as S3Error.
 * Any other exception is a bug or an outage and still propagates as an exception.
 */
import type { BucketSettings } from '../model/bucket-settings.ts';
import { S3Error, type S3ErrorCode } from '../model/errors.ts';
import { noteLogging, type LoggingNote } from '../model/request-notes.ts';

export interface ErrorData {
  code: S3ErrorCode;
  message: string;
  fields: Record<string, string>;
}

/**
 * `logging` (access logging, model/request-notes.ts): a bucket's reply carries the bucket's
 * logging configuration when it has one, so the request path learns it without a call of its own.
 */
export type Reply<T> = ({ ok: T; error?: undefined } | { error: ErrorData }) & { logging?: LoggingNote };

/** Runs `fn`, turning a thrown S3Error into `{ error }`. */
export function reply<T>(fn: () => T): Reply<T> {
  try {
    return { ok: fn() };
  } catch (e) {
    return errorReply(e);
  }
}

/** A thrown S3Error as `{ error }`; anything else thrown on (a bug or an outage). */
function errorReply(e: unknown): { error: ErrorData } {
  if (e instanceof S3Error) return { error: { code: e.code, message: e.message, fields: { ...e.fields } } };
  throw e;
}

/** reply() of an asynchronous `fn` (a method that awaits other objects between its steps). */
export async function replyAsync<T>(fn: () => Promise<T>): Promise<Reply<T>> {
  try {
    return { ok: await fn() };
  } catch (e) {
    return errorReply(e);
  }
}

/** The value of `r`, or its error rethrown as S3Error. */
export function unwrap<T>(r: Reply<T>): T {
  if (r.logging) noteLogging(r.logging);
  if (r.error) throw new S3Error(r.error.code, r.error.message, r.error.fields);
  return (r as { ok: T }).ok;
}

/**
 * The answer of a fenced call (CatalogObject.fenced): the method's own answer, or, when the
 * bucket's request-path settings are no longer those the request was checked against, the
 * settings as they are (and nothing done).
 */
export type Fenced<T> = { ran: T; stale?: undefined } | { stale: BucketSettings };
