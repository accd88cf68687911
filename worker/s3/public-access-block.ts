/**
 * PutPublicAccessBlock, GetPublicAccessBlock, DeletePublicAccessBlock: a bucket's public access
 * block (model/public-access-block.ts says what each flag does here), stored in the catalog
 * (state row 'public-access-block', one of the request-path settings, so the gate of every isolate
 * sees a change on its next request: model/bucket-settings.ts).
 * Spec: S3 PutPublicAccessBlock (a `<PublicAccessBlockConfiguration>` of up to four booleans, an
 * absent one false; 200; Content-MD5 verified when sent), GetPublicAccessBlock (the document;
 * NoSuchPublicAccessBlockConfiguration, 404, when none), DeletePublicAccessBlock (204, also when
 * there was none). A document that is not that is 400 MalformedXML.
 */
import { PUBLIC_ACCESS_BLOCK_FIELDS, type PublicAccessBlock } from '../model/public-access-block.ts';
import { readSmallBody } from './body.ts';
import type { S3Context } from './context.ts';
import { el, xmlDocument, xmlResponse } from './xml.ts';
import { expectRoot, malformedXml, parseXml } from './xml-parse.ts';

const NAMES: ReadonlySet<string> = new Set(PUBLIC_ACCESS_BLOCK_FIELDS.map(([name]) => name));

/** The configuration a PutPublicAccessBlock body states; MalformedXML when it is anything else. */
export function parsePublicAccessBlock(xml: string): PublicAccessBlock {
  const root = expectRoot(parseXml(xml), 'PublicAccessBlockConfiguration');
  const seen = new Map<string, boolean>();
  for (const child of root.children) {
    if (!NAMES.has(child.name) || seen.has(child.name)) throw malformedXml(`unexpected element ${child.name}`);
    const value = child.text.trim().toLowerCase();
    if (value !== 'true' && value !== 'false') throw malformedXml(`${child.name} must be true or false`);
    seen.set(child.name, value === 'true');
  }
  return Object.fromEntries(PUBLIC_ACCESS_BLOCK_FIELDS.map(([name, field]) => [field, seen.get(name) ?? false])) as unknown as PublicAccessBlock;
}

export async function PutPublicAccessBlock(s3: S3Context): Promise<Response> {
  await s3.store.headBucket(s3.bucket!); // NoSuchBucket first
  const xml = await readSmallBody(s3, {
    digest: 'if-present',
    max: s3.settings.maxXmlSize,
    tooLarge: () => malformedXml('document too large'),
    notUtf8: () => malformedXml('not UTF-8'),
  });
  await s3.config.putPublicAccessBlock(s3.bucket!, parsePublicAccessBlock(xml));
  return new Response(null);
}

export async function GetPublicAccessBlock(s3: S3Context): Promise<Response> {
  const config = await s3.config.getPublicAccessBlock(s3.bucket!);
  return xmlResponse(xmlDocument('PublicAccessBlockConfiguration', ...PUBLIC_ACCESS_BLOCK_FIELDS.map(([name, field]) => el(name, String(config[field])))));
}

export async function DeletePublicAccessBlock(s3: S3Context): Promise<Response> {
  await s3.config.putPublicAccessBlock(s3.bucket!, null);
  return new Response(null, { status: 204 });
}
