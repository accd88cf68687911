/**
 * Backends that store to the same place (issue 27): two backends with one destination are one
 * failure domain in disguise, whatever their domain labels say, so placement's "at most m shards
 * per domain" would not hold. The deployment review (deployment.ts) refuses each such pair, naming
 * both backends and the field they share.
 * - S3-compatible: the same endpoint (host, lowercased, trailing dot dropped; port, defaulted by
 *   the scheme; base path, trailing slashes dropped) and the same bucket. Path-style and
 *   virtual-hosted addressing of one bucket are the same bucket, so `pathStyle` does not tell
 *   them apart; neither does the region label, nor http against https on the same port.
 * - R2 bindings: the same binding name, or two bindings of the same R2 bucket (the bucket names
 *   come from the wrangler file's [[r2_buckets]], which `check-deploy` passes; a running Worker
 *   cannot see them).
 * - Spellings of one bucket's host (issue 37): an endpoint that already names the bucket
 *   (virtual-hosted, `<bucket>.<host>`) is the bucket at `<host>`; on AWS (`*.amazonaws.com`,
 *   `*.amazonaws.com.cn`) every endpoint of the partition reaches the same bucket, since bucket
 *   names are unique in a partition: the global `s3.amazonaws.com`, `s3-external-1`, regional
 *   `s3.<region>`, legacy `s3-<region>`, `s3.dualstack.<region>`, FIPS, with the bucket in the
 *   host or not; so an AWS destination is its partition and bucket.
 * - R2's S3 endpoint (`<account>.r2.cloudflarestorage.com`, `<account>.eu.` for the EU
 *   jurisdiction) and an R2 binding of a bucket of the same name and jurisdiction: refused as the
 *   same bucket. The binding's account is not known here, so two accounts' buckets of one name are
 *   taken for one (conservative: rename one, or bind both the same way).
 */

interface Destination {
  /** The field(s) the two backends share, as the message names them. */
  field: string;
  /** What they share, comparable. */
  key: string;
  /** What they share, for the message; `other` is the first backend's own description. */
  shown: (other: Destination) => string;
  /** This backend's own part of it (an R2 bucket's binding), for the message. */
  via?: string;
}

type ReviewedBackend =
  | { id: string; kind: 's3'; endpoint: string; bucket: string }
  | { id: string; kind: 'r2'; binding: string }
  | { id: string; kind: string };

/** The refusals: one per pair of backends that share a destination. */
export function reviewDestinations(backends: readonly ReviewedBackend[], r2BucketNames: Readonly<Record<string, string>> = {}): string[] {
  const refusals: string[] = [];
  const seen = new Map<string, { id: string; d: Destination }>(); // destination key -> the first backend with it
  for (const b of backends) {
    for (const d of destinationsOf(b, r2BucketNames)) {
      const first = seen.get(d.key);
      if (first === undefined) {
        seen.set(d.key, { id: b.id, d });
        continue;
      }
      refusals.push(
        `backends ${first.id} and ${b.id} have the same ${d.field} (${d.shown(first.d)}): they store to one place, so they are one failure domain whatever their domain labels say, and losing it loses the shards of both. Give each backend a bucket of its own.`,
      );
      break; // one refusal per backend is enough to name the pair
    }
  }
  return refusals;
}

/** AWS S3 hosts: `[<bucket>.]s3[-<region>|.<region>|.dualstack.<region>|-external-1|-fips...].amazonaws.com[.cn]`. */
function awsPartition(host: string): string | null {
  const m = /^(?:.+\.)?s3(?:[.-][a-z0-9.-]+)?\.(amazonaws\.com(?:\.cn)?)$/.exec(host);
  return m ? m[1]! : null;
}

/** R2's S3 endpoint: `<account>[.<jurisdiction>].r2.cloudflarestorage.com`; the jurisdiction, '' for the default. */
function r2Jurisdiction(host: string): string | null {
  const m = /^[a-z0-9]+(?:\.([a-z]+))?\.r2\.cloudflarestorage\.com$/.exec(host);
  return m ? (m[1] ?? '') : null;
}

function destinationsOf(b: ReviewedBackend, r2BucketNames: Readonly<Record<string, string>>): Destination[] {
  if (b.kind === 's3' && 'endpoint' in b) {
    const bucket = b.bucket.toLowerCase();
    // A virtual-hosted endpoint names the bucket in its host: the same bucket at the host after it.
    const at = normalizedEndpoint(b.endpoint).replace(new RegExp(`^${bucket.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.`), '');
    const host = at.split(':')[0]!;
    const out: Destination[] = [];
    const partition = awsPartition(host);
    if (partition !== null)
      out.push({
        field: 'AWS S3 bucket',
        key: `aws ${partition} ${bucket}`,
        shown: () => `bucket "${b.bucket}" of ${partition}, however its endpoint is spelled`,
      });
    else out.push({ field: 'endpoint and bucket', key: `s3 ${at} ${bucket}`, shown: () => `bucket "${b.bucket}" at ${at}` });
    const jurisdiction = r2Jurisdiction(host);
    if (jurisdiction !== null) {
      const name = jurisdiction ? `${b.bucket} (jurisdiction ${jurisdiction})` : b.bucket;
      out.push({
        field: 'R2 bucket',
        key: `r2-bucket ${name}`,
        via: `${b.id}'s S3 endpoint`,
        shown: (other) =>
          `bucket_name "${name}", ${other.via!.endsWith('S3 endpoint') ? 'reached through' : 'bound as'} ${other.via} and reached through ${b.id}'s S3 endpoint`,
      });
    }
    return out;
  }
  if (b.kind === 'r2' && 'binding' in b) {
    const out: Destination[] = [{ field: 'R2 binding', key: `r2-binding ${b.binding}`, shown: () => b.binding }];
    const bucket = r2BucketNames[b.binding];
    if (bucket !== undefined) {
      const shown = (other: Destination) =>
        other.via!.endsWith('S3 endpoint')
          ? `bucket_name "${bucket}", reached through ${other.via} and bound as ${b.binding}`
          : `bucket_name "${bucket}", bound as ${other.via} and ${b.binding}`;
      out.push({ field: 'R2 bucket', key: `r2-bucket ${bucket}`, via: b.binding, shown });
    }
    return out;
  }
  return [];
}

const DEFAULT_PORTS: Record<string, string> = { 'https:': '443', 'http:': '80' };

/** host:port/base-path of an endpoint URL, as two spellings of one endpoint compare equal. */
export function normalizedEndpoint(endpoint: string): string {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return endpoint.trim().toLowerCase();
  }
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  const port = url.port || DEFAULT_PORTS[url.protocol] || '';
  const path = url.pathname.replace(/\/+$/, '');
  return `${host}:${port}${path}`;
}
