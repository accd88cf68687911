/**
 * SealingFeed: a unit's bytes as stored when the unit is sealed (format/seal.ts): the body's next
 * `plainSize` bytes cut into records, each sealed with the unit's data key as it is asked for.
 * Unit writers read it as they read the body itself (`fill`), asking for stored bytes; the body's
 * digest (MD5, the client's checksum) is still taken over the plaintext, by the feed below.
 * Memory: one record of plaintext (reused) and the sealed record being handed out.
 */
import type { BodyDigest } from '../model/digest.ts';
import { release, type DataKey } from '../format/seal.ts';
import type { UnitFeed } from './body-feed.ts';

export class SealingFeed implements UnitFeed {
  private readonly plain: Uint8Array;
  private sealed: Uint8Array | null = null;
  private at = 0;
  private next = 0;

  constructor(
    private readonly body: UnitFeed,
    /** Plaintext bytes of this unit, taken from `body`. */
    private readonly plainSize: number,
    private readonly dek: DataKey,
    private readonly record: number,
  ) {
    this.plain = new Uint8Array(Math.min(record, Math.max(plainSize, 1)));
  }

  get digest(): BodyDigest {
    return this.body.digest;
  }

  async fill(len: number, target: () => Uint8Array, at = 0): Promise<void> {
    let filled = 0;
    while (filled < len) {
      if (!this.sealed || this.at === this.sealed.length) await this.sealNext();
      const take = Math.min(len - filled, this.sealed!.length - this.at);
      target().set(this.sealed!.subarray(this.at, this.at + take), at + filled);
      this.at += take;
      filled += take;
    }
  }

  private async sealNext(): Promise<void> {
    const len = Math.min(this.record, this.plainSize - this.next * this.record);
    if (len <= 0) throw new RangeError(`SealingFeed: asked past the unit's ${this.plainSize} bytes`);
    const plain = this.plain.subarray(0, len);
    await this.body.fill(len, () => plain);
    if (this.sealed) release(this.sealed.buffer); // copied out whole: the writer holds no view of it
    this.sealed = await this.dek.sealRecord(this.next++, plain);
    this.at = 0;
  }

  expectEnd(): Promise<void> {
    return this.body.expectEnd();
  }

  release(): void {
    this.body.release();
  }
}
