/**
 * The bill of a bucket's lifecycle transitions before they run (issue 44, `shardgate lifecycle
 * --estimate`): which versions the bucket's rules would move now and by each later horizon, their
 * bytes, what the moves ask of each backend and what that costs at the configured prices, and how
 * the bucket's monthly storage bill changes once they have moved. The walk is the lifecycle job's
 * (listKeyVersions, model/lifecycle.ts dueActions at the horizon's time, so an expiration due
 * first wins as it does in the job); each version due is priced as the re-striper's rewrite will
 * run it (restripe-version.ts planRewrite: the same plan, the same placement):
 * - the read: one ranged GET per data shard of each old unit (one replica of a replicated one),
 *   its rows' blocks and their checksums (unit-reader.ts opens each data shard once, from its first
 *   row with data to the unit's last row); an inline version reads nothing from the backends;
 * - the write: one PUT per shard of each new unit, its whole shard file (header, rows, footer;
 *   the header taken as long as the old unit's, which carries the same key and metadata);
 * - the old shards' DELETEs, which the collector makes after the grace delay.
 * Versions that conform already (two classes on one policy) change class for no backend request;
 * SSE-C versions and COMPLIANCE-retained ones on a retaining backend are counted `blocked` and not
 * priced, as the job will not move them. Assumes every move succeeds at the first try (a move
 * retried, or lost to a client's write, costs again); a wide (column) unit's read may open more
 * than one GET per shard; a tag record or a COMPLIANCE mirror adds a few requests not counted.
 * Catalog calls: one listKeyVersions page and one listVersionRecords page per 500 versions (the
 * manifests, walked in the same key order), nothing per version; at most 200,000 versions walked
 * (`complete: false` past them). Memory: one page of each and one key's versions.
 */
import type { LifecycleCatalog, RestripeCatalog } from '../catalog/ports.ts';
import { BLOCK_CHECKSUM_BYTES, shardLayout, UnitLayout } from '../format/layout.ts';
import type { CodedUnit, ObjectManifest } from '../format/manifest.ts';
import { sealedSize } from '../format/seal.ts';
import { BYTES_PER_GB, knownStorageClass, policyForClass, type BackendPrices, type EngineSettings, type UnitStore } from '../engine/index.ts';
import { dueActions, type LifecycleRule } from '../model/lifecycle.ts';
import { withClass } from '../model/storage-class.ts';
import { emptyUsage, money, type Money, type Usage } from './cost.ts';
import { planRewrite } from './restripe-version.ts';

/** What one horizon's transitions move and ask. */
export interface HorizonEstimate {
  /** Lifecycle days after now (0: the transitions due now). */
  afterDays: number;
  /** The time judged (ISO). */
  at: string;
  /** Per rule and target class: the versions it moves and their object bytes. */
  rules: { ruleId: string; storageClass: string; versions: number; bytes: number }[];
  /** Versions moved (rewritten or only re-classed) and their object bytes. */
  versions: number;
  bytes: number;
  /** Of which only their class changes (the class's policy stores them as they are). */
  reclassed: number;
  /** Due but not movable (SSE-C, COMPLIANCE retention on a retaining backend, a class not configured). */
  blocked: number;
  /** Per backend touched: requests and bytes of the moves (storedBytes: the change it holds after), and their price. */
  byBackend: Record<string, { usage: Usage; storedDelta: number; cost: Money | null }>;
  /** Over every backend; `cost` over the priced ones (the moves' requests and egress, paid once). */
  total: { gets: number; puts: number; deletes: number; egressBytes: number; ingressBytes: number; cost: number };
  /** Change of the monthly storage bill once moved (negative: cheaper), over the priced backends. */
  storagePerMonthChange: number;
}

export interface TransitionEstimate {
  bucket: string;
  /** Whose rules were priced: the bucket's stored ones, or rules given to price before they are set. */
  rules: 'stored' | 'given';
  generatedAt: string;
  horizons: HorizonEstimate[];
  /** Versions walked; false when the walk stopped at its limit (the figures cover only those). */
  versionsWalked: number;
  complete: boolean;
  /** Backends without prices: their traffic is counted, not priced. */
  unpriced: string[];
}

