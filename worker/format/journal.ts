/**
 * The catalog journal as stored (docs/FORMAT.md, "The catalog journal"): what lets the catalog be
 * rebuilt from the backends alone, inline objects, versions, delete markers, multipart part
 * lists and bucket settings included, which no shard header holds.
 *
 * Each catalog instance (a bucket's, and the bucket list's) writes its changes in numbered
 * segments. A segment is one object of the reserved bucket JOURNAL_BUCKET under the key
 * `<instance>/<segment number, 12 digits>`, erasure-coded and (with a key ring) sealed like any
 * object, so a journal survives what data survives and a backend learns nothing from it.
 * A record is one catalog row as it was when the segment was taken (`row`), or its absence
 * (`row` omitted: the row was deleted). Replaying segments in number order, the later record of
 * a row winning, gives the instance's journaled tables as of the newest segment's `takenAt`.
 *
 * Generations bound the replay: a generation starts by dumping every journaled row (a dump
 * spread over as many segments as it takes, changes interleaved); the segment that ends the dump
 * says `completes`. From the first segment of a completed generation on, the segments are a whole
 * image, so older segments are then deleted. `previous` is the newest segment acknowledged as
 * written when this one was taken: a reader that does not find it knows changes may be missing.
 */

/** The bucket journal segments are stored under: not a valid S3 bucket name, so never a user's. */
export const JOURNAL_BUCKET = '.shardgate-journal';

/** The instance holding the bucket list (catalog/routing.ts BUCKET_LIST) in segment keys. */
export const BUCKET_LIST_INSTANCE = '__buckets__';

export const JOURNAL_FORMAT = 1;

export type JournalValue = string | number | null;

export interface JournalRecord {
  /** Table. */
  t: string;
  /** The row's primary key values, in the table's key order. */
  k: JournalValue[];
  /** The row (column -> value); absent: the row no longer exists. */
  r?: Record<string, JournalValue>;
}

export interface JournalSegment {
  format: typeof JOURNAL_FORMAT;
  /** The catalog schema version the rows are in (catalog/sql-schema.ts SCHEMA_VERSION). */
  schema: number;
  /** BUCKET_LIST_INSTANCE, or a bucket's name. */
  instance: string;
  segment: number;
  generation: number;
  /** The first segment of this segment's generation. */
  generationFirst: number;
  /** This segment ends its generation's dump: from generationFirst on, the segments are a whole image. */
  completes: boolean;
  /** The newest segment acknowledged written when this one was taken (0: none). */
  previous: number;
  /** ISO 8601: when the rows were read. Every change committed before it is in this segment or an earlier one. */
  takenAt: string;
  records: JournalRecord[];
}

const SEGMENT_DIGITS = 12;

/** The object key of one segment in JOURNAL_BUCKET. */
export function segmentKey(instance: string, segment: number): string {
  return `${instance}/${String(segment).padStart(SEGMENT_DIGITS, '0')}`;
}

/** The instance and number a segment key names; null for a key that is not one. */
export function parseSegmentKey(key: string): { instance: string; segment: number } | null {
  const slash = key.lastIndexOf('/');
  const digits = key.slice(slash + 1);
  if (slash <= 0 || digits.length !== SEGMENT_DIGITS || !/^\d+$/.test(digits)) return null;
  return { instance: key.slice(0, slash), segment: Number(digits) };
}

const utf8 = new TextEncoder();

export function encodeSegment(segment: JournalSegment): Uint8Array {
  return utf8.encode(JSON.stringify(segment));
}

/** Parses a segment's bytes; throws naming what is wrong (a reader reports it, never guesses). */
export function decodeSegment(bytes: Uint8Array): JournalSegment {
  const s = JSON.parse(new TextDecoder().decode(bytes)) as JournalSegment;
  if (s?.format !== JOURNAL_FORMAT) throw new Error(`journal segment format ${String(s?.format)}, this release reads ${JOURNAL_FORMAT}`);
  for (const field of ['schema', 'segment', 'generation', 'generationFirst', 'previous'] as const) {
    if (!Number.isSafeInteger(s[field])) throw new Error(`journal segment without a valid ${field}`);
  }
  if (typeof s.instance !== 'string' || !Array.isArray(s.records) || Number.isNaN(Date.parse(s.takenAt)))
    throw new Error('journal segment without instance, records or takenAt');
  return s;
}
