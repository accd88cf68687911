/**
 * Opening bytes [start, end] of one coded unit, whatever its layout: UnitReader for striped
 * units, ColumnReader for column units. The object store reads its units through it, and
 * `shardgate rescue` reads units found on raw backend buckets through it (no gateway).
 */
import { lend, type LentStream } from '../model/lent-chunks.ts';
import { ColumnReader } from './column-reader.ts';
import { readUnit, type ReadUnitInput } from './unit-reader.ts';

/**
 * The unit's bytes [start, end] as a stream; its first row is read before it returns
 * (unit-reader.ts). Its chunks are views of the readers' reused buffers: lent until the next read.
 */
export async function openUnit(input: ReadUnitInput): Promise<LentStream> {
  const stream = input.unit.layout === 'column' ? await new ColumnReader(input).open() : await readUnit(input);
  return lend(stream, `unit ${input.unit.unitId} [${input.start}, ${input.end}]`);
}
