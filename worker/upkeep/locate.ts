/**
 * "Where are the shards of this object" (issue 37; `POST /_shardgate/admin/locate`, `shardgate
 * locate`): for one stored version, every unit and every shard with its backend, its shard key
 * and what the backend says of it now, one HEAD per shard (sizes only, no egress):
 * - present: the file is there with the length the layout gives it (format/layout.ts);
 * - missing: the backend answered NotFound;
 * - wrong-size: there, with another length (truncated, or not this unit's file);
 * - unreachable: the backend did not answer (or is not configured any more);
 * and whether the catalog records the shard missing (repair has yet to rewrite it).
 * An inline object has no shards: its answer says so. At most MAX_LOCATED_UNITS units are looked
 * at (`truncated` says when more exist): a large multipart object is thousands of units.
 */
import { isBackendError, type Backend } from '../../backends/types.ts';
import type { ObjectCatalog } from '../catalog/ports.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore } from '../engine/index.ts';
import { shardLayout } from '../format/layout.ts';
import { shardKey } from '../format/shard-key.ts';
import { S3Error } from '../model/errors.ts';

export const MAX_LOCATED_UNITS = 200;

export type ShardWhere = 'present' | 'missing' | 'wrong-size' | 'unreachable';

export interface LocatedShard {
  index: number;
  /** Data shard (index < k) or parity. */
  role: 'data' | 'parity';
  backend: string;
  shardKey: string;
  state: ShardWhere;
  /** The length the backend reported (null: none). */
  size: number | null;
  expectedSize: number;
  /** The catalog records it missing: repair will rewrite it. */
  recordedMissing: boolean;
}

export interface Location {
  bucket: string;
  key: string;
  versionId: string;
  size: number;
  storage: 'inline' | 'coded';
  units: { unitId: string; codec: string; k: number; m: number; size: number; shards: LocatedShard[]; readable: boolean }[];
  truncated: boolean;
}

export async function locateObject(
  catalog: Pick<ObjectCatalog, 'getVersion'>,
  byId: ReadonlyMap<string, Backend>,
  bucket: string,
  key: string,
  versionId: string | null,
): Promise<Location> {
  const found = await catalog.getVersion(bucket, key, versionId);
  if (found.kind === 'marker') throw new S3Error('MethodNotAllowed', 'that version is a delete marker: it has no shards', { ResourceType: 'DeleteMarker' });
  if (found.kind === 'none')
    throw versionId === null ? new S3Error('NoSuchKey', undefined, { Key: key }) : new S3Error('NoSuchVersion', undefined, { Key: key, VersionId: versionId });
  const m = found.manifest;
  const base = { bucket, key, versionId: found.versionId ?? m.versionId, size: m.size };
  if (m.storage.kind !== 'coded') return { ...base, storage: 'inline', units: [], truncated: false };
  const slots = new Semaphore(MAX_OPEN_SUBREQUESTS);
  const units = m.storage.units.slice(0, MAX_LOCATED_UNITS);
  const located = await Promise.all(
    units.map(async (unit) => {
      const shards = await Promise.all(
        unit.placement.map(async (backendId, i): Promise<LocatedShard> => {
          const at = shardKey(bucket, unit.unitId, i);
          const expectedSize = shardLayout(unit, i).shardFileLen();
          const shard = {
            index: i,
            role: i < unit.k ? ('data' as const) : ('parity' as const),
            backend: backendId,
            shardKey: at,
            expectedSize,
            recordedMissing: unit.missing.includes(i),
          };
          const backend = byId.get(backendId);
          if (!backend) return { ...shard, state: 'unreachable', size: null };
          try {
            const { size } = await slots.run(() => backend.head(at));
            return { ...shard, state: size === expectedSize ? 'present' : 'wrong-size', size };
          } catch (err) {
            return { ...shard, state: isBackendError(err, 'NotFound') ? 'missing' : 'unreachable', size: null };
          }
        }),
      );
      return {
        unitId: unit.unitId,
        codec: unit.codec,
        k: unit.k,
        m: unit.m,
        size: unit.size,
        shards,
        readable: shards.filter((s) => s.state === 'present').length >= unit.k,
      };
    }),
  );
  return { ...base, storage: 'coded', units: located, truncated: m.storage.units.length > units.length };
}
