/**
 * A version's S3 storage class (issue 44) as its metadata records it: absent for STANDARD (as
 * every version written before classes), else the class's name. Which policy a class names is the
 * engine's (engine/policy.ts policyForClass).
 */
import type { ObjectMetadata } from './object-store.ts';

/** Metadata with its storage class set (null: STANDARD, recorded as no class). */
export function withClass(metadata: ObjectMetadata, storageClass: string | null): ObjectMetadata {
  const { storageClass: _old, ...rest } = metadata;
  return storageClass === null ? rest : { ...rest, storageClass };
}