export interface TransitionEstimateInput {
  catalog: Pick<LifecycleCatalog, 'listKeyVersions' | 'getLifecycleRun'> & Pick<RestripeCatalog, 'listVersionRecords'>;
  units: UnitStore;
  settings: EngineSettings;
  bucket: string;
  prices: Record<string, BackendPrices | null>;
  /** Lifecycle days after now to judge (0 is always judged). */
  afterDays: number[];
  dayMs: number;
  now: number;
  /** Rules to price instead of the bucket's own, before they are set (absent: the bucket's). Their classes must be configured (InvalidStorageClass). */
  rules?: LifecycleRule[];
  maxVersions?: number;
  /** Versions per catalog page (default 500; tests make it small to cross page boundaries). */
  pageSize?: number;
}

/** What moving one version asks of the backends. */
interface MoveCalls {
  kind: 'moved' | 'reclassed' | 'blocked';
  usage: Map<string, Usage>;
  stored: Map<string, number>;
}

const PAGE = 500;
/**
 * Versions one estimate walks at most: two catalog pages per 500, so about 800 calls, within an
 * invocation's subrequests. Past it the answer says `complete: false` and covers those walked.
 */
const MAX_VERSIONS = 200_000;

export async function estimateTransitions(input: TransitionEstimateInput): Promise<TransitionEstimate> {
  const { catalog, bucket } = input;
  // The bucket must exist either way (NoSuchBucket); rules given are held to what a PUT of them would be.
  const stored = (await catalog.getLifecycleRun(bucket)).rules ?? [];
  for (const r of input.rules ?? [])
    for (const t of [...(r.transitions ?? []), ...(r.noncurrentVersionTransitions ?? [])]) policyForClass(input.settings, bucket, t.storageClass);
  const rules = input.rules ?? stored;
  const horizons = [...new Set([0, ...input.afterDays])].sort((a, b) => a - b).map((afterDays) => emptyHorizon(afterDays, input.now + afterDays * input.dayMs));
  const perRule = horizons.map(() => new Map<string, { ruleId: string; storageClass: string; versions: number; bytes: number }>());
  const out: TransitionEstimate = {
    bucket,
    rules: input.rules ? 'given' : 'stored',
    generatedAt: new Date(input.now).toISOString(),
    horizons,
    versionsWalked: 0,
    complete: true,
    unpriced: [],
  };
  const max = input.maxVersions ?? MAX_VERSIONS;
  const pageSize = input.pageSize ?? PAGE;
  const records = recordStream(catalog, bucket, pageSize);
  let after: string | null = null;
  walk: for (;;) {
    const page = await catalog.listKeyVersions(bucket, after, pageSize);
    for (const { key, versions } of page.keys) {
      if (out.versionsWalked + versions.length > max && out.versionsWalked > 0) {
        out.complete = false;
        break walk;
      }
      out.versionsWalked += versions.length;
      const manifests = await records.of(key);
      const due: { n: number; m: ObjectManifest; ruleId: string; storageClass: string }[] = [];
      // A version due at several horizons is priced once; per key, so memory stays one key's.
      const priced = new Map<string, MoveCalls>();
      horizons.forEach((h, n) => {
        for (const action of dueActions(rules, key, versions, Date.parse(h.at), input.dayMs)) {
          if (action.kind !== 'transition') continue;
          const m = manifestFor(manifests, versions, action.versionId);
          if (m) due.push({ n, m, ruleId: action.ruleId, storageClass: action.storageClass }); // absent: deleted between the two reads
        }
      });
      for (const d of due) {
        const id = `${d.m.versionId}\n${d.storageClass}`;
        let calls = priced.get(id);
        if (!calls) priced.set(id, (calls = await callsOf(input, d.m, d.storageClass)));
        add(horizons[d.n]!, perRule[d.n]!, d.ruleId, d.storageClass, d.m.size, calls);
      }
      after = key;
    }
    if (page.atEnd || !page.keys.length) break;
  }
  horizons.forEach((h, n) => {
    h.rules = [...perRule[n]!.values()];
    for (const [id, line] of Object.entries(h.byBackend)) {
      const p = input.prices[id] ?? null;
      line.cost = money(line.usage, p);
      if (!p) {
        if (!out.unpriced.includes(id)) out.unpriced.push(id);
        continue;
      }
      h.total.cost += line.cost!.total;
      h.storagePerMonthChange += (line.storedDelta / BYTES_PER_GB) * p.storagePerGBMonth;
    }
  });
  return out;
}

