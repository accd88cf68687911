// A small reader for the two S3 XML documents the S3 backend consumes: ListBucketResult
// (ListObjectsV2) and Error. Regex over flat elements is enough: both documents are shallow and
// every field we need is a leaf whose text is entity-escaped.
// Spec: https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html (EncodingType=url
// decodes Key and friends; only applied when the server echoes <EncodingType>url</EncodingType>,
// since some servers, s3rver among them, ignore the request parameter and send raw keys).
// Known gaps: no CDATA, no CommonPrefixes (we never list with a delimiter).

import type { ListEntry } from './types.ts';

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

export function unescapeXml(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, name: string) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return String.fromCodePoint(code);
    }
    return ENTITIES[name] ?? whole;
  });
}

/** Text of the first `<tag>` leaf in `xml`, unescaped, or undefined. */
export function leafText(xml: string, tag: string): string | undefined {
  const m = new RegExp(`<${tag}(?:\\s[^>]*)?>([^<]*)</${tag}>`).exec(xml);
  if (m) return unescapeXml(m[1]);
  return new RegExp(`<${tag}(?:\\s[^>]*)?/>`).test(xml) ? '' : undefined;
}

/** Every `<tag>...</tag>` block's inner XML. */
export function blocks(xml: string, tag: string): string[] {
  const out: string[] = [];
  const re = new RegExp(`<${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</${tag}>`, 'g');
  for (let m = re.exec(xml); m; m = re.exec(xml)) out.push(m[1]);
  return out;
}

export interface ListObjectsV2Page {
  entries: ListEntry[];
  isTruncated: boolean;
  nextContinuationToken?: string;
}

/** Parses a ListBucketResult; throws Error on a document that is not one. */
export function parseListObjectsV2(xml: string): ListObjectsV2Page {
  if (!/<ListBucketResult[\s>]/.test(xml)) throw new Error('not a ListBucketResult document');
  const urlEncoded = leafText(xml, 'EncodingType') === 'url';
  const decodeKey = (k: string) => (urlEncoded ? decodeURIComponent(k.replace(/\+/g, ' ')) : k);
  const entries = blocks(xml, 'Contents').map((c): ListEntry => {
    const key = leafText(c, 'Key');
    const size = Number(leafText(c, 'Size'));
    const lastModified = new Date(leafText(c, 'LastModified') ?? NaN);
    if (key === undefined || !Number.isSafeInteger(size)) throw new Error('Contents without Key or Size');
    return { key: decodeKey(key), size, lastModified };
  });
  return {
    entries,
    isTruncated: leafText(xml, 'IsTruncated') === 'true',
    nextContinuationToken: leafText(xml, 'NextContinuationToken') || undefined,
  };
}

/** `{code, message}` of an S3 <Error> document; empty strings when the body is not one. */
export function parseS3Error(xml: string): { code: string; message: string } {
  return { code: leafText(xml, 'Code') ?? '', message: leafText(xml, 'Message') ?? '' };
}
