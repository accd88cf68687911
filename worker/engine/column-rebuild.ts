/**
 * ColumnRebuild: rows of a column unit's lost data shards (the targets), rebuilt in one pass
 * from k good sources, each opened once over those rows, at most 6 open at once (Workers'
 * subrequest limit). Blocks are folded as they arrive, in whatever order the sources stream, into
 * parity syndromes (coder SyndromeRebuilder), which do not depend on which shards end up being
 * the sources: a source that fails mid-pass costs one more read, never the pass.
 *
 * How a pass goes:
 * - Kept (`holdAtMost`): a data source the caller would read later is kept as it is folded, in
 *   the caller's order, while the syndromes and the kept columns fit in `holdAtMost` (a unit
 *   writer's parity bound): the caller is sent its rows from here and never reads it again. When
 *   every such source fits, nothing is solved by choice (one syndrome to fold, not m).
 * - Solved by choice (`solveLater`): otherwise a data shard the caller would read later, not
 *   opened yet, is solved instead of read whenever a good parity is left over, up to every good
 *   parity: one parity read in place of that shard's two (as a source, then for its own bytes,
 *   since the caller sends a column unit shard after shard). With one data shard down and nothing
 *   kept, 8+3 thus reads 13 columns instead of 15. m syndromes of a column are the m parity
 *   columns the unit's writer held (unit-store.ts, columnParityBytes).
 * - Sources: the first k good shards of `preference` that are neither targets nor solved by
 *   choice. Data shards not among them are the unknowns; the parities among them are read, and
 *   the next good parity, if any, is kept as a spare: its syndrome is folded too, but it is read
 *   only when needed. Memory: the syndromes, (parities read + 1) x the rows' bytes, plus two
 *   blocks, asked of `grow` first.
 * - The parities open first, and no block is folded until each has answered its first block (a
 *   gate that costs no round trip: the data sources open meanwhile). A parity down is thus known
 *   before anything is folded: a spare takes its place, or else a shard solved by choice is read
 *   as a source after all.
 * - A source that fails after the gate (data or parity) is replaced, from the row it failed at,
 *   by the spare, or else by a shard solved by choice, read from that row (its rows before it stay
 *   solved); a data shard the caller would read later (`later`) that fails becomes a target from
 *   that row. A failure after the gate with neither left starts the pass again with every failure
 *   known (as many sources as are left), and the choices made again.
 * So a unit with one or two shards down, recorded or not, costs the sources once: with the
 * caller's own reads of the healthy data shards, at most 2k GETs (column-reader.ts), fewer by
 * each shard kept or solved by choice (k+1 when every later source is kept), except when the last
 * data shard of the range and the parity taken first are both down and unrecorded (2k+1: every
 * data shard was asked for its own bytes before the loss was known).
 *
 * Contract:
 * - `run()` resolves once every target row can be given, or rejects: QuorumError when fewer than
 *   k good sources are left, never wrong bytes. Every failure is reported through `onUnhealthy`
 *   once. A failed source is added to `bad`, except a `later` one that failed past the first row
 *   the caller wants of it: the caller reads those rows itself and takes the rest from here.
 * - `grow(bytes)` (the isolate's coding budget) is asked for the syndromes' and kept columns'
 *   memory before it is allocated; what it grants is given back by `free()`, which also cancels every open source
 *   read. `free()` may be called at any time (a client hanging up mid-pass) and more than once.
 * - `row(t, j)` returns bytes of a rebuilt or kept row in a buffer of this rebuild's, valid until
 *   the next `row` call (as a reader's block is until the next read: no allocation per block).
 * - `has(t, j)` is true, once `run()` resolved, for every row it can give: solved or kept.
 */
import type { Backend } from '../../backends/types.ts';
import { createCoder, type Coder, type SyndromeRebuilder } from '../../coder-wasm/index.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { shardKey } from '../format/shard-key.ts';
import type { BackendLatency } from './backend-latency.ts';
import { unitSalt } from '../format/shard-file.ts';
import { shardLayout, type UnitLayout } from '../format/layout.ts';
import { QuorumError } from './shard-set.ts';
import { ShardReadError, ShardReader } from './shard-reader.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore } from './subrequests.ts';

