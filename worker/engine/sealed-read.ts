/**
 * Reading a sealed unit (format/seal.ts): plaintext bytes [start, end] come from the stored bytes
 * of the records that hold them and nothing else (sealedSpan), each record opened (its tag
 * checked) as it completes. A record that fails its tag fails the read: a sealed unit never
 * yields a byte that was not written. Memory: one record's stored bytes (reused), and each
 * opened record until the consumer takes it.
 */
import type { CodedUnit } from '../format/manifest.ts';
import { SEAL_TAG_BYTES, openSeal, release, sealedSpan, storedSize, type DataKey, type KeyRing } from '../format/seal.ts';
import { lend, noteDetached, type LentStream } from '../model/lent-chunks.ts';
import { openUnit } from './open-unit.ts';
import type { ReadUnitInput } from './unit-reader.ts';

/**
 * Bytes [input.start, input.end] of a coded unit's object data, sealed or not: a sealed unit's
 * records are read through the engine's unit readers as stored bytes (the readers never know).
 */
export async function openCodedUnit(input: ReadUnitInput, ring: KeyRing | undefined, customerKey?: Uint8Array): Promise<LentStream> {
  const { unit } = input;
  if (!unit.seal) return openUnit(input);
  const dek = await openSeal(unit.seal, ring, customerKey);
  const stored: CodedUnit = { ...unit, size: storedSize(unit), seal: undefined };
  return openSealed((from, to) => openUnit({ ...input, unit: stored, start: from, end: to }), dek, unit.size, unit.seal.record, input.start, input.end);
}

/** The stored bytes [from, to] of the unit, as the engine's unit reader opens them. */
export type OpenStored = (from: number, to: number) => Promise<ReadableStream<Uint8Array>>;

/**
 * The plaintext [start, end] of sealed stored bytes. Each record's plaintext is lent until the
 * next read: it is released (detached, seal.ts) then.
 */
export async function openSealed(openStored: OpenStored, dek: DataKey, plainSize: number, record: number, start: number, end: number): Promise<LentStream> {
  const span = sealedSpan(start, end, plainSize, record);
  const reader = (await openStored(span.from, span.to)).getReader();
  const stride = record + SEAL_TAG_BYTES;
  const buffer = new Uint8Array(stride);
  let index = span.first;
  let rest: Uint8Array = new Uint8Array(0);
  /** The record last handed out: consumed once the next pull comes, then freed (seal.ts `release`). */
  let handed: Uint8Array | null = null;

  /**
   * Record `index`'s stored bytes: a view of the unit stream's chunk when it holds the whole
   * record (opening it copies it before the chunk is reused), else copied into `buffer`.
   */
  const nextRecord = async (): Promise<Uint8Array> => {
    const len = Math.min(record, plainSize - index * record) + SEAL_TAG_BYTES;
    if (rest.length >= len) {
      const whole = rest.subarray(0, len);
      rest = rest.subarray(len);
      return whole;
    }
    let got = 0;
    while (got < len) {
      if (rest.length === 0) {
        const r = await reader.read();
        if (r.done) throw new Error(`sealed unit: stored bytes end inside record ${index}`);
        rest = r.value;
      }
      const n = Math.min(len - got, rest.length);
      buffer.set(rest.subarray(0, n), got);
      rest = rest.subarray(n);
      got += n;
    }
    return buffer.subarray(0, len);
  };

  const plaintext = new ReadableStream<Uint8Array>(
    {
      pull: async (controller) => {
        try {
          if (index > span.last) {
            // Read the unit stream to its end: that is where its reader gives back what it holds.
            for (;;) {
              if (rest.length) throw new Error('sealed unit: stored bytes go on past the last record');
              const r = await reader.read();
              if (r.done) return controller.close();
              rest = r.value;
            }
          }
          if (handed) noteDetached(handed.buffer, `sealed record ${index - 1} (released at the next read)`), release(handed.buffer);
          handed = null;
          const plain = (handed = await dek.openRecord(index, await nextRecord()));
          const base = index * record;
          const lo = Math.max(start, base) - base,
            hi = Math.min(end, base + plain.length - 1) - base;
          index++;
          controller.enqueue(plain.subarray(lo, hi + 1));
        } catch (err) {
          await reader.cancel(err).catch(() => {});
          throw err;
        }
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  return lend(plaintext, `sealed records [${start}, ${end}]`);
}
