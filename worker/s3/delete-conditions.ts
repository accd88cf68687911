/**
 * Conditional deletes as requests carry them: DeleteObject's If-Match,
 * x-amz-if-match-last-modified-time and x-amz-if-match-size headers, and a DeleteObjects
 * <Object>'s <ETag>, <LastModifiedTime> and <Size>. Spec: S3 DeleteObject / DeleteObjects and
 * the user guide's "conditional deletes"; what they are checked against and what a mismatch
 * answers is model/conditions.ts checkDeleteConditions (the catalog checks them in the delete's step).
 * A time is an HTTP date (IMF-fixdate, what the SDKs send in the header) or ISO 8601 (what
 * they send in XML); a size a non-negative integer. Anything else is 400 InvalidArgument, never
 * a condition quietly dropped: a dropped condition would delete what the caller meant to keep.
 * The answer to a conditional delete tells the ETag, time or size of the object, so it needs
 * read on the key as well as delete (S3: s3:GetObject as well as s3:DeleteObject).
 */
import { S3Error } from '../model/errors.ts';
import type { DeleteConditions } from '../model/object-store.ts';

const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

const invalid = (name: string, value: string, what: string) =>
  new S3Error('InvalidArgument', `${name} must be ${what}.`, { ArgumentName: name, ArgumentValue: value });

/** Milliseconds since the epoch of an HTTP date or an ISO 8601 timestamp; InvalidArgument otherwise. */
export function parseConditionTime(value: string, name: string): number {
  const text = value.trim();
  // ISO 8601 fractions beyond milliseconds: Date.parse takes at most three digits.
  const t = IMF_FIXDATE.test(text) || ISO_8601.test(text) ? Date.parse(text.replace(/(\.\d{3})\d+/, '$1')) : NaN;
  if (Number.isNaN(t)) throw invalid(name, value, 'an HTTP date or an ISO 8601 timestamp');
  return t;
}

/** A size in bytes: digits only, within the safe integers; InvalidArgument otherwise. */
export function parseConditionSize(value: string, name: string): number {
  const text = value.trim();
  const n = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n)) throw invalid(name, value, 'a non-negative integer');
  return n;
}

function conditions(ifMatch: string | undefined, time: string | undefined, size: string | undefined, names: [string, string]): DeleteConditions {
  return {
    ...(ifMatch === undefined ? {} : { ifMatch }),
    ...(time === undefined ? {} : { lastModifiedTime: parseConditionTime(time, names[0]) }),
    ...(size === undefined ? {} : { size: parseConditionSize(size, names[1]) }),
  };
}

const orUndefined = (v: string | null) => (v === null ? undefined : v);

/** DeleteObject's condition headers; {} when there are none. */
export function readDeleteConditions(headers: Headers): DeleteConditions {
  return conditions(
    orUndefined(headers.get('if-match')),
    orUndefined(headers.get('x-amz-if-match-last-modified-time')),
    orUndefined(headers.get('x-amz-if-match-size')),
    ['x-amz-if-match-last-modified-time', 'x-amz-if-match-size'],
  );
}

/** True when DeleteObject carries a condition (it then needs read as well: the header says why). */
export const hasDeleteConditionHeaders = (headers: Headers): boolean =>
  headers.has('if-match') || headers.has('x-amz-if-match-last-modified-time') || headers.has('x-amz-if-match-size');

/** A DeleteObjects entry's conditions from its <ETag>, <LastModifiedTime> and <Size> texts. */
export function entryDeleteConditions(etag: string | undefined, time: string | undefined, size: string | undefined): DeleteConditions {
  return conditions(etag, time, size, ['LastModifiedTime', 'Size']);
}