/** Asks the coding budget for `bytes` more; resolves to the function that gives them back. */
export type GrowBudget = (bytes: number) => Promise<() => void>;

export interface ColumnRebuildInput {
  bucket: string;
  unit: CodedUnit;
  backends: Map<string, Backend>;
  /** Data shards to rebuild, each from row `from` to row `to`. */
  targets: RebuildTarget[];
  /**
   * Data shards the caller will read for their own bytes later (rows `from`..`to`): one that fails
   * as a source becomes a target, and one not yet opened may be made one (see the module note).
   */
  later?: RebuildTarget[];
  /** Shards never to read; sources that fail are added (see the contract). */
  bad: Set<number>;
  /** Every shard in the order sources are taken (targets and bad ones are skipped). */
  preference: number[];
  onUnhealthy?: (err: ShardReadError) => void;
  latency?: BackendLatency;
  grow?: GrowBudget;
  /** Requests this rebuild may hold open at once (default 6: the caller's own are open besides). */
  maxOpen?: number;
  /** `later` shards whose own read is open already: never solved instead of read. */
  opened?: Set<number>;
  /** Solve `later` shards instead of reading them when good parities are left over (the module note). */
  solveLater?: boolean;
  /**
   * Bytes the pass may hold in all, syndromes and kept columns (default 0: none kept): `later`
   * data sources are kept as they are folded while they fit (the module note).
   */
  holdAtMost?: number;
}

export interface RebuildTarget {
  shard: number;
  from: number;
  to: number;
}

export class ColumnRebuild {
  private coder: Coder | null = null;
  private syndromes: SyndromeRebuilder | null = null;
  private readers = new Set<ShardReader>();
  private giveBack: (() => void)[] = [];
  private held = 0;
  private closed = false;
  private done = false;
  private readonly blockSize: number;
  private readonly layout: UnitLayout;
  private readonly targets: RebuildTarget[];
  /** Shards found failing by this rebuild (not all of them in `bad`: see the contract). */
  private readonly failed = new Set<number>();
  /** Later data sources' columns kept as they were folded: rows [firstRow, upTo), laid out as the syndromes. */
  private readonly kept = new Map<number, { rows: Uint8Array; upTo: number }>();
  /** Rows held: row j is at (j - firstRow) x blockSize in every syndrome. */
  private firstRow = 0;
  private lastRow = -1;
  /** This pass's `later` shards solved by choice: every row unknown, each can give way (the module note). */
  private chosen: RebuildTarget[] = [];
  /** Shards solved by choice that gave way at a row: solved before it, read as sources from it. */
  private gaveWay: RebuildTarget[] = [];
  /** Data shards not folded in at rows [from, to) (never folded: [firstRow, Infinity)). */
  private unknownRows = new Map<number, { from: number; to: number }>();
  /** Parities folded in, rows [from, to). */
  private parityRows = new Map<number, { from: number; to: number }>();
  /** Where row() puts what it solves (reused). */
  private out: ArrayBuffer | null = null;

  constructor(private readonly input: ColumnRebuildInput) {
    this.blockSize = input.unit.blockSize;
    this.layout = shardLayout(input.unit, 0);
    this.targets = [...input.targets];
  }

  /** True once run() has rebuilt, or kept, row j of data shard `shard`. */
  has(shard: number, row: number): boolean {
    if (!this.done) return false;
    return this.keeps(shard, row) || this.solving().some((t) => t.shard === shard && row >= t.from && row <= t.to);
  }

  /** True when row j of data shard `shard` was kept from its read as a source. */
  private keeps(shard: number, j: number): boolean {
    const kept = this.kept.get(shard);
    return kept !== undefined && j >= this.firstRow && j < kept.upTo;
  }

  /** Every range this pass solves: the targets and the shards solved by choice. */
  private solving(): RebuildTarget[] {
    return [...this.targets, ...this.chosen, ...this.gaveWay];
  }

