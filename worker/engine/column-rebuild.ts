/**
 * ColumnRebuild: rows of a column unit's lost data shards (the targets),
 * rebuilt in one pass from k good sources: each source is opened once, over all those rows, at
 * most 6 open at once (Workers' subrequest limit), and every verified block is folded into the
 * targets as it arrives, in whatever order the sources stream (coder ColumnRebuilder). Memory:
 * targets x the rows' bytes in wasm plus one scratch block; no source is held.
 *
 * Contract:
 * - `run()` resolves once every target row is rebuilt, or rejects: QuorumError when fewer than k
 *   good sources are left, never wrong bytes. A source that fails is marked in `bad`, reported
 *   through `onUnhealthy` once, and the pass starts again with another source set (the folded
 *   coefficients belong to the set), so a failure found mid-pass costs the re-read of the
 *   sources; a failed source the caller would read later (`later`) joins the targets, so it costs
 *   no pass of its own. Known gap: a second shard (data or parity) that is down without being
 *   recorded missing thus costs one more pass (up to 3k GETs for the unit instead of 2k);
 *   recorded ones cost none. (Folding parity syndromes, which do not depend on the source set,
 *   instead of decode coefficients would remove the restart.)
 * - `grow(bytes)` (the isolate's coding budget) is asked for the targets' memory before it is
 *   allocated; what it grants is given back by `free()`, which also cancels every open source
 *   read. `free()` may be called at any time (a client hanging up mid-pass) and more than once.
 * - `row(t, j)` copies bytes of a rebuilt row: the caller may keep the copy.
 */
import type { Backend } from '../../backends/types.ts';
import { createCoder, type ColumnRebuilder, type Coder } from '../../coder-wasm/index.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { shardKey } from '../format/shard-key.ts';
import type { BackendLatency } from './backend-latency.ts';
import { unitSalt } from '../format/shard-file.ts';
import { shardLayout } from '../format/layout.ts';
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
   * as a source joins the targets of the next pass, so it is not rebuilt by a pass of its own.
   */
  later?: RebuildTarget[];
  /** Shards never to read; sources that fail are added. */
  bad: Set<number>;
  /** Every shard in the order sources are taken (targets and bad ones are skipped). */
  preference: number[];
  onUnhealthy?: (err: ShardReadError) => void;
  latency?: BackendLatency;
  grow?: GrowBudget;
}

export interface RebuildTarget {
  shard: number;
  from: number;
  to: number;
}

export class ColumnRebuild {
  private coder: Coder | null = null;
  private rebuilder: ColumnRebuilder | null = null;
  private readers = new Set<ShardReader>();
  private giveBack: (() => void) | null = null;
  private closed = false;
  private readonly blockSize: number;
  private readonly targets: RebuildTarget[];
  /** Rows held: row j is at (j - firstRow) x blockSize in every target. */
  private firstRow = 0;
  private lastRow = -1;

  constructor(private readonly input: ColumnRebuildInput) {
    this.blockSize = input.unit.blockSize;
    this.targets = [...input.targets];
  }

  /** True once run() has rebuilt row j of data shard `shard`. */
  has(shard: number, row: number): boolean {
    return this.rebuilder !== null && this.targets.some((t) => t.shard === shard && row >= t.from && row <= t.to);
  }

