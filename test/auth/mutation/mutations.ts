/**
 * One-element mutations of a signed request's wire bytes: the method; the host; the path (a
 * character, its encoding, `%2F` against `/`, dot segments, `//`); each query parameter (dropped,
 * its value changed or emptied, its name or value re-encoded or re-cased, doubled, a flag with or
 * without '=') and parameters added that would change the operation or the response, plainly and
 * with percent-encoded names; each header (dropped, changed, padded) and headers added that would
 * change the request; the body (a byte flipped, cut, lengthened) and, for aws-chunked, a chunk,
 * a chunk signature, the trailer; and one two-element change, a new body with the payload line
 * (x-amz-content-sha256) that would let it in. Random choices come from the seeded `rand`, so a
 * run replays.
 * Re-signing (another region, time or key) is the suite's, not a wire mutation.
 */
import { createHash } from 'node:crypto';
import type { Wire } from './wire.ts';

export interface Mutation {
  label: string;
  wire: Wire;
}

/** Query parameters that would change the operation or the response if they were let in unsigned. */
const DANGEROUS_PARAMS = (uploadId: string) => [
  'response-content-type=text/html',
  'response-content-disposition=attachment',
  `uploadId=${encodeURIComponent(uploadId)}`,
  'partNumber=1',
  'uploads',
  'uploads=',
  'delete',
  'list-type=2',
  'prefix=x',
  'versionId=1',
  'acl',
  'location',
  'x-id=DeleteObject',
  'x-amz-acl=public-read',
  'x-amz-meta-evil=1',
  'x-amz-copy-source=fz%2Fobj',
  'X-Amz-Content-Sha256=UNSIGNED-PAYLOAD',
  'X-Amz-Expires=604800',
];

/** Headers that would change the request if they were let in unsigned. */
const DANGEROUS_HEADERS: Array<[string, string]> = [
  ['x-amz-content-sha256', 'UNSIGNED-PAYLOAD'],
  ['x-amz-acl', 'private'],
  ['x-amz-meta-evil', 'added'],
  ['x-amz-copy-source', 'fz/obj'],
  ['x-amz-metadata-directive', 'REPLACE'],
  ['x-amz-checksum-crc32', 'AAAAAA=='],
  ['content-md5', '1B2M2Y8AsgTpgAmY7PhCfg=='],
  ['content-type', 'text/html'],
  ['x-amz-date', '20200101T000000Z'],
  ['authorization', 'AWS4-HMAC-SHA256 Credential=AKIDTESTSIGNERS/20200101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=' + '0'.repeat(64)],
  ['x-amz-decoded-content-length', '1'],
  ['content-encoding', 'aws-chunked'],
];

const pick = <T>(rand: () => number, items: readonly T[]): T => items[Math.floor(rand() * items.length)];
const hex = (c: string) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0');

function splitTarget(target: string): { path: string; query: string[] } {
  const q = target.indexOf('?');
  return q < 0 ? { path: target, query: [] } : { path: target.slice(0, q), query: target.slice(q + 1).split('&') };
}

const joinTarget = (path: string, query: string[]) => path + (query.length ? '?' + query.join('&') : '');

