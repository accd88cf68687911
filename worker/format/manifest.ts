/**
 * ObjectManifest: everything needed to read an object back, recorded in the catalog at commit and
 * (its geometry part) in every shard header, so the catalog can be rebuilt from the backends and
 * an object rescued without the gateway. Geometry is never derived from current config.
 * docs/FORMAT.md describes the encoding byte by byte.
 */
import type { ObjectChecksum, ObjectMetadata } from '../model/object-store.ts';
import type { UnitSeal } from './seal.ts';

/** 'rs-cauchy-gf8': systematic Reed-Solomon, ISA-L Cauchy matrix. 'replica': every shard is the data. */
export type Codec = 'rs-cauchy-gf8' | 'replica';

/**
 * How a unit's object bytes map onto its data blocks (worker/format/layout.ts): 'striped' rows of
 * k consecutive blocks, or 'column' (data shard i holds one consecutive range). Absent: striped.
 */
export type UnitLayoutKind = 'striped' | 'column';

/** One erasure-coded unit: a whole single-PUT object, a segment of one, or one multipart part. */
export interface CodedUnit {
  /** Unique per write; shard keys derive from it, so a new write never touches old shards. */
  unitId: string;
  codec: Codec;
  /** Bytes of object data in this unit (plaintext: a sealed unit stores more, format/seal.ts `storedSize`). */
  size: number;
  /** Present when the unit is sealed (encrypted): its wrapped data key (format/seal.ts). */
  seal?: UnitSeal;
  k: number;
  m: number;
  /** Bytes of each shard per stripe (the last stripe's blocks may be shorter). */
  blockSize: number;
  /** Absent: 'striped'. */
  layout?: UnitLayoutKind;
  /** Backend id holding shard i (k+m entries). */
  placement: string[];
  /** Header length of shard i's file (headers differ slightly: they carry the shard index). */
  headerLens: number[];
  /** xxh64 of each shard's block checksums, hex (k+m entries); empty until the unit is complete. */
  shardDigests: string[];
  /** Shards that were not written (write reached quorum without them); repair restores them. */
  missing: number[];
  /** Hex MD5 of the unit's bytes (a part's ETag, or the object's ETag without quotes). */
  md5: string;
  /** A multipart part's own checksum, for COMPOSITE and FULL_OBJECT computation. */
  checksum?: ObjectChecksum | null;
  partNumber?: number;
  /**
   * Set on an object's first unit once its tags were changed after the write: the tags as last set
   * are then also in a tag record beside its shards (format/tag-record.ts; written by engine/tag-record.ts), which the collector
   * deletes with them and a rebuild prefers to the write's header.
   */
  tagRecord?: true;
}

export interface ObjectManifest {
  format: 1;
  bucket: string;
  key: string;
  versionId: string;
  size: number;
  etag: string; // quoted
  lastModified: string; // ISO 8601
  metadata: ObjectMetadata;
  checksum: ObjectChecksum | null;
  /**
   * How the bytes are stored: inline (base64, small objects; sealed records when `seal` is set) or
   * as coded units in order.
   */
  storage: { kind: 'inline'; data: string; seal?: UnitSeal } | { kind: 'coded'; units: CodedUnit[] };
  partsCount?: number;
}