  /** Reads and folds the sources; see the module contract. */
  async run(): Promise<void> {
    this.coder = createCoder(this.input.unit.k, this.input.unit.m);
    for (;;) {
      if (this.closed) throw this.cancelled();
      const complete = await this.pass();
      if (this.closed) throw this.cancelled(); // freed mid-pass: nothing is rebuilt
      if (complete) {
        this.done = true;
        return;
      }
    }
  }

  private cancelled(): ShardReadError {
    return new ShardReadError(this.targets[0]!.shard, 'unavailable', 'rebuild cancelled');
  }

  private excluded(i: number): boolean {
    return this.input.bad.has(i) || this.failed.has(i);
  }

  /** Holds `bytes` of the coding budget in all for this pass (more is asked for when it grows). */
  private async hold(bytes: number): Promise<void> {
    if (bytes <= this.held || !this.input.grow) return;
    const giveBack = await this.input.grow(bytes - this.held);
    this.giveBack.push(giveBack);
    this.held = bytes;
    if (this.closed) {
      this.release(); // freed while waiting: nothing may stay held
      throw this.cancelled();
    }
  }

  private release(): void {
    for (const g of this.giveBack) g();
    this.giveBack = [];
    this.held = 0;
  }

  /** One pass: true when every target row can be solved; false when it must start again. */
  private async pass(): Promise<boolean> {
    const { unit, bucket, preference } = this.input;
    const { k } = unit;
    const rows = [...this.targets, ...(this.input.later ?? [])];
    this.firstRow = Math.min(...rows.map((t) => t.from));
    this.lastRow = Math.max(...rows.map((t) => t.to));
    const len = (this.lastRow - this.firstRow) * this.blockSize + this.layout.blockLen(this.lastRow);
    const blockLen = Math.min(this.blockSize, len);
    const bytesFor = (syndromes: number) => syndromes * len + 2 * blockLen;
    const holdAtMost = this.input.holdAtMost ?? 0;

    const targetShards = new Set(this.targets.map((t) => t.shard));
    const goodParities = preference.filter((i) => i >= k && !this.excluded(i)).length;
    const unknownData = [...Array(k).keys()].filter((i) => this.excluded(i) || targetShards.has(i)).length;
    const readLater = (this.input.later ?? []).filter((t) => !this.excluded(t.shard) && !targetShards.has(t.shard) && !this.input.opened?.has(t.shard));
    // Keeping every later source's column costs less CPU than solving some of them (one
    // syndrome to fold per source instead of m): then none is solved by choice.
    const keepsAll = bytesFor(unknownData + 1) + readLater.length * len <= holdAtMost;
    this.chosen =
      !this.input.solveLater || keepsAll
        ? []
        : [...readLater]
            .sort((a, b) => b.shard - a.shard) // the caller reads these last
            .slice(0, Math.max(0, goodParities - unknownData))
            .map((t) => ({ ...t }));
    this.gaveWay = [];
    for (const t of this.chosen) targetShards.add(t.shard);
    const chosen = preference.filter((i) => !this.excluded(i) && !targetShards.has(i)).slice(0, k);
    if (chosen.length < k) {
      throw new QuorumError(`only ${chosen.length} good shards of unit ${unit.unitId} besides the ${targetShards.size} being rebuilt; ${k} needed`, []);
    }
    const dataSources = chosen.filter((i) => i < k);
    const parities = chosen.filter((i) => i >= k);
    const spareParities = () => preference.filter((i) => i >= k && !this.excluded(i) && !this.parityRows.has(i) && !parities.includes(i));
    this.unknownRows = new Map(
      [...Array(k).keys()].filter((i) => !dataSources.includes(i)).map((i) => [i, { from: this.firstRow, to: Number.POSITIVE_INFINITY }]),
    );
    this.parityRows = new Map(parities.map((p) => [p, { from: this.firstRow, to: this.lastRow + 1 }]));
    this.syndromes?.free();
    this.syndromes = null;
    this.kept.clear();
    this.release();
    const syndromeBytes = bytesFor(parities.length + Math.min(1, spareParities().length));
    // Later data sources kept as they are folded, in the order the caller sends them, while
    // they fit in `holdAtMost`: the caller is sent them from here instead of reading them again.
    const keepable = dataSources.filter((i) => readLater.some((t) => t.shard === i)).sort((a, b) => a - b);
    let keep = 0;
    while (keep < keepable.length && syndromeBytes + (keep + 1) * len <= holdAtMost) keep++;
    const keptBytes = keep * len;
    await this.hold(syndromeBytes + keptBytes);
    for (const i of keepable.slice(0, keep)) this.kept.set(i, { rows: new Uint8Array(len), upTo: this.firstRow });

    const salt = unitSalt(unit.unitId);
    const maxOpen = Math.max(2, this.input.maxOpen ?? MAX_OPEN_SUBREQUESTS);
    const slots = new Semaphore(maxOpen);
    const tasks: Promise<void>[] = [];
    let lost = false;
    let spares: number[] = [];
    const loseThePass = () => {
      lost = true;
      for (const r of this.readers) r.cancel();
    };

    // The gate: every parity read first (within the slots that leave one for a data source)
    // answers its first block before anything is folded.
    const gated = new Set(parities.slice(0, maxOpen - 1));
    let waitingFor = gated.size;
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    let gateOpen = false;
    const answered = (i: number) => {
      if (!gated.delete(i)) return;
      if (--waitingFor === 0) void atGate();
    };

    const failedAt = (i: number, j: number, err: ShardReadError) => {
      if (this.failed.has(i)) return;
      this.failed.add(i);
      const later = this.input.later?.find((t) => t.shard === i);
      if (!(later && j > later.from)) this.input.bad.add(i);
      this.input.onUnhealthy?.(err);
      if (later && i < k) this.targets.push({ shard: i, from: Math.max(j, later.from), to: later.to });
      // A shard that gave way and then fails would be unknown on two ranges: plan again instead.
      if (i < k && this.unknownRows.has(i)) return loseThePass();
      if (i < k) this.unknownRows.set(i, { from: j, to: Number.POSITIVE_INFINITY });
      else this.parityRows.get(i)!.to = j;
      if (!gateOpen) return; // planned at the gate
      const spare = spares.shift();
      if (spare !== undefined) {
        this.parityRows.set(spare, { from: j, to: this.lastRow + 1 });
        tasks.push(read(spare, j, true));
        return;
      }
      const chosen = this.chosen.pop();
      if (!chosen) return loseThePass();
      giveWay(chosen, j);
      tasks.push(read(chosen.shard, j, true));
    };

    /** A shard solved by choice is read as a source from row j on; its rows before j stay solved. */
    const giveWay = (t: RebuildTarget, j: number) => {
      if (j > this.firstRow) this.unknownRows.set(t.shard, { from: this.firstRow, to: j });
      else this.unknownRows.delete(t.shard);
      if (j > t.from) this.gaveWay.push({ shard: t.shard, from: t.from, to: Math.min(t.to, j - 1) });
    };

    const read = (i: number, from: number, first = false): Promise<void> =>
      slots.run(async () => {
        if (lost || this.closed) return answered(i);
        const b = this.input.backends.get(unit.placement[i]!);
        if (!b) {
          failedAt(i, from, new ShardReadError(i, 'unavailable', `backend ${unit.placement[i]} is not configured`));
          return answered(i);
        }
        const reader = new ShardReader(i, b, shardKey(bucket, unit.unitId, i), shardLayout(unit, i), from, this.lastRow, salt, this.input.latency);
        this.readers.add(reader);
        let j = from;
        try {
          for (; j <= this.lastRow; j++) {
            const block = await reader.readBlock(j);
            if (j === from) {
              answered(i);
              await gate;
            }
            if (lost || this.closed) return;
            const sr = this.syndromes!;
            sr.block().set(block);
            const at = (j - this.firstRow) * this.blockSize;
            if (i < k) sr.addData(i, at, block.length);
            else sr.addParity(i, at, block.length);
            const kept = this.kept.get(i);
            if (kept?.upTo === j) {
              kept.rows.set(block, at);
              kept.upTo = j + 1;
            }
          }
        } catch (err) {
          if (!(err instanceof ShardReadError)) throw err;
          if (!lost && !this.closed) failedAt(i, j, err);
          answered(i);
        } finally {
          reader.cancel();
          this.readers.delete(reader);
        }
      }, first);

    /**
     * Every gated parity has answered: each one down is replaced by a spare parity, or else a
     * shard solved by choice is read as a source after all. Then the syndromes are allocated.
     */
    const atGate = async () => {
      try {
        const reading = parities.filter((p) => !this.failed.has(p));
        const more = spareParities();
        const readNow: number[] = [];
        while (this.unknownRows.size > reading.length + more.length && this.chosen.length) {
          const t = this.chosen.pop()!;
          giveWay(t, this.firstRow);
          readNow.push(t.shard);
        }
        const needed = Math.max(0, this.unknownRows.size - reading.length);
        if (needed > more.length) return loseThePass();
        const replacements = more.slice(0, needed);
        spares = more.slice(needed, needed + 1); // read only when a source fails from here on
        for (const p of replacements) this.parityRows.set(p, { from: this.firstRow, to: this.lastRow + 1 });
        gateOpen = true; // failures from now on take the spare
        for (const p of replacements) tasks.push(read(p, this.firstRow, true));
        for (const i of readNow) tasks.push(read(i, this.firstRow, true));
        const syndromes = [...reading, ...replacements, ...spares];
        await this.hold(bytesFor(syndromes.length) + keptBytes);
        if (this.closed) return;
        this.syndromes = this.coder!.syndromeRebuilder(syndromes, len, blockLen);
      } catch {
        loseThePass();
      } finally {
        gateOpen = true;
        openGate();
      }
    };
    if (waitingFor === 0) void atGate();

    for (const p of parities) tasks.push(read(p, this.firstRow));
    for (const i of dataSources) tasks.push(read(i, this.firstRow));
    for (let n = 0; n < tasks.length; ) {
      const batch = tasks.slice(n);
      n = tasks.length;
      await Promise.all(batch);
    }
    await gate;
    if (lost || this.closed) return false;
    return this.solving().every((t) => this.solvable(t));
  }