  /** Reads and folds the sources; see the module contract. */
  async run(): Promise<void> {
    const { unit, bad } = this.input;
    const layout = shardLayout(unit, 0);
    this.coder = createCoder(unit.k, unit.m);
    for (;;) {
      if (this.closed) throw new ShardReadError(this.targets[0]!.shard, 'unavailable', 'rebuild cancelled');
      const targets = this.targets.map((t) => t.shard);
      const sources = this.input.preference.filter((i) => !bad.has(i) && !targets.includes(i)).slice(0, unit.k);
      if (sources.length < unit.k) {
        throw new QuorumError(`only ${sources.length} good shards of unit ${unit.unitId} besides the ${targets.length} being rebuilt; ${unit.k} needed`, []);
      }
      this.firstRow = Math.min(...this.targets.map((t) => t.from));
      this.lastRow = Math.max(...this.targets.map((t) => t.to));
      const len = (this.lastRow - this.firstRow) * this.blockSize + layout.blockLen(this.lastRow);
      const blockLen = Math.min(this.blockSize, len);
      this.rebuilder?.free();
      this.rebuilder = null;
      await this.hold(targets.length * len + blockLen);
      this.rebuilder = this.coder.columnRebuilder(sources, targets, len, blockLen);
      const failures = await this.pass(sources);
      if (this.closed) throw new ShardReadError(targets[0]!, 'unavailable', 'rebuild cancelled'); // freed mid-pass: nothing is rebuilt
      if (failures.length === 0) return;
      for (const f of failures) {
        if (bad.has(f.shardIndex)) continue;
        bad.add(f.shardIndex);
        this.input.onUnhealthy?.(f);
        const later = this.input.later?.find((t) => t.shard === f.shardIndex);
        if (later) this.targets.push(later);
      }
    }
  }

  /** Holds `bytes` of the coding budget (what an earlier pass held is given back first). */
  private async hold(bytes: number): Promise<void> {
    this.giveBack?.();
    this.giveBack = null;
    if (!this.input.grow) return;
    const giveBack = await this.input.grow(bytes);
    if (this.closed) {
      giveBack(); // freed while waiting: nothing may stay held
      throw new ShardReadError(this.targets[0]!.shard, 'unavailable', 'rebuild cancelled');
    }
    this.giveBack = giveBack;
  }

  /** One pass over `sources`: the failures of sources (empty: every target row is complete). */
  private async pass(sources: number[]): Promise<ShardReadError[]> {
    const { unit, bucket } = this.input;
    const salt = unitSalt(unit.unitId);
    const slots = new Semaphore(MAX_OPEN_SUBREQUESTS);
    const failures: ShardReadError[] = [];
    const stop = new Set<ShardReader>();
    await Promise.all(sources.map((i) => slots.run(async () => {
      if (failures.length || this.closed) return; // the pass is lost already: open nothing more
      const b = this.input.backends.get(unit.placement[i]!);
      if (!b) return void failures.push(new ShardReadError(i, 'unavailable', `backend ${unit.placement[i]} is not configured`));
      const reader = new ShardReader(i, b, shardKey(bucket, unit.unitId, i), shardLayout(unit, i), this.firstRow, this.lastRow, salt, this.input.latency);
      this.readers.add(reader);
      try {
        for (let j = this.firstRow; j <= this.lastRow; j++) {
          const block = await reader.readBlock(j);
          if (this.closed || failures.length || stop.has(reader)) return;
          const rb = this.rebuilder!;
          rb.block().set(block);
          rb.addBlock(i, (j - this.firstRow) * this.blockSize, block.length);
        }
      } catch (err) {
        if (!(err instanceof ShardReadError)) throw err;
        if (!this.closed && !stop.has(reader)) {
          failures.push(err);
          for (const r of this.readers) if (r !== reader) (stop.add(r), r.cancel()); // the others' folds are lost
        }
      } finally {
        reader.cancel();
        this.readers.delete(reader);
      }
    })));
    return failures;
  }

  /** A copy of bytes [lo, hi) of row j of rebuilt data shard `shard`. */
  row(shard: number, j: number, lo: number, hi: number): Uint8Array {
    const at = (j - this.firstRow) * this.blockSize;
    return this.rebuilder!.target(shard).slice(at + lo, at + hi);
  }

  free(): void {
    this.closed = true;
    for (const r of this.readers) r.cancel();
    this.readers.clear();
    this.rebuilder?.free();
    this.coder?.free();
    this.rebuilder = null;
    this.coder = null;
    this.giveBack?.();
    this.giveBack = null;
  }
}