function emptyHorizon(afterDays: number, at: number): HorizonEstimate {
  return {
    afterDays,
    at: new Date(at).toISOString(),
    rules: [],
    versions: 0,
    bytes: 0,
    reclassed: 0,
    blocked: 0,
    byBackend: {},
    total: { gets: 0, puts: 0, deletes: 0, egressBytes: 0, ingressBytes: 0, cost: 0 },
    storagePerMonthChange: 0,
  };
}

function add(
  h: HorizonEstimate,
  perRule: Map<string, { ruleId: string; storageClass: string; versions: number; bytes: number }>,
  ruleId: string,
  storageClass: string,
  size: number,
  calls: MoveCalls,
): void {
  if (calls.kind === 'blocked') {
    h.blocked++;
    return;
  }
  h.versions++;
  h.bytes += size;
  if (calls.kind === 'reclassed') h.reclassed++;
  const r = perRule.get(`${ruleId}\n${storageClass}`) ?? { ruleId, storageClass, versions: 0, bytes: 0 };
  r.versions++;
  r.bytes += size;
  perRule.set(`${ruleId}\n${storageClass}`, r);
  const line = (id: string) => (h.byBackend[id] ??= { usage: emptyUsage(), storedDelta: 0, cost: null });
  for (const [id, u] of calls.usage) {
    const l = line(id);
    l.usage.getRequests += u.getRequests;
    l.usage.putRequests += u.putRequests;
    l.usage.deleteRequests += u.deleteRequests;
    l.usage.bytesIn += u.bytesIn;
    l.usage.bytesOut += u.bytesOut;
    l.usage.shards += u.shards;
    h.total.gets += u.getRequests;
    h.total.puts += u.putRequests;
    h.total.deletes += u.deleteRequests;
    h.total.egressBytes += u.bytesOut;
    h.total.ingressBytes += u.bytesIn;
  }
  for (const [id, delta] of calls.stored) line(id).storedDelta += delta;
}

/** The manifest of the version S3 shows as `versionId` among its key's records ('null': the one no other shown id names). */
function manifestFor(manifests: ObjectManifest[], versions: { versionId: string }[], versionId: string): ObjectManifest | undefined {
  if (versionId !== 'null') return manifests.find((m) => m.versionId === versionId);
  const named = new Set(versions.map((v) => v.versionId));
  return manifests.find((m) => !named.has(m.versionId));
}

/**
 * The bucket's stored versions in key order (listVersionRecords), read a page at a time as the
 * key walk reaches them: `of(key)` answers that key's manifests; keys must be asked in order.
 */
function recordStream(catalog: Pick<RestripeCatalog, 'listVersionRecords'>, bucket: string, pageSize: number) {
  let buffer: { key: string; json: string }[] = [];
  let cursor: { key: string; versionId: string } | null = null;
  let atEnd = false;
  return {
    async of(key: string): Promise<ObjectManifest[]> {
      const found: ObjectManifest[] = [];
      for (;;) {
        while (buffer.length && buffer[0]!.key < key) buffer.shift();
        while (buffer.length && buffer[0]!.key === key) found.push(JSON.parse(buffer.shift()!.json) as ObjectManifest);
        if (buffer.length || atEnd) return found;
        const page = await catalog.listVersionRecords(bucket, cursor, pageSize);
        if (page.length < pageSize) atEnd = true;
        if (page.length) cursor = page[page.length - 1]!.at;
        buffer = page.map((r) => ({ key: r.at.key, json: r.json }));
      }
    },
  };
}