  /** Unknown data shards at row j, and the syndromes complete there (as many as needed, if there are). */
  private plan(j: number): { unknowns: number[]; using: number[] } {
    const unknowns = [...this.unknownRows]
      .filter(([, r]) => r.from <= j && j < r.to)
      .map(([d]) => d)
      .sort((a, b) => a - b);
    const using = this.syndromes!.parities.filter((p) => {
      const r = this.parityRows.get(p);
      return r !== undefined && r.from <= j && j < r.to;
    });
    return { unknowns, using: using.slice(0, unknowns.length) };
  }

  private solvable(t: RebuildTarget): boolean {
    for (let j = Math.max(t.from, this.firstRow); j <= t.to; j++) {
      const { unknowns, using } = this.plan(j);
      if (using.length < unknowns.length || !unknowns.includes(t.shard)) return false;
    }
    return true;
  }

  /** Bytes [lo, hi) of row j of rebuilt data shard `shard`, valid until the next call. */
  row(shard: number, j: number, lo: number, hi: number): Uint8Array {
    if (this.keeps(shard, j)) {
      const at = (j - this.firstRow) * this.blockSize;
      return this.kept.get(shard)!.rows.subarray(at + lo, at + hi);
    }
    const { unknowns, using } = this.plan(j);
    const solved = this.syndromes!.solve(unknowns, using, shard, (j - this.firstRow) * this.blockSize + lo, hi - lo);
    if (!this.out || this.out.byteLength < solved.length) this.out = new ArrayBuffer(Math.max(solved.length, this.blockSize));
    const out = new Uint8Array(this.out, 0, solved.length);
    out.set(solved);
    return out;
  }

  free(): void {
    this.closed = true;
    for (const r of this.readers) r.cancel();
    this.readers.clear();
    this.syndromes?.free();
    this.coder?.free();
    this.syndromes = null;
    this.coder = null;
    this.kept.clear();
    this.release();
  }
}
