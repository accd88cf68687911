/**
 * A streaming reader of the multipart/form-data body of an S3 POST Object (a browser form upload),
 * as S3 reads it: the fields before the `file` field are read (at most MAX_PRE_DATA bytes,
 * MaxPostPreDataLengthExceededError), then the file's bytes are handed on as a stream of known
 * length without ever holding the file in memory.
 *
 * The store needs the object's length before its first byte. With a Content-Length, the file's
 * length is what is left of the body minus the closing delimiter `\r\n--<boundary>--\r\n`, which
 * every browser, curl, Python's requests/urllib3 and Node's FormData send after the last part: a
 * body that ends otherwise makes the file stream error at its end, so the store keeps nothing
 * (MalformedPOSTRequest). A rest of at most SMALL_REST bytes (or a body without Content-Length,
 * up to that size) is read whole instead, so there the file simply ends at the next delimiter:
 * fields after the file are ignored, as S3 ignores them, and any epilogue is accepted.
 * Field names are matched case-insensitively (S3 does); duplicate fields are InvalidArgument.
 * Spec: RFC 7578 (multipart/form-data), RFC 2046 section 5.1.1 (delimiters); S3 "POST Object".
 * Known gaps: `filename*=` (RFC 5987) is read only in its UTF-8 form; a large file that is not the
 * last field is refused (MalformedPOSTRequest) rather than its later fields ignored.
 */
import { concatBytes } from '../model/bytes.ts';
import { S3Error } from '../model/errors.ts';

/** S3's limit on the form fields preceding the file. */
export const MAX_PRE_DATA = 20 * 1024;
/** A rest of the body up to this size is read whole (exact end of the file wherever it lies). */
export const SMALL_REST = 256 * 1024;

export interface FormFile {
  /** The file part's `filename`, without any directory part ('' when it had none). */
  filename: string;
  /** The part's own Content-Type header, if any (S3 takes the object's type from the form's Content-Type field). */
  contentType: string | null;
  /** Exactly this many bytes: the stream errors (S3Error) if the body does not hold them as announced. */
  size: number;
  body: ReadableStream<Uint8Array>;
}

export interface ParsedForm {
  /** Fields before the file, by lower-case name (S3 matches names case-insensitively). */
  fields: Map<string, string>;
  file: FormFile;
}

const CRLF = new Uint8Array([13, 10]);
const enc = new TextEncoder();
const malformed = (why: string) => new S3Error('MalformedPOSTRequest', `The body of your POST request is not well-formed multipart/form-data (${why}).`);

/** The boundary of a `multipart/form-data; boundary=...` Content-Type, or MalformedPOSTRequest. */
export function formBoundary(contentType: string | null): string {
  const m = /^\s*multipart\/form-data\s*;(.*)$/is.exec(contentType ?? '');
  const param = m && /(?:^|;)\s*boundary\s*=\s*(?:"([^"]{1,70})"|([^\s;",]{1,70}))/i.exec(m[1]!);
  const boundary = param?.[1] ?? param?.[2];
  if (!boundary) throw malformed('no boundary in Content-Type');
  return boundary;
}

