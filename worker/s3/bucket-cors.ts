/**
 * PutBucketCors, GetBucketCors, DeleteBucketCors: a bucket's CORS rules, stored in the catalog.
 * Spec: S3 PutBucketCors (`<CORSConfiguration>` of 1 to 100 `<CORSRule>`s, each with at least one
 * AllowedMethod out of GET PUT POST DELETE HEAD and at least one AllowedOrigin, optional ID (at
 * most 255 characters), AllowedHeader, ExposeHeader, MaxAgeSeconds; at most one `*` in an
 * origin or allowed header; Content-MD5 or a flexible checksum required), GetBucketCors
 * (NoSuchCORSConfiguration when none), DeleteBucketCors (204, also when there were none).
 * How rules apply to browser requests: model/cors.ts and s3/cors.ts.
 */
import { CORS_METHODS, type CorsMethod, type CorsRule } from '../model/cors.ts';
import { S3Error } from '../model/errors.ts';
import { readXmlBody } from './body.ts';
import type { S3Context } from './context.ts';
import { el, group, xmlDocument, xmlResponse } from './xml.ts';
import { childText, childrenNamed, expectRoot, malformedXml, parseXml, type XmlElement } from './xml-parse.ts';

const MAX_RULES = 100;

function texts(rule: XmlElement, name: string): string[] {
  return childrenNamed(rule, name).map((e) => e.text.trim());
}

function oneWildcard(values: string[], what: string): void {
  for (const v of values) {
    if (v.split('*').length > 2) throw new S3Error('InvalidRequest', `${what} "${v}" can not have more than one wildcard.`);
  }
}

export function parseCorsConfiguration(xml: string): CorsRule[] {
  const rules = childrenNamed(expectRoot(parseXml(xml), 'CORSConfiguration'), 'CORSRule');
  if (rules.length === 0 || rules.length > MAX_RULES) throw malformedXml(`1 to ${MAX_RULES} CORSRule elements`);
  return rules.map((r) => {
    const allowedMethods = texts(r, 'AllowedMethod');
    const allowedOrigins = texts(r, 'AllowedOrigin');
    if (allowedMethods.length === 0 || allowedOrigins.length === 0) throw malformedXml('a CORSRule needs AllowedMethod and AllowedOrigin');
    for (const m of allowedMethods) {
      if (!(CORS_METHODS as readonly string[]).includes(m))
        throw new S3Error('InvalidRequest', `Found unsupported HTTP method in CORS config. Unsupported method is ${m}`);
    }
    const allowedHeaders = texts(r, 'AllowedHeader');
    oneWildcard(allowedOrigins, 'AllowedOrigin');
    oneWildcard(allowedHeaders, 'AllowedHeader');
    const rule: CorsRule = { allowedOrigins, allowedMethods: allowedMethods as CorsMethod[], allowedHeaders, exposeHeaders: texts(r, 'ExposeHeader') };
    const id = childText(r, 'ID')?.trim();
    if (id !== undefined) {
      if (id.length > 255) throw new S3Error('InvalidArgument', 'The ID of a CORSRule can be at most 255 characters.', { ArgumentName: 'ID' });
      rule.id = id;
    }
    const maxAge = childText(r, 'MaxAgeSeconds')?.trim();
    if (maxAge !== undefined) {
      if (!/^\d{1,9}$/.test(maxAge)) throw malformedXml('MaxAgeSeconds must be a non-negative integer');
      rule.maxAgeSeconds = Number(maxAge);
    }
    return rule;
  });
}

export function corsConfigurationXml(rules: CorsRule[]): string {
  const rule = (r: CorsRule) =>
    group(
      'CORSRule',
      el('ID', r.id),
      ...r.allowedHeaders.map((h) => el('AllowedHeader', h)),
      ...r.allowedMethods.map((m) => el('AllowedMethod', m)),
      ...r.allowedOrigins.map((o) => el('AllowedOrigin', o)),
      ...r.exposeHeaders.map((h) => el('ExposeHeader', h)),
      el('MaxAgeSeconds', r.maxAgeSeconds),
    );
  return xmlDocument('CORSConfiguration', ...rules.map(rule));
}

export async function PutBucketCors(s3: S3Context): Promise<Response> {
  const rules = parseCorsConfiguration(await readXmlBody(s3, { requireDigest: true }));
  await s3.config.putBucketCors(s3.bucket!, rules);
  return new Response(null);
}

export async function GetBucketCors(s3: S3Context): Promise<Response> {
  return xmlResponse(corsConfigurationXml(await s3.config.getBucketCors(s3.bucket!)));
}

export async function DeleteBucketCors(s3: S3Context): Promise<Response> {
  await s3.config.deleteBucketCors(s3.bucket!);
  return new Response(null, { status: 204 });
}
