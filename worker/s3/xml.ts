/**
 * Rendering of S3 XML responses: tiny string builders, escaping every text value, dates as
 * ISO 8601 with milliseconds (S3's format), root elements in the S3 2006-03-01 namespace.
 * Parsing of request XML lives in xml-parse.ts.
 */
import { DEFAULT_ACCOUNT } from '../model/account.ts';
import { escapeXml } from '../model/errors.ts';

export const S3_XMLNS = 'http://s3.amazonaws.com/doc/2006-03-01/';

/** The owner reported for the default account (model/account.ts): its id is its display name too. */
export const OWNER = { ID: DEFAULT_ACCOUNT, DisplayName: DEFAULT_ACCOUNT };

type Leaf = string | number | boolean | Date | null | undefined;

/** `<name>value</name>`; nothing for null/undefined. */
export function el(name: string, value: Leaf): string {
  if (value === null || value === undefined) return '';
  const text = value instanceof Date ? value.toISOString() : String(value);
  return `<${name}>${escapeXml(text)}</${name}>`;
}

/** `<name>...children</name>` with children already rendered. */
export function group(name: string, ...children: string[]): string {
  return `<${name}>${children.join('')}</${name}>`;
}

/** An owner element: the account's id, which is its display name too (default: the default account). */
export function ownerXml(name = 'Owner', account: string = DEFAULT_ACCOUNT): string {
  return group(name, el('ID', account), el('DisplayName', account));
}

export function xmlDocument(root: string, ...children: string[]): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<${root} xmlns="${S3_XMLNS}">${children.join('')}</${root}>`;
}

export function xmlResponse(doc: string, headers: Record<string, string> = {}, status = 200): Response {
  return new Response(doc, { status, headers: { 'Content-Type': 'application/xml', ...headers } });
}

/** encoding-type=url: percent-encode like encodeURIComponent but keep '/' readable. */
export function urlEncodeIf(enabled: boolean, value: string): string {
  return enabled ? encodeURIComponent(value).replace(/%2F/g, '/') : value;
}