/** What moving `m` to `storageClass` asks of each backend, as the re-striper will make the move. */
async function callsOf(input: TransitionEstimateInput, stored: ObjectManifest, storageClass: string): Promise<MoveCalls> {
  const usage = new Map<string, Usage>();
  const storedDelta = new Map<string, number>();
  const at = (id: string) => {
    let u = usage.get(id);
    if (!u) usage.set(id, (u = emptyUsage()));
    return u;
  };
  if (!knownStorageClass(input.settings, storageClass)) return { kind: 'blocked', usage, stored: storedDelta };
  const m: ObjectManifest = { ...stored, metadata: withClass(stored.metadata, storageClass === 'STANDARD' ? null : storageClass) };
  const policy = policyForClass(input.settings, input.bucket, storageClass);
  const planning = await planRewrite(input.bucket, m, { policy, units: input.units, now: () => input.now });
  if (planning === null) return { kind: 'reclassed', usage, stored: storedDelta };
  if ('blocked' in planning) return { kind: 'blocked', usage, stored: storedDelta };
  const oldUnits = m.storage.kind === 'coded' ? m.storage.units : [];
  const headerGuess = oldUnits[0]?.headerLens[0] ?? DEFAULT_HEADER_BYTES;
  for (const { piece, plan, policy: piecePolicy } of planning.planned) {
    // The read: each old unit through the unit reader.
    if (piece.storage.kind === 'coded') for (const u of piece.storage.units) readCalls(u, at);
    if (plan.mode === 'inline') continue;
    // The write: every shard of every new unit.
    const placement = input.units.placementOf(input.bucket, m.key, plan.k, plan.m, piecePolicy);
    const sizes = unitSizes(piece.size, plan);
    for (const size of sizes) {
      const storedBytes = plan.sealed ? sealedSize(size, plan.sealRecord!) : size;
      const layout = new UnitLayout(storedBytes, plan.k, plan.m, piecePolicy.blockSize, headerGuess, plan.mode === 'column' ? 'column' : 'striped');
      const fileLen = layout.shardFileLen();
      placement.forEach((b, i) => {
        if (i >= plan.k + plan.m) return;
        at(b.id).putRequests += 1;
        at(b.id).bytesIn += fileLen;
        at(b.id).shards += 1;
        storedDelta.set(b.id, (storedDelta.get(b.id) ?? 0) + fileLen);
      });
    }
  }
  // The old shards, deleted by the collector after the grace delay.
  for (const u of oldUnits) {
    u.placement.forEach((id, i) => {
      if (u.missing.includes(i)) return;
      at(id).deleteRequests += 1;
      storedDelta.set(id, (storedDelta.get(id) ?? 0) - shardLayout(u, i).shardFileLen());
    });
  }
  return { kind: 'moved', usage, stored: storedDelta };
}

/** A shard header when no old one says how long (an inline version coded): about this, sealed. */
const DEFAULT_HEADER_BYTES = 400;

/** Object bytes of each new unit of a piece: one striped unit, or column units of unitPlainBytes and the rest. */
function unitSizes(size: number, plan: { mode: string; unitIds: string[]; unitPlainBytes?: number }): number[] {
  if (plan.mode !== 'column' || plan.unitIds.length <= 1) return plan.unitIds.map(() => size);
  const each = plan.unitPlainBytes!;
  return plan.unitIds.map((_, i) => (i < plan.unitIds.length - 1 ? each : size - each * (plan.unitIds.length - 1)));
}

/** The GETs a whole read of `u` makes: one per data shard with data (one replica of a replicated unit), its rows and their checksums. */
function readCalls(u: CodedUnit, at: (id: string) => Usage): void {
  const shards = u.codec === 'replica' ? [0] : Array.from({ length: u.k }, (_, i) => i);
  for (const i of shards) {
    const layout = shardLayout(u, i);
    if (layout.stripes === 0) continue;
    let first = -1;
    for (let s = 0; s < layout.stripes; s++) {
      if (u.codec === 'replica' || layout.dataSpan(s, i).length > 0) {
        first = s;
        break;
      }
    }
    if (first < 0) continue;
    const last = layout.stripes - 1;
    const bytes = layout.blockOffset(last) + BLOCK_CHECKSUM_BYTES + layout.blockLen(last) - layout.blockOffset(first);
    const id = u.placement[i]!;
    at(id).getRequests += 1;
    at(id).bytesOut += bytes;
  }
}
