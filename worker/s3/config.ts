/**
 * Settings of the S3 front door, as one zod schema parsed once (worker/index.ts embeds it in the
 * gateway config). Defaults follow AWS: us-east-1, 5 GiB per PutObject and per part.
 * Cloudflare caps request bodies by plan (100 MB on Free/Pro): set maxObjectSize accordingly.
 */
import { z } from 'zod';

const MiB = 1024 * 1024;

export const S3ConfigSchema = z.object({
  /** Region reported by GetBucketLocation / HeadBucket and accepted as LocationConstraint. */
  region: z.string().min(1).default('us-east-1'),
  /** Virtual-hosted-style base domains: `<bucket>.<baseDomain>`; other hosts are path-style. */
  baseDomains: z.array(z.string().min(1)).default([]),
  /** Largest PutObject body in bytes; larger is EntityTooLarge before anything is stored. */
  maxObjectSize: z.number().int().positive().default(5 * 1024 * MiB),
  /** Largest UploadPart body in bytes. */
  maxPartSize: z.number().int().positive().default(5 * 1024 * MiB),
  /** Largest request XML document (DeleteObjects, CompleteMultipartUpload) in bytes. */
  maxXmlSize: z.number().int().positive().default(4 * MiB),
  /** Before an error response, read and discard at most this much unread request body (0: never). */
  errorDrainBytes: z.number().int().nonnegative().default(1 * MiB),
});

export type S3Config = z.infer<typeof S3ConfigSchema>;
export type S3ConfigInput = z.input<typeof S3ConfigSchema>;

export function parseS3Config(input: unknown): S3Config {
  const parsed = S3ConfigSchema.safeParse(input ?? {});
  if (!parsed.success) throw new Error(`Invalid S3 front-door config:\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
