/**
 * A bucket's default encryption as PutBucketEncryption sets it (s3/bucket-encryption.ts): the
 * algorithm new objects get when a write names none, the KMS key for aws:kms (absent: the
 * gateway's default key, as AWS uses its aws/s3 key) and the bucket key flag, echoed as set.
 * Stored as the bucket's state row 'encryption', a request-path setting (bucket-settings.ts), so
 * a PUT applies it without a catalog call of its own. No row: the bucket's storage policy decides
 * (SSE-S3 when it seals, as every bucket's default since 2023 on AWS).
 */
export const DEFAULT_ENCRYPTION_ROW = 'encryption';

export interface DefaultEncryption {
  algorithm: 'AES256' | 'aws:kms';
  /** As given (a bare id or an ARN); only with aws:kms. */
  kmsKeyId?: string;
  bucketKey: boolean;
}

export function parseStoredDefaultEncryption(text: string | null): DefaultEncryption | null {
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as Partial<DefaultEncryption>;
    if (v.algorithm !== 'AES256' && v.algorithm !== 'aws:kms') return null;
    return { algorithm: v.algorithm, ...(typeof v.kmsKeyId === 'string' ? { kmsKeyId: v.kmsKeyId } : {}), bucketKey: v.bucketKey === true };
  } catch {
    return null;
  }
}
