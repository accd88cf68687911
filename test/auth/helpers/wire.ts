/// <reference types="vite/client" />
/**
 * Parser for the captured client requests in test/fixtures/wire/<client>/NNN-METHOD-Op.txt
 * (copied from shared/wire; see its README). A file is:
 *
 *   #<n> <ISO time>  op=<Operation>
 *   <METHOD> <raw target> HTTP/1.1
 *   <header lines, as sent>
 *   (empty line)
 *   --- raw body: <N> bytes on the wire[, <M> bytes decoded payload]
 *   --- first <F> bytes (escaped; \r \n shown, newline added after \n):
 *   <escaped bytes>
 *   [--- last <L> bytes:
 *   <escaped bytes>]
 *   [--- aws-chunked framing: ok / chunks: <k> (sizes: 144 x 65536, 0) / trailer lines: [...]]
 *
 * The body is on the wire already de-chunked from HTTP Transfer-Encoding. Large bodies are only
 * shown in part; they are a single repeated byte, so they are rebuilt from the first/last bytes
 * and (for aws-chunked) the chunk sizes and trailer lines; the rebuilt body is checked against
 * every byte shown, and the signatures and digests in the tests check the rest.
 * Files are loaded with Vite's `?raw` import so the tests need no filesystem at run time.
 */

const FILES = import.meta.glob('../../fixtures/wire/*/*.txt', { query: '?raw', import: 'default', eager: true }) as Record<string, string>;

export const FIXTURE_ACCESS_KEY = 'AKIDEXAMPLE';
export const FIXTURE_SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';

export interface WireRequest {
  /** `<client>/<file name without .txt>`. */
  name: string;
  client: string;
  op: string;
  capturedAt: Date;
  method: string;
  /** Request target exactly as sent (raw path and query). */
  target: string;
  headers: Array<[string, string]>;
  /** The body as sent (aws-chunked framing included, HTTP chunking removed). */
  body: Uint8Array;
  /** Payload length after aws-chunked decoding, when the capture says. */
  decodedLength: number | null;
}

/** Undoes the capture's escaping: real newlines are cosmetic; \r \n \t \\ \xHH are bytes. */
function unescapeBody(section: string): Uint8Array {
  const s = section.replace(/\n/g, '');
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c !== '\\') {
      out.push(c.charCodeAt(0));
      continue;
    }
    const e = s[++i];
    if (e === 'r') out.push(0x0d);
    else if (e === 'n') out.push(0x0a);
    else if (e === 't') out.push(0x09);
    else if (e === '\\') out.push(0x5c);
    else if (e === 'x') {
      out.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else throw new Error(`unknown escape \\${e}`);
  }
  return new Uint8Array(out);
}

function repeatByte(byte: number, n: number): Uint8Array {
  return new Uint8Array(n).fill(byte);
}

function concatAll(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/** Expands `144 x 65536, 0` / `65536, 34464, 0` into chunk sizes. */
function parseSizes(text: string): number[] {
  return text.split(',').flatMap((part) => {
    const m = /^\s*(?:(\d+) x )?(\d+)\s*$/.exec(part);
    if (!m) throw new Error(`bad chunk sizes "${text}"`);
    return Array<number>(m[1] ? Number(m[1]) : 1).fill(Number(m[2]));
  });
}

function rebuildBody(text: string, total: number, first: Uint8Array, last: Uint8Array | null): Uint8Array {
  if (first.length === total) return first;
  if (last && first.length + last.length === total) return concatAll([first, last]);
  const framing = /^--- aws-chunked framing: (\w+)\nchunks: \d+ \(sizes: ([^)]*)\)/m.exec(text);
  if (framing) {
    if (framing[1] !== 'ok') throw new Error('cannot rebuild a body whose framing is not ok');
    const trailers = JSON.parse(/^trailer lines: (.*)$/m.exec(text)![1]) as string[];
    const headerEnd = first.indexOf(0x0a);
    if (new TextDecoder().decode(first.subarray(0, headerEnd)).includes(';')) throw new Error('cannot rebuild signed chunks');
    const fillByte = first[headerEnd + 1];
    const parts: Uint8Array[] = [];
    const ascii = (s: string) => new TextEncoder().encode(s);
    for (const size of parseSizes(framing[2])) {
      if (size === 0) continue;
      parts.push(ascii(size.toString(16) + '\r\n'), repeatByte(fillByte, size), ascii('\r\n'));
    }
    parts.push(ascii('0\r\n' + trailers.map((t) => t + '\r\n').join('') + '\r\n'));
    return concatAll(parts);
  }
  return repeatByte(first[first.length - 1], total);
}

