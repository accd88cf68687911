/**
 * Opening bytes [start, end] of one coded unit, whatever its layout: UnitReader for striped
 * units, ColumnReader for column units. The object store reads its units through it, and
 * `shardgate rescue` reads units found on raw backend buckets through it (no gateway).
 */
import { ColumnReader } from './column-reader.ts';
import { readUnit, type ReadUnitInput } from './unit-reader.ts';

/** The unit's bytes [start, end] as a stream; its first row is read before it returns (unit-reader.ts). */
export function openUnit(input: ReadUnitInput): Promise<ReadableStream<Uint8Array>> {
  return input.unit.layout === 'column' ? new ColumnReader(input).open() : readUnit(input);
}
