/**
 * Reading a planned object's bytes with the gateway's own readers (the engine's openUnit:
 * UnitReader for striped units, ColumnReader for column units): only the blocks needed, every block's XXH64
 * checked, missing or damaged shards decoded around from parity (up to m per unit), each write's
 * MD5 checked against its footer at the end. Bytes go to `sink` as they are decoded.
 * A sealed unit is read through openCodedUnit: its records' stored bytes decoded as any unit's,
 * each record opened with the unit's data key (its AES-GCM tag checked), and the plaintext hashed
 * against the footer's unmasked MD5 (plan.ts).
 */
import { createHash, type Hash } from 'node:crypto';
import type { Backend } from '../../backends/types.ts';
import { openCodedUnit, type ShardReadError } from '../../worker/engine/index.ts';
import type { KeyRing } from '../../worker/format/seal.ts';
import type { PlannedObject, PlannedUnit } from './plan.ts';
import type { ShardIndex } from './scan.ts';
import { errorMessage } from '../../worker/model/error-message.ts';

export interface ReadReport {
  /** Shards the readers met missing, damaged or unreadable (decoded around). */
  unhealthy: { unitId: string; shard: number; backend: string; reason: string }[];
  /** MD5 checks that failed (the bytes are wrong: never trust them). */
  md5Mismatches: { write: string; expected: string; got: string }[];
}

export class RescueError extends Error {
  override readonly name = 'RescueError';
}

/** A unit's plaintext: a sealed unit's records are read as stored bytes and opened (each tag checked) with `ring`. */
function openUnit(index: ShardIndex, u: PlannedUnit, ring: KeyRing | undefined, onUnhealthy: (e: ShardReadError) => void): Promise<ReadableStream<Uint8Array>> {
  const backends = new Map<string, Backend>(u.unit.placement.map((id) => [id, index]));
  const input = { bucket: u.header.bucket, unit: u.unit, backends, start: 0, end: u.unit.size - 1, onUnhealthy };
  return openCodedUnit(input, ring);
}

/** Streams the object into `sink` (chunk by chunk); throws RescueError when its bytes cannot be had or fail an MD5. */
export async function readObject(
  index: ShardIndex,
  o: PlannedObject,
  ring: KeyRing | undefined,
  sink: (chunk: Uint8Array) => Promise<void> | void,
  onBytes: (n: number) => void = () => {},
): Promise<ReadReport> {
  const report: ReadReport = { unhealthy: [], md5Mismatches: [] };
  for (const w of o.writes) {
    let offset = 0;
    let check = 0;
    let hash: Hash = createHash('md5');
    const finishChecks = () => {
      while (check < w.md5Checks.length && w.md5Checks[check]!.to <= offset) {
        const got = hash.digest('hex');
        const expected = w.md5Checks[check]!.md5;
        if (got !== expected) report.md5Mismatches.push({ write: w.id, expected, got });
        hash = createHash('md5');
        check++;
      }
    };
    finishChecks(); // empty writes
    for (const u of w.units) {
      if (u.unit.size === 0) continue;
      const stream = await openUnit(index, u, ring, (e) =>
        report.unhealthy.push({ unitId: u.unit.unitId, shard: e.shardIndex, backend: u.unit.placement[e.shardIndex]!, reason: `${e.reason}: ${e.message}` }),
      ).catch((err: unknown) => {
        throw new RescueError(`unit ${u.unit.unitId}: ${errorMessage(err)}`);
      });
      try {
        for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
          // A chunk may span the end of a checked range (units of one write are checked one by one).
          let at = 0;
          while (at < chunk.length) {
            const limit = check < w.md5Checks.length ? w.md5Checks[check]!.to - offset : chunk.length - at;
            const piece = chunk.subarray(at, at + Math.min(limit, chunk.length - at));
            hash.update(piece);
            offset += piece.length;
            at += piece.length;
            finishChecks();
          }
          await sink(chunk);
          onBytes(chunk.length);
        }
      } catch (err) {
        throw new RescueError(`unit ${u.unit.unitId}: ${errorMessage(err)}`);
      }
    }
    if (offset !== w.size) throw new RescueError(`write ${w.id}: ${offset} bytes read, ${w.size} expected`);
  }
  return report;
}