/** Every mutation of `w` (one element each). */
export function mutations(w: Wire, rand: () => number, uploadId: string): Mutation[] {
  const out: Mutation[] = [];
  const add = (label: string, change: Partial<Wire>) => out.push({ label, wire: { ...w, ...change } });
  const { path, query } = splitTarget(w.target);
  const setTarget = (label: string, p: string, q: string[]) => add(label, { target: joinTarget(p, q) });

  for (const method of ['GET', 'HEAD', 'PUT', 'POST', 'DELETE']) if (method !== w.method) add(`method ${method}`, { method });

  const host = w.headers.find(([n]) => n === 'host')![1];
  const withHost = (label: string, value: string) => add(label, { headers: w.headers.map(([n, v]) => (n === 'host' ? [n, value] : [n, v])) });
  withHost('host upper-case', host.toUpperCase());
  withHost('host other', 'other.test');
  withHost('host with port', host + ':8080');
  withHost('host another bucket', host.endsWith('.s3.gw.test') ? 'fzz.s3.gw.test' : 'fz.s3.gw.test');

  // Path: one character, its encoding, the slashes, dot segments.
  const chars = [...path].map((c, i) => [c, i] as const).filter(([c], i) => i > 0 && /[A-Za-z0-9._~-]/.test(c));
  if (chars.length) {
    const [c, i] = pick(rand, chars);
    setTarget(`path char ${i} changed`, path.slice(0, i) + (c === 'x' ? 'y' : 'x') + path.slice(i + 1), query);
    setTarget(`path char ${i} percent-encoded`, path.slice(0, i) + hex(c) + path.slice(i + 1), query);
    setTarget(`path char ${i} case`, path.slice(0, i) + (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) + path.slice(i + 1), query);
  }
  const escape = /%[0-9A-F]{2}/.exec(path);
  if (escape) setTarget('path escape lower-cased', path.replace(escape[0], escape[0].toLowerCase()), query);
  const slashes = [...path].map((c, i) => (c === '/' && i > 0 ? i : -1)).filter((i) => i > 0);
  if (slashes.length) {
    const i = pick(rand, slashes);
    setTarget('path / as %2F', path.slice(0, i) + '%2F' + path.slice(i + 1), query);
    setTarget('path // doubled', path.slice(0, i) + '//' + path.slice(i + 1), query);
    setTarget('path ./ segment', path.slice(0, i) + '/.' + path.slice(i), query);
    setTarget('path x/../ segments', path.slice(0, i) + '/x/..' + path.slice(i), query);
  }
  if (path.includes('%2F')) setTarget('path %2F as /', path.replace('%2F', '/'), query);
  setTarget('path trailing /', path.endsWith('/') ? path.slice(0, -1) : path + '/', query);
  setTarget('path + %00', path + '%00', query);
  setTarget('path + lone %', path + '%', query);
  setTarget('path + %2E%2E segment', path + '/%2E%2E', query);

  // Query: every parameter, one way at a time.
  query.forEach((piece, i) => {
    const eq = piece.indexOf('=');
    const name = eq < 0 ? piece : piece.slice(0, eq);
    const value = eq < 0 ? null : piece.slice(eq + 1);
    const replace = (label: string, next: string[]) => setTarget(`query ${name}: ${label}`, path, next);
    const at = (p: string) => query.map((q, j) => (j === i ? p : q));
    replace(
      'dropped',
      query.filter((_, j) => j !== i),
    );
    replace('value changed', at(value === null ? `${name}=x` : `${name}=${value}x`));
    if (value) replace('value emptied', at(`${name}=`));
    if (value === null) replace('flag given =', at(`${name}=`));
    if (value === '') replace('flag without =', at(name));
    replace('name re-cased', at(name[0] === name[0].toUpperCase() ? name[0].toLowerCase() + name.slice(1) : name[0].toUpperCase() + name.slice(1)));
    if (/^[A-Za-z]/.test(name)) replace('name first char percent-encoded', at(hex(name[0]) + piece.slice(1)));
    if (value && /^[A-Za-z0-9]/.test(value)) replace('value first char percent-encoded', at(`${name}=${hex(value[0])}${value.slice(1)}`));
    if (value?.includes('%20')) replace('value %20 as +', at(`${name}=${value.replace('%20', '+')}`));
    if (value?.includes('+')) replace('value + as %20', at(`${name}=${value.replace('+', '%20')}`));
    if (value?.includes('%2F')) replace('value %2F as /', at(`${name}=${value.replace('%2F', '/')}`));
    replace('doubled', [...query, piece]);
    replace('doubled with another value', [...query, `${name}=other`]);
  });
  if (query.length > 1) setTarget('query reordered', path, [...query.slice(1), query[0]]);
  for (const extra of DANGEROUS_PARAMS(uploadId)) {
    setTarget(`query + ${extra}`, path, [...query, extra]);
    setTarget(`query + ${extra}, name encoded`, path, [...query, hex(extra[0]) + extra.slice(1)]);
  }

  // Headers: each one, then dangerous ones added.
  w.headers.forEach(([name, value], i) => {
    if (name === 'host') return;
    const at = (h: [string, string] | null) => w.headers.flatMap((x, j) => (j === i ? (h ? [h] : []) : [x]));
    add(`header ${name} dropped`, { headers: at(null) });
    add(`header ${name} changed`, { headers: at([name, value + 'x']) });
    add(`header ${name} padded`, { headers: at([name, `  ${value}  `]) });
    if (name === 'authorization') {
      const sig = /Signature=([0-9a-f])/.exec(value);
      if (sig) add('authorization signature digit', { headers: at([name, value.replace(/Signature=[0-9a-f]/, 'Signature=' + (sig[1] === '0' ? '1' : '0'))]) });
      add('authorization region', { headers: at([name, value.replace('/us-east-1/', '/eu-west-1/')]) });
      add('authorization SignedHeaders shortened', { headers: at([name, value.replace(/SignedHeaders=([^;,]+);/, 'SignedHeaders=')]) });
    }
  });
  for (const [name, value] of DANGEROUS_HEADERS) {
    add(`header + ${name}: ${value}`, { headers: [...w.headers.filter(([n]) => n !== name), [name, value]] });
  }

  // Body.
  const body = w.body;
  if (body && body.length > 0) {
    const withBody = (label: string, b: Uint8Array) => {
      const headers = w.headers.map(([n, v]): [string, string] => (n === 'content-length' ? [n, String(b.length)] : [n, v]));
      add(label, { body: b, headers });
    };
    const i = Math.floor(rand() * body.length);
    const flipped = body.slice();
    flipped[i] ^= 0x20;
    withBody(`body byte ${i} flipped`, flipped);
    withBody('body cut by one byte', body.slice(0, -1));
    // The one two-element change: a new body needs a payload line that lets it through.
    for (const line of ['UNSIGNED-PAYLOAD', createHash('sha256').update(flipped).digest('hex'), 'STREAMING-UNSIGNED-PAYLOAD-TRAILER']) {
      const headers = [...w.headers.filter(([n]) => n !== 'x-amz-content-sha256'), ['x-amz-content-sha256', line] as [string, string]];
      out.push({ label: `body flipped, x-amz-content-sha256: ${line}`, wire: { ...w, body: flipped, headers } });
    }
    withBody('body one byte longer', new Uint8Array([...body, 0x78]));
    const text = new TextDecoder('latin1').decode(body);
    const replaceText = (label: string, from: RegExp, to: (m: string) => string) => {
      const m = from.exec(text);
      if (m)
        withBody(
          label,
          Uint8Array.from(text.slice(0, m.index) + to(m[0]) + text.slice(m.index + m[0].length), (c) => c.charCodeAt(0)),
        );
    };
    replaceText('chunk signature digit', /chunk-signature=[0-9a-f]/, (m) => m.slice(0, -1) + (m.endsWith('0') ? '1' : '0'));
    replaceText('chunk data byte', /\r\n[^\r\n0-9a-f]/, (m) => m.slice(0, 2) + (m[2] === 'x' ? 'y' : 'x'));
    replaceText('chunk extension added', /;chunk-signature=/, () => ';ext=1;chunk-signature=');
    replaceText('trailer value', /x-amz-checksum-[a-z0-9]+:[A-Za-z0-9+/]/, (m) => m.slice(0, -1) + (m.endsWith('A') ? 'B' : 'A'));
    replaceText('trailer signature digit', /x-amz-trailer-signature:[0-9a-f]/, (m) => m.slice(0, -1) + (m.endsWith('0') ? '1' : '0'));
    replaceText('trailer line dropped', /x-amz-checksum-[a-z0-9]+:[^\r]*\r\n/, () => '');
  }
  return out;
}
