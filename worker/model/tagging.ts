/**
 * Tags of objects and buckets: the limits S3 enforces and the `x-amz-tagging` header form.
 * Spec: S3 "Categorizing your storage using tags" and PutObjectTagging / PutBucketTagging:
 * at most 10 tags per object, 50 per bucket; a key of 1 to 128 Unicode characters, a value of
 * 0 to 256; unique keys; keys starting `aws:` are reserved; characters: letters, digits and
 * spaces in any script, and `+ - = . _ : / @`. Every violation is 400 InvalidTag (as AWS and
 * ceph/s3-tests expect). `x-amz-tagging` is a URL query string (`a=1&b=2`; `b` alone is an
 * empty value). Tags are kept sorted by key, the order S3 returns them in.
 */
import { S3Error } from './errors.ts';

export interface Tag {
  key: string;
  value: string;
}

export const MAX_OBJECT_TAGS = 10;
export const MAX_BUCKET_TAGS = 50;
const MAX_KEY_CHARS = 128;
const MAX_VALUE_CHARS = 256;
const ALLOWED = /^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$/u;

const chars = (s: string) => [...s].length;

/** Checks `tags` against S3's rules (InvalidTag) and returns them sorted by key. */
export function validTags(tags: Tag[], max: number): Tag[] {
  const invalid = (message: string) => new S3Error('InvalidTag', message);
  if (tags.length > max) throw invalid(`${max === MAX_OBJECT_TAGS ? 'Object' : 'Bucket'} tags cannot be greater than ${max}`);
  const seen = new Set<string>();
  for (const { key, value } of tags) {
    if (chars(key) < 1 || chars(key) > MAX_KEY_CHARS) throw invalid(`The TagKey you have provided is too long, max ${MAX_KEY_CHARS}`);
    if (chars(value) > MAX_VALUE_CHARS) throw invalid(`The TagValue you have provided is too long, max ${MAX_VALUE_CHARS}`);
    if (!ALLOWED.test(key)) throw invalid('The TagKey you have provided is invalid');
    if (!ALLOWED.test(value)) throw invalid('The TagValue you have provided is invalid');
    if (key.toLowerCase().startsWith('aws:')) throw invalid('Your TagKey cannot be prefixed with aws:');
    if (seen.has(key)) throw invalid('Cannot provide multiple Tags with the same key');
    seen.add(key);
  }
  return [...tags].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** The tags of an `x-amz-tagging` header (object limits); [] for an empty header. */
export function parseTaggingHeader(value: string): Tag[] {
  const tags: Tag[] = [];
  for (const pair of value.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const decode = (s: string) => {
      try {
        return decodeURIComponent(s.replace(/\+/g, ' '));
      } catch {
        throw new S3Error(
          'InvalidArgument',
          'The header x-amz-tagging shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates.',
          { ArgumentName: 'x-amz-tagging', ArgumentValue: value },
        );
      }
    };
    tags.push(eq < 0 ? { key: decode(pair), value: '' } : { key: decode(pair.slice(0, eq)), value: decode(pair.slice(eq + 1)) });
  }
  return validTags(tags, MAX_OBJECT_TAGS);
}