function indexOf(hay: Uint8Array, needle: Uint8Array, from = 0): number {
  const first = needle[0]!;
  outer: for (let i = hay.indexOf(first, from); i !== -1 && i <= hay.length - needle.length; i = hay.indexOf(first, i + 1)) {
    for (let j = 1; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/** One parameter of a Content-Disposition header (`name="..."` or a bare token); null if absent. */
function dispositionParam(header: string, name: string): string | null {
  const star = new RegExp(`;\\s*${name}\\*\\s*=\\s*UTF-8''([^;\\s]*)`, 'i').exec(header);
  if (star) {
    try {
      return decodeURIComponent(star[1]!);
    } catch {
      throw malformed(`bad ${name}*`);
    }
  }
  const m = new RegExp(`;\\s*${name}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]*))`, 'i').exec(header);
  if (!m) return null;
  // Browsers percent-encode `"`, CR and LF in names and filenames (WHATWG HTML, form submission).
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1').replace(/%22/g, '"').replace(/%0D/gi, '\r').replace(/%0A/gi, '\n') : m[2]!;
}

/**
 * Reads a form body: `raw` is the request body (already guarded against idle clients and checked
 * against its Content-Length), `contentLength` its declared length or null.
 */
export async function readForm(raw: ReadableStream<Uint8Array>, boundary: string, contentLength: number | null): Promise<ParsedForm> {
  const reader = new SourceReader(raw);
  try {
    return await parse(reader, boundary, contentLength);
  } catch (err) {
    reader.release();
    throw err;
  }
}

/** Reads the source a piece at a time, holding its lock only while a read is pending (see limitBody). */
class SourceReader {
  /** Bytes read and not yet consumed (always a copy: the source may reuse its buffers). */
  buf: Uint8Array = new Uint8Array(0);
  /** Bytes consumed before `buf`. */
  consumed = 0;
  done = false;

  constructor(private readonly source: ReadableStream<Uint8Array>) {}

  async read(): Promise<Uint8Array | null> {
    if (this.done) return null;
    const reader = this.source.getReader();
    try {
      const next = await reader.read();
      if (next.done) {
        this.done = true;
        return null;
      }
      return next.value;
    } finally {
      reader.releaseLock();
    }
  }

  /** Appends one more piece to `buf`; false at the end of the source. */
  async fill(): Promise<boolean> {
    const piece = await this.read();
    if (piece === null) return false;
    this.buf = concatBytes([this.buf, piece]);
    return true;
  }

  take(n: number): Uint8Array {
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    this.consumed += n;
    return out;
  }

  release(): void {
    // Nothing is held between reads; the source stays readable for the error path's drain.
  }
}

async function parse(r: SourceReader, boundary: string, contentLength: number | null): Promise<ParsedForm> {
  const dashBoundary = enc.encode('--' + boundary);
  const delimiter = enc.encode('\r\n--' + boundary);
  const fields = new Map<string, string>();
  const preData = () => {
    if (r.consumed + r.buf.length > MAX_PRE_DATA + dashBoundary.length + 4) throw new S3Error('MaxPostPreDataLengthExceededError');
  };
  /** Consumes up to and including `needle`; returns what came before it. */
  const until = async (needle: Uint8Array, what: string): Promise<Uint8Array> => {
    for (;;) {
      const at = indexOf(r.buf, needle);
      if (at >= 0) {
        const before = r.take(at).slice();
        r.take(needle.length);
        return before;
      }
      preData();
      if (!(await r.fill())) throw malformed(`the body ended inside ${what}`);
    }
  };
  // Preamble (ignored) and the first boundary line.
  const first = concatBytes([CRLF, dashBoundary]);
  while (r.buf.length < dashBoundary.length && (await r.fill()));
  if (indexOf(r.buf.subarray(0, dashBoundary.length), dashBoundary) !== 0) {
    await until(first, 'the preamble');
  } else {
    r.take(dashBoundary.length);
  }
  for (;;) {
    // After a boundary: `--` (the end) or CRLF and a part.
    while (r.buf.length < 2 && (await r.fill()));
    if (r.buf[0] === 45 && r.buf[1] === 45)
      throw new S3Error('InvalidArgument', 'POST requires exactly one file upload per request.', { ArgumentName: 'file', ArgumentValue: '0' });
    await until(CRLF, 'a boundary line'); // transport padding, then CRLF
    const head = new TextDecoder().decode(await until(enc.encode('\r\n\r\n'), 'the headers of a part'));
    const headers = new Map<string, string>();
    for (const line of head.split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const disposition = headers.get('content-disposition') ?? '';
    if (!/^form-data\s*(;|$)/i.test(disposition)) throw malformed('a part without Content-Disposition: form-data');
    const name = dispositionParam(disposition, 'name');
    if (name === null) throw malformed('a part without a name');
    const lower = name.toLowerCase();
    if (lower === 'file') {
      const filename = (dispositionParam(disposition, 'filename') ?? '').replace(/^.*[\\/]/, '');
      return { fields, file: await fileOf(r, delimiter, contentLength, { filename, contentType: headers.get('content-type') ?? null }) };
    }
    const value = new TextDecoder().decode(await until(delimiter, `field ${name}`));
    if (fields.has(lower)) throw new S3Error('InvalidArgument', `The form has the field ${name} more than once.`, { ArgumentName: name });
    fields.set(lower, value);
    if (r.consumed > MAX_PRE_DATA) throw new S3Error('MaxPostPreDataLengthExceededError');
  }
}

async function fileOf(
  r: SourceReader,
  delimiter: Uint8Array,
  contentLength: number | null,
  part: { filename: string; contentType: string | null },
): Promise<FormFile> {
  const closing = concatBytes([delimiter, enc.encode('--\r\n')]);
  const rest = contentLength === null ? null : contentLength - r.consumed;
  if (rest === null || rest <= SMALL_REST) {
    // Small: read it all and find the file's end.
    while (r.buf.length <= SMALL_REST && (await r.fill()));
    if (!r.done) throw contentLength === null ? new S3Error('MissingContentLength') : malformed('the body is longer than its Content-Length');
    const end = indexOf(r.buf, delimiter);
    if (end < 0) throw malformed('the file part has no closing boundary');
    const bytes = r.buf.slice(0, end);
    return { ...part, size: bytes.length, body: new ReadableStream({ start: (c) => (bytes.length && c.enqueue(bytes), c.close()) }) };
  }
  const size = rest - closing.length;
  if (size < 0) throw malformed('the body is shorter than its parts');
  // Large: exactly `size` bytes, then exactly the closing delimiter.
  let left = size;
  let tail: Uint8Array = new Uint8Array(0);
  const pending = r.buf;
  r.buf = new Uint8Array(0);
  let first: Uint8Array | null = pending.length ? pending : null;
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          const piece = first ?? (await r.read());
          first = null;
          if (piece === null) {
            if (left > 0) return controller.error(new S3Error('IncompleteBody'));
            if (!bytesAre(tail, closing)) return controller.error(malformed('the file is not followed by the closing boundary'));
            return controller.close();
          }
          const mine = Math.min(left, piece.length);
          left -= mine;
          if (piece.length > mine) {
            tail = concatBytes([tail, piece.subarray(mine)]);
            if (tail.length > closing.length) return controller.error(malformed('the file is not followed by the closing boundary'));
          }
          if (mine > 0) return controller.enqueue(piece.subarray(0, mine));
        }
      },
    },
    { highWaterMark: 0 },
  );
  return { ...part, size, body };
}

function bytesAre(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