function startsWith(body: Uint8Array, prefix: Uint8Array, offset = 0): boolean {
  return prefix.every((b, i) => body[offset + i] === b);
}

export function parseWire(name: string, text: string): WireRequest {
  const [head, ...rest] = text.split('\n--- raw body: ');
  const lines = head.split('\n');
  const first = /^#\d+ (\S+)\s+op=(\S+)$/.exec(lines[0]);
  const requestLine = /^([A-Z]+) (\S+) HTTP\/1\.1$/.exec(lines[1]);
  if (!first || !requestLine) throw new Error(`${name}: unexpected start`);
  const headers: Array<[string, string]> = [];
  for (const line of lines.slice(2)) {
    if (line === '') break;
    const colon = line.indexOf(':');
    headers.push([line.slice(0, colon), line.slice(colon + 1).trim()]);
  }
  const bodyText = '--- raw body: ' + rest.join('\n--- raw body: ');
  const sizes = /^--- raw body: (\d+) bytes on the wire(?:, (\d+) bytes decoded payload)?$/m.exec(bodyText)!;
  const total = Number(sizes[1]);
  const firstM = /^--- first (\d+) bytes \(escaped[^\n]*\):\n([\s\S]*?)(?=^--- |$(?![\s\S]))/m.exec(bodyText)!;
  const lastM = /^--- last (\d+) bytes:\n([\s\S]*?)(?=^--- |$(?![\s\S]))/m.exec(bodyText);
  const firstBytes = unescapeBody(firstM[2]);
  const lastBytes = lastM ? unescapeBody(lastM[2]) : null;
  if (firstBytes.length !== Number(firstM[1]) || (lastM && lastBytes!.length !== Number(lastM[1]))) {
    throw new Error(`${name}: shown byte counts do not match`);
  }
  const body = rebuildBody(bodyText, total, firstBytes, lastBytes);
  if (body.length !== total || !startsWith(body, firstBytes) || (lastBytes && !startsWith(body, lastBytes, total - lastBytes.length))) {
    throw new Error(`${name}: rebuilt body does not match the bytes shown`);
  }
  const [client] = name.split('/');
  return {
    name,
    client,
    op: first[2],
    capturedAt: new Date(first[1]),
    method: requestLine[1],
    target: requestLine[2],
    headers,
    body,
    decodedLength: sizes[2] ? Number(sizes[2]) : null,
  };
}

let cache: WireRequest[] | null = null;

/** Every captured request, sorted by name. */
export function wireRequests(): WireRequest[] {
  cache ??= Object.entries(FILES)
    .map(([path, text]) => parseWire(path.replace(/^.*fixtures\/wire\//, '').replace(/\.txt$/, ''), text))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  return cache;
}

export function header(w: WireRequest, name: string): string | undefined {
  return w.headers.find(([n]) => n.toLowerCase() === name.toLowerCase())?.[1];
}

/**
 * The captured request as a Fetch Request, body streamed in the given piece sizes.
 * Headers may be overridden (value) or removed (null).
 */
export function toRequest(w: WireRequest, opts: { body?: Uint8Array; pieces?: number[]; headers?: Record<string, string | null> } = {}): Request {
  const headers = new Headers();
  for (const [n, v] of w.headers) headers.append(n, v);
  for (const [n, v] of Object.entries(opts.headers ?? {})) {
    if (v === null) headers.delete(n);
    else headers.set(n, v);
  }
  const host = headers.get('host') ?? 'localhost';
  const body = opts.body ?? w.body;
  const hasBody = w.method !== 'GET' && w.method !== 'HEAD' && body.length > 0;
  let stream: ReadableStream<Uint8Array> | null = null;
  if (hasBody) {
    const parts: Uint8Array[] = [];
    const pieces = opts.pieces ?? [65536];
    for (let off = 0, i = 0; off < body.length; i++) {
      const n = pieces[Math.min(i, pieces.length - 1)];
      parts.push(body.slice(off, off + n));
      off += n;
    }
    let i = 0;
    stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (i < parts.length) c.enqueue(parts[i++]);
        else c.close();
      },
    });
  }
  return new Request('http://' + host + w.target, {
    method: w.method,
    headers,
    body: stream,
    // Node's fetch needs this for a streamed body; workerd ignores it.
    ...(stream ? { duplex: 'half' } : {}),
  } as RequestInit);
}
