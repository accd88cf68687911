/**
 * `GET /_shardgate/metrics`: the status and the all-time counters in the Prometheus text
 * exposition format 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/), named
 * after Prometheus' conventions: a `shardgate_` prefix, base units in the name (`_seconds`,
 * `_bytes`, `_ratio`), `_total` on counters, labels for dimensions (backend, op, bucket). Counters
 * run from the shared record's start (`shardgate_counters_start_time_seconds`), so `rate()`
 * works across isolates and restarts of the Worker.
 */
import type { DestinationEvents } from '../catalog/types.ts';
import { BACKEND_OPS, LATENCY_BUCKETS_MS, type OpsCounters } from './types.ts';
import type { StatusDoc } from './status.ts';
import { redundancyRows } from '../catalog/redundancy.ts';

type Labels = Record<string, string>;

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

class Exposition {
  private readonly lines: string[] = [];
  private readonly declared = new Set<string>();

  family(name: string, type: 'counter' | 'gauge' | 'histogram', help: string): this {
    if (this.declared.has(name)) throw new Error(`metric family ${name} declared twice`);
    this.declared.add(name);
    this.lines.push(`# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`, `# TYPE ${name} ${type}`);
    return this;
  }

  sample(name: string, labels: Labels, value: number): this {
    const l = Object.entries(labels)
      .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
      .join(',');
    this.lines.push(`${name}${l ? `{${l}}` : ''} ${formatValue(value)}`);
    return this;
  }

  text(): string {
    return this.lines.join('\n') + '\n';
  }
}

const seconds = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : ms / 1000);

export function renderMetrics(doc: StatusDoc, totals: OpsCounters): string {
  const x = new Exposition();
  x.family('shardgate_info', 'gauge', 'Constant 1, labelled with the coder kernel in use.').sample('shardgate_info', { kernel: doc.coder.kernel }, 1);
  x.family('shardgate_build_info', 'gauge', 'Constant 1, labelled with the version of the gateway answering (package.json at build).').sample(
    'shardgate_build_info',
    { version: doc.version },
    1,
  );
  x.family(
    'shardgate_isolate_start_time_seconds',
    'gauge',
    'When the isolate that answered started serving (each isolate has its own; time() minus this is its uptime).',
  ).sample('shardgate_isolate_start_time_seconds', {}, doc.isolate.startedAt / 1000);
  x.family('shardgate_counters_start_time_seconds', 'gauge', 'When the shared record began counting (the counters below count from then).').sample(
    'shardgate_counters_start_time_seconds',
    {},
    doc.since / 1000,
  );
  x.family(
    'shardgate_health_status',
    'gauge',
    'Overall health, the worst check: 0 ok, 1 warning (a backend down or degraded, or degraded objects), 2 critical (writes impossible, or more backends down than a policy tolerates).',
  ).sample('shardgate_health_status', {}, { ok: 0, warning: 1, critical: 2 }[doc.health]);
  x.family(
    'shardgate_health_check',
    'gauge',
    'Each named health check: 0 ok, 1 warning, 2 critical (writes:POLICY critical: fewer backends reachable than its write quorum).',
  );
  for (const c of doc.checks) x.sample('shardgate_health_check', { check: c.name }, { ok: 0, warning: 1, critical: 2 }[c.state]);

  // The answering isolate's coding budget (each isolate has its own): held, holders, waiters.
  const budget = doc.isolate.codingBudget;
  x.family('shardgate_coding_budget_capacity_bytes', 'gauge', "Coding memory this isolate's coded requests may hold at once (codingBudget.bytes).").sample(
    'shardgate_coding_budget_capacity_bytes',
    {},
    budget.capacityBytes,
  );
  x.family('shardgate_coding_budget_held_bytes', 'gauge', 'Coding memory held by requests of this isolate now; 0 when idle.').sample(
    'shardgate_coding_budget_held_bytes',
    {},
    budget.heldBytes,
  );
  x.family('shardgate_coding_budget_holders', 'gauge', 'Requests of this isolate holding coding memory now.').sample(
    'shardgate_coding_budget_holders',
    {},
    budget.holders,
  );
  x.family('shardgate_coding_budget_waiters', 'gauge', 'Requests of this isolate waiting for coding memory now.').sample(
    'shardgate_coding_budget_waiters',
    {},
    budget.waiters,
  );
  x.family('shardgate_coding_budget_waiting_bytes', 'gauge', 'Coding memory the waiting requests of this isolate ask for.').sample(
    'shardgate_coding_budget_waiting_bytes',
    {},
    budget.waitingBytes,
  );
  x.family('shardgate_coding_budget_oldest_hold_seconds', 'gauge', 'Age of the oldest coding memory lease of this isolate; 0 when none is held.').sample(
    'shardgate_coding_budget_oldest_hold_seconds',
    {},
    (budget.oldestHeldMs ?? 0) / 1000,
  );
  x.family(
    'shardgate_coding_budget_reclaimed_total',
    'counter',
    'Leases this isolate reclaimed from requests that ended without giving them back (each one a bug, logged as an error).',
  ).sample('shardgate_coding_budget_reclaimed_total', {}, budget.reclaimed);

  // Backends: reachability, traffic, latency, what they hold.
  x.family('shardgate_backend_up', 'gauge', '1 when the backend answered its latest call or probe, 0 when it could not be reached; absent before any call.');
  for (const b of doc.backends) if (b.reachable !== null) x.sample('shardgate_backend_up', { backend: b.id, domain: b.domain }, b.reachable ? 1 : 0);
  x.family(
    'shardgate_backend_maintenance',
    'gauge',
    '1 when the operator put the backend in maintenance (config "maintenance": known down, never called, no warning of its own), else 0.',
  );
  for (const b of doc.backends) x.sample('shardgate_backend_maintenance', { backend: b.id }, b.maintenance ? 1 : 0);
  x.family('shardgate_backend_last_success_timestamp_seconds', 'gauge', 'When the backend last answered a call.');
  for (const b of doc.backends) if (b.lastOkAt !== null) x.sample('shardgate_backend_last_success_timestamp_seconds', { backend: b.id }, seconds(b.lastOkAt)!);
  x.family('shardgate_backend_last_error_timestamp_seconds', 'gauge', 'When a call to the backend last failed.');
  for (const b of doc.backends)
    if (b.lastErrorAt !== null) x.sample('shardgate_backend_last_error_timestamp_seconds', { backend: b.id }, seconds(b.lastErrorAt)!);
  x.family('shardgate_backend_probe_success', 'gauge', '1 when the latest probe (a HEAD of a missing key) was answered, else 0.');
  for (const b of doc.backends) if (b.probe) x.sample('shardgate_backend_probe_success', { backend: b.id }, b.probe.ok ? 1 : 0);
  x.family('shardgate_backend_probe_timestamp_seconds', 'gauge', 'When the backend was last probed.');
  for (const b of doc.backends) if (b.probe) x.sample('shardgate_backend_probe_timestamp_seconds', { backend: b.id }, seconds(b.probe.at)!);

  const ids = doc.backends.map((b) => b.id);
  x.family('shardgate_backend_requests_total', 'counter', 'Calls made to the backend, by operation (put, get, head, delete, list).');
  for (const id of ids)
    for (const op of BACKEND_OPS) x.sample('shardgate_backend_requests_total', { backend: id, op }, totals.backends[id]?.ops[op]?.requests ?? 0);
  x.family('shardgate_backend_request_errors_total', 'counter', 'Calls to the backend that failed (a NotFound answer is not a failure), by operation.');
  for (const id of ids)
    for (const op of BACKEND_OPS) x.sample('shardgate_backend_request_errors_total', { backend: id, op }, totals.backends[id]?.ops[op]?.errors ?? 0);
  x.family('shardgate_backend_written_bytes_total', 'counter', 'Bytes sent to the backend in shard writes.');
  for (const id of ids) x.sample('shardgate_backend_written_bytes_total', { backend: id }, totals.backends[id]?.ops.put?.bytes ?? 0);
  x.family('shardgate_backend_read_bytes_total', 'counter', 'Bytes asked of the backend in reads (egress on providers that charge for it).');
  for (const id of ids) x.sample('shardgate_backend_read_bytes_total', { backend: id }, totals.backends[id]?.ops.get?.bytes ?? 0);
  x.family('shardgate_backend_request_duration_seconds', 'histogram', 'Time until the backend answered a call (a read: until its body started), by operation.');
  for (const id of ids) {
    for (const op of BACKEND_OPS) {
      const o = totals.backends[id]?.ops[op];
      if (!o) continue;
      let cumulative = 0;
      LATENCY_BUCKETS_MS.forEach((edge, i) => {
        cumulative += o.hist[i] ?? 0;
        x.sample('shardgate_backend_request_duration_seconds_bucket', { backend: id, op, le: String(edge / 1000) }, cumulative);
      });
      x.sample('shardgate_backend_request_duration_seconds_bucket', { backend: id, op, le: '+Inf' }, o.requests);
      x.sample('shardgate_backend_request_duration_seconds_sum', { backend: id, op }, o.ms / 1000);
      x.sample('shardgate_backend_request_duration_seconds_count', { backend: id, op }, o.requests);
    }
  }
  x.family('shardgate_backend_stored_bytes', 'gauge', 'Bytes of shard files of committed objects on the backend (headers and block checksums included).');
  for (const b of doc.backends) x.sample('shardgate_backend_stored_bytes', { backend: b.id }, b.storedBytes);
  x.family('shardgate_backend_shards', 'gauge', 'Shard files of committed objects on the backend.');
  for (const b of doc.backends) x.sample('shardgate_backend_shards', { backend: b.id }, b.storedShards);
  // A draining or retired backend's shards (above) are what the mover has left to move.
  x.family('shardgate_backend_state', 'gauge', "1 for the backend's configured state (active, draining, retired).");
  for (const b of doc.backends) x.sample('shardgate_backend_state', { backend: b.id, state: b.fleetState }, 1);

  // Data health, gateway-wide.
  const d = doc.data;
  const gauge = (name: string, help: string, value: number | null) => {
    x.family(name, 'gauge', help);
    if (value !== null) x.sample(name, {}, value);
  };
  gauge('shardgate_buckets', 'Buckets.', d.buckets);
  gauge('shardgate_objects', 'Objects stored.', d.objects);
  gauge('shardgate_object_bytes', 'Bytes of object data stored (as clients sent them).', d.bytes);
  gauge('shardgate_inline_bytes', 'Of which stored inline in the catalog.', d.inlineBytes);
  gauge('shardgate_stored_bytes', 'Bytes of shard files on all backends.', d.storedBytes);
  // Per storage class (issue 44), from the buckets' ledgers: versions, their bytes, their shard files.
  const classes = Object.entries(d.classes ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  x.family('shardgate_class_objects', 'gauge', 'Object versions stored, per storage class.');
  for (const [c, u] of classes) x.sample('shardgate_class_objects', { class: c }, u.objects);
  x.family('shardgate_class_object_bytes', 'gauge', 'Bytes of object data stored, per storage class.');
  for (const [c, u] of classes) x.sample('shardgate_class_object_bytes', { class: c }, u.bytes);
  x.family('shardgate_class_stored_bytes', 'gauge', "Bytes of shard files on the backends, per storage class (its policy's overhead included).");
  for (const [c, u] of classes) x.sample('shardgate_class_stored_bytes', { class: c }, u.storedBytes);
  gauge('shardgate_storage_overhead_ratio', 'Stored bytes per byte of object data on the backends (three replicas: 3).', d.overhead);
  gauge('shardgate_degraded_objects', 'Objects with shards missing (missed by a write; repair restores them).', d.degradedObjects);
  gauge('shardgate_degraded_units', 'Units with shards missing: the repair backlog.', d.degradedUnits);
  gauge('shardgate_repair_stuck_units', 'Degraded units whose repair failed 8 times or more in a row (still retried): look at their lastError.', d.repairStuck);
  gauge('shardgate_missing_shards', 'Shards missing from committed objects.', d.missingShards);
  x.family(
    'shardgate_units_redundancy',
    'gauge',
    'Units by redundancy left, counting as missing the shards recorded missing and those on a backend unreachable now (down, in maintenance, retired): state="at_risk": exactly k shards; state="lost": fewer than k.',
  )
    .sample('shardgate_units_redundancy', { state: 'at_risk' }, d.redundancy.atRisk)
    .sample('shardgate_units_redundancy', { state: 'lost' }, d.redundancy.lost);
  const byMissing = x.family(
    'shardgate_units_missing_shards',
    'gauge',
    'Units by how many shards they miss, recorded missing or on a backend unreachable now (missing="1": one short of k+m); every other unit is whole (shardgate_scrub_units counts all).',
  );
  for (const [n, units] of Object.entries(d.redundancy.byMissing).sort(([a], [b]) => Number(a) - Number(b)))
    byMissing.sample('shardgate_units_missing_shards', { missing: n }, units);
  x.family(
    'shardgate_units_redundancy_bytes',
    'gauge',
    'Object bytes in the units of shardgate_units_redundancy: state="at_risk": exactly k shards; state="lost": fewer than k.',
  )
    .sample('shardgate_units_redundancy_bytes', { state: 'at_risk' }, d.redundancy.atRiskBytes)
    .sample('shardgate_units_redundancy_bytes', { state: 'lost' }, d.redundancy.lostBytes);
  // The ladder per policy (k+m), whole units too, every state listed (zeros included): sums to shardgate_scrub_units.
  const ladder = redundancyRows(d.redundancy.byPolicy);
  x.family(
    'shardgate_policy_units',
    'gauge',
    'Units of every stored object version by policy (k+m) and shards left (k+m: whole ... k: one more loss loses them; below_k: lost).',
  );
  for (const r of ladder) x.sample('shardgate_policy_units', { policy: r.policy, shards_left: r.shardsLeft }, r.units);
  x.family('shardgate_policy_unit_bytes', 'gauge', 'Object bytes in those units, by policy (k+m) and shards left.');
  for (const r of ladder) x.sample('shardgate_policy_unit_bytes', { policy: r.policy, shards_left: r.shardsLeft }, r.bytes);
  gauge('shardgate_oldest_degraded_timestamp_seconds', 'When the oldest write still degraded committed.', seconds(d.oldestDegradedAt));
  gauge('shardgate_multipart_uploads', 'Multipart uploads in progress.', d.uploads);
  x.family('shardgate_reservations', 'gauge', 'Unit ids reserved by writes in flight; state="expired": orphans the collector has yet to take.')
    .sample('shardgate_reservations', { state: 'held' }, d.reservations.held)
    .sample('shardgate_reservations', { state: 'expired' }, d.reservations.expired);
  x.family('shardgate_garbage_units', 'gauge', 'Units waiting for the collector; state="due": past their grace delay (its backlog).')
    .sample('shardgate_garbage_units', { state: 'queued' }, d.garbage.queued)
    .sample('shardgate_garbage_units', { state: 'due' }, d.garbage.due);
  gauge('shardgate_scrub_units', 'Units of every stored object version (what a scrub pass must check).', d.scrub.units);
  gauge('shardgate_scrub_checked_units', 'Units checked whole in the current scrub passes (between passes: the last complete ones).', d.scrub.checked);
  gauge('shardgate_scrub_coverage_ratio', 'Units checked of units stored, in the current scrub passes.', d.scrub.coverage);
  gauge(
    'shardgate_scrub_oldest_unchecked_timestamp_seconds',
    'Since when the unit that has gone longest without a check has waited (its last check, or its write).',
    seconds(d.scrub.oldestUnchecked?.since ?? null),
  );
  gauge(
    'shardgate_scrub_oldest_pass_completed_timestamp_seconds',
    "The oldest of every bucket's last complete scrub pass (absent while a bucket has none).",
    seconds(d.scrub.oldestPassCompletedAt),
  );

  const rs = d.restripe;
  gauge('shardgate_restripe_buckets', 'Buckets whose stored versions the re-stripe has yet to rewrite under their policy now.', rs?.buckets ?? 0);
  gauge(
    'shardgate_restripe_left_units',
    "Units of a geometry their bucket's policy no longer writes: what the re-stripe has left (three replicas counted until a pass found them small pieces).",
    rs?.leftUnits ?? 0,
  );
  gauge('shardgate_restripe_left_bytes', 'Object bytes in those units.', rs?.leftBytes ?? 0);
  // The repair and scrub rates of their current run (active-rate.ts), and the time left at them.
  const r = doc.upkeep.rates;
  gauge(
    'shardgate_repair_units_per_second',
    'Units repaired per second over the current run of repairs (from when it began, within the last 5 minutes).',
    r.repairUnitsPerMinute / 60,
  );
  gauge(
    'shardgate_repair_seconds_remaining',
    'Seconds the repair backlog takes at that rate (absent: work left and no progress in 5 minutes).',
    r.repairSecondsLeft,
  );
  gauge(
    'shardgate_scrub_units_per_second',
    'Units scrubbed per second over the current run of scrubbing (from when it began, within the last 5 minutes).',
    r.scrubUnitsPerMinute / 60,
  );
  gauge(
    'shardgate_scrub_seconds_remaining',
    'Seconds the current scrub passes take at that rate (absent: work left and no progress in 5 minutes).',
    r.scrubSecondsLeft,
  );
  gauge(
    'shardgate_restripe_bytes_per_second',
    "The re-striping buckets' rates summed (bytes rewritten between each one's first and last swap).",
    rs?.bytesPerSecond ?? null,
  );
  gauge(
    'shardgate_restripe_seconds_remaining',
    'The longest time remaining among the re-striping buckets at their rates (absent: some has no rate yet).',
    rs?.secondsRemaining ?? null,
  );

  // The adopted buckets' backfill (issue 41), when some bucket has a source.
  const ad = d.adopt;
  if (ad) {
    gauge('shardgate_adopt_buckets', 'Buckets with a source (an existing bucket shardgate adopts).', ad.buckets);
    gauge('shardgate_adopt_complete_buckets', 'Of those, buckets whose backfill ended a pass clean: every source object then listed is held.', ad.complete);
    gauge('shardgate_adopt_detached_buckets', 'Of those, buckets whose source is detached (never read again).', ad.detached);
    gauge('shardgate_adopt_objects', 'Objects the backfill has adopted from the sources (client reads adopt more: not counted here).', ad.adoptedObjects);
    gauge('shardgate_adopt_bytes', 'Bytes of those objects.', ad.adoptedBytes);
    gauge('shardgate_adopt_egress_bytes', 'Bytes the backfill has read from the sources (their egress).', ad.egressBytes);
    gauge(
      'shardgate_adopt_egress_cost_dollars',
      "That egress and the backfill's source requests at the sources' prices (absent: a source is unpriced).",
      ad.egressCost,
    );
    gauge(
      'shardgate_adopt_bytes_per_second',
      "The walking buckets' backfill rates summed (bytes adopted between each one's first and last adoption).",
      ad.bytesPerSecond,
    );
    gauge(
      'shardgate_adopt_seconds_remaining',
      'The longest time left among the walking buckets at their rates (absent: some has no rate or no known total yet).',
      ad.secondsRemaining,
    );
  }

  if (doc.buckets) {
    const perBucket: [string, 'gauge' | 'counter', string, (b: NonNullable<StatusDoc['buckets']>[number]) => number | null][] = [
      ['shardgate_bucket_objects', 'gauge', 'Objects in the bucket.', (b) => b.objects],
      ['shardgate_bucket_object_bytes', 'gauge', 'Bytes of object data in the bucket.', (b) => b.bytes],
      ['shardgate_bucket_stored_bytes', 'gauge', 'Bytes of shard files of the bucket on all backends.', (b) => b.storedBytes],
      ['shardgate_bucket_degraded_objects', 'gauge', 'Objects of the bucket with shards missing.', (b) => b.degradedObjects],
      ['shardgate_bucket_degraded_units', 'gauge', 'Units of the bucket with shards missing.', (b) => b.degradedUnits],
      ['shardgate_bucket_multipart_uploads', 'gauge', 'Multipart uploads in progress in the bucket.', (b) => b.uploads],
      ['shardgate_bucket_versions', 'gauge', 'Version rows of the bucket, delete markers included.', (b) => b.versions ?? null],
      ['shardgate_bucket_delete_markers', 'gauge', 'Delete markers in the bucket.', (b) => b.deleteMarkers ?? null],
      ['shardgate_bucket_multipart_bytes', 'gauge', 'Bytes of the parts of multipart uploads in progress in the bucket.', (b) => b.multipartBytes ?? null],
      ['shardgate_bucket_quota_bytes', 'gauge', "The bucket's quota in bytes (only buckets with a bytes quota).", (b) => b.quota?.bytes ?? null],
      ['shardgate_bucket_quota_objects', 'gauge', "The bucket's quota in objects (only buckets with an objects quota).", (b) => b.quota?.objects ?? null],
      [
        'shardgate_bucket_quota_used_bytes',
        'gauge',
        'What the bytes quota counts: every version and the parts in flight (only buckets with a quota).',
        (b) => b.quota?.usedBytes ?? null,
      ],
      [
        'shardgate_bucket_quota_used_objects',
        'gauge',
        'What the objects quota counts: versions holding data (only buckets with a quota).',
        (b) => b.quota?.usedObjects ?? null,
      ],
      [
        'shardgate_bucket_storage_cost_monthly_dollars',
        'gauge',
        "A month of the bucket's shard files at their size now, at the backends' storage prices (only priced backends).",
        (b) => b.monthlyStorageCost ?? null,
      ],
      ['shardgate_bucket_client_requests_total', 'counter', 'S3 requests from clients naming the bucket.', (b) => b.clientTraffic?.requests ?? null],
      ['shardgate_bucket_client_received_bytes_total', 'counter', 'Request body bytes clients sent to the bucket.', (b) => b.clientTraffic?.bytesIn ?? null],
      [
        'shardgate_bucket_egress_bytes_total',
        'counter',
        'Response body bytes sent to clients from the bucket (egress).',
        (b) => b.clientTraffic?.bytesOut ?? null,
      ],
      ['shardgate_bucket_scrub_units', 'gauge', "Units of the bucket's stored object versions.", (b) => b.scrub.units],
      [
        'shardgate_bucket_scrub_checked_units',
        'gauge',
        "Units of the bucket checked whole in the scrubber's current pass (between passes: the last).",
        (b) => b.scrub.checked,
      ],
      ['shardgate_bucket_scrub_coverage_ratio', 'gauge', 'Units checked of units stored in the bucket, current scrub pass.', (b) => b.scrubCoverage],
      [
        'shardgate_bucket_scrub_oldest_unchecked_timestamp_seconds',
        'gauge',
        "Since when the bucket's longest-unchecked unit has waited.",
        (b) => seconds(b.scrub.oldestUnchecked?.since ?? null),
      ],
      [
        'shardgate_bucket_scrub_last_pass_completed_timestamp_seconds',
        'gauge',
        'When the scrubber last completed a pass of the bucket.',
        (b) => seconds(b.scrub.lastPassCompletedAt),
      ],
      ['shardgate_bucket_scrub_passes_total', 'counter', 'Complete scrub passes of the bucket.', (b) => b.scrub.passes],
      [
        'shardgate_bucket_restripe_left_units',
        'gauge',
        'Units of the bucket the re-stripe has left to rewrite under its policy now (only buckets with a re-stripe).',
        (b) => b.restripeProgress?.left.units ?? null,
      ],
      ['shardgate_bucket_restripe_left_bytes', 'gauge', 'Object bytes in those units.', (b) => b.restripeProgress?.left.bytes ?? null],
      [
        'shardgate_bucket_restripe_bytes_per_second',
        'gauge',
        "The bucket's re-stripe rate: bytes rewritten between its first and last swap.",
        (b) => b.restripeProgress?.bytesPerSecond ?? null,
      ],
      [
        'shardgate_bucket_adopt_complete',
        'gauge',
        "1 when the bucket's backfill from its source ended a pass clean, else 0 (only buckets with a source).",
        (b) => (b.adoptProgress ? (b.adoptProgress.complete ? 1 : 0) : null),
      ],
      [
        'shardgate_bucket_adopt_objects',
        'gauge',
        'Objects the backfill adopted into the bucket from its source.',
        (b) => b.adoptProgress?.totals.adopted ?? null,
      ],
      ['shardgate_bucket_adopt_bytes', 'gauge', 'Bytes of those objects.', (b) => b.adoptProgress?.totals.bytes ?? null],
      ['shardgate_bucket_adopt_egress_bytes', 'gauge', "Bytes the bucket's backfill read from its source.", (b) => b.adoptProgress?.egress.bytes ?? null],
      [
        'shardgate_bucket_adopt_egress_cost_dollars',
        'gauge',
        "That egress and the backfill's source requests at the source's prices.",
        (b) => b.adoptProgress?.egress.cost ?? null,
      ],
      [
        'shardgate_bucket_adopt_pass_objects',
        'gauge',
        "Source objects the bucket's backfill pass in progress has walked.",
        (b) => b.adoptProgress?.pass.listed ?? null,
      ],
      [
        'shardgate_bucket_adopt_seconds_remaining',
        'gauge',
        "Time left in the bucket's backfill pass at its rate.",
        (b) => b.adoptProgress?.secondsRemaining ?? null,
      ],
      [
        'shardgate_bucket_adopt_write_through_pending',
        'gauge',
        'Client writes whose copy in the written-through source is not made yet (retried by the cron; at most 1000 counted; only buckets written through).',
        (b) => b.adoptProgress?.writeThrough?.pending ?? null,
      ],
      [
        'shardgate_bucket_adopt_write_through_oldest_timestamp_seconds',
        'gauge',
        'When the oldest of those writes was made (time() minus it is the lag); absent when none waits.',
        (b) => (b.adoptProgress?.writeThrough?.oldestAt != null ? b.adoptProgress.writeThrough.oldestAt / 1000 : null),
      ],
      [
        'shardgate_bucket_restripe_seconds_remaining',
        'gauge',
        "Time until the bucket's units left are rewritten at that rate.",
        (b) => b.restripeProgress?.secondsRemaining ?? null,
      ],
    ];
    for (const [name, type, help, f] of perBucket) {
      x.family(name, type, help);
      for (const b of doc.buckets) {
        const v = f(b);
        if (v !== null) x.sample(name, { bucket: b.bucket }, v);
      }
    }
    // Event notifications per bucket and destination (catalog/sql-outbox.ts, docs/NOTIFICATIONS.md).
    const eventFamilies: [string, 'gauge' | 'counter', string, (d: DestinationEvents) => number | null][] = [
      ['shardgate_bucket_events_backlog', 'gauge', 'Events of the bucket waiting for delivery to the destination.', (d) => d.backlog],
      ['shardgate_bucket_events_queued_total', 'counter', 'Events of the bucket queued for the destination.', (d) => d.queued],
      ['shardgate_bucket_events_delivered_total', 'counter', 'Events the destination acknowledged.', (d) => d.delivered],
      ['shardgate_bucket_events_retried_total', 'counter', 'Failed delivery attempts, retried after a backoff.', (d) => d.retried],
      [
        'shardgate_bucket_events_dead_lettered_total',
        'counter',
        'Events given up after notifications.maxAttempts (kept as dead letters).',
        (d) => d.deadLettered,
      ],
      [
        'shardgate_bucket_events_dropped_total',
        'counter',
        'Events dropped undelivered because the outbox was full (notifications.whenFull drop-oldest).',
        (d) => d.dropped,
      ],
      [
        'shardgate_bucket_events_oldest_undelivered_seconds',
        'gauge',
        'Age of the oldest event waiting for the destination (absent: none waits).',
        (d) => (d.oldestUndeliveredMs === null ? null : d.oldestUndeliveredMs / 1000),
      ],
    ];
    for (const [name, type, help, f] of eventFamilies) {
      x.family(name, type, help);
      for (const b of doc.buckets)
        for (const d of b.events ?? []) {
          const v = f(d);
          if (v !== null) x.sample(name, { bucket: b.bucket, destination: d.destination }, v);
        }
    }
    // A family's samples must follow its header: one pass per family.
    const ladders = doc.buckets.map((b) => ({ bucket: b.bucket, rows: redundancyRows(b.redundancy?.byPolicy ?? {}) }));
    x.family('shardgate_bucket_policy_units', 'gauge', 'Units of the bucket by policy (k+m) and shards left (below_k: lost).');
    for (const l of ladders)
      for (const r of l.rows) x.sample('shardgate_bucket_policy_units', { bucket: l.bucket, policy: r.policy, shards_left: r.shardsLeft }, r.units);
    x.family('shardgate_bucket_policy_unit_bytes', 'gauge', 'Object bytes in those units of the bucket, by policy and shards left.');
    for (const l of ladders)
      for (const r of l.rows) x.sample('shardgate_bucket_policy_unit_bytes', { bucket: l.bucket, policy: r.policy, shards_left: r.shardsLeft }, r.bytes);
  }

  // Upkeep and the front door.
  const ev = totals.events;
  const counter = (name: string, help: string, value: number) => x.family(name, 'counter', help).sample(name, {}, value);
  counter('shardgate_repairs_queued_total', 'Repairs asked for (by reads, writes that missed shards, the scrubber).', ev.repairs_queued ?? 0);
  x.family('shardgate_repairs_total', 'counter', 'Repair attempts, by result (failed ones are retried).')
    .sample('shardgate_repairs_total', { result: 'done' }, ev.repairs_done ?? 0)
    .sample('shardgate_repairs_total', { result: 'failed' }, ev.repairs_failed ?? 0);
  counter('shardgate_repaired_shards_total', 'Shards rewritten or confirmed by repairs.', ev.repaired_shards ?? 0);
  counter('shardgate_scrub_runs_total', 'Scrubber runs.', ev.scrub_runs ?? 0);
  counter('shardgate_scrub_checked_units_total', 'Units checked whole (every shard) by the scrubber.', ev.scrub_units ?? 0);
  counter('shardgate_scrub_checked_shards_total', 'Shards checked by the scrubber.', ev.scrub_shards ?? 0);
  counter('shardgate_scrub_damaged_shards_total', 'Shards the scrubber found damaged.', ev.scrub_damaged ?? 0);
  counter('shardgate_collector_runs_total', 'Garbage collector runs.', ev.collector_runs ?? 0);
  counter('shardgate_collected_units_total', 'Units whose shards the collector deleted.', ev.collected_units ?? 0);
  counter('shardgate_drain_runs_total', 'Mover runs (draining or retired backends configured).', ev.drain_runs ?? 0);
  counter('shardgate_moved_shards_total', 'Shards the mover committed on another backend (copied or rebuilt).', ev.moved_shards ?? 0);
  counter('shardgate_moved_bytes_total', 'Shard-file bytes the mover committed on another backend.', ev.moved_bytes ?? 0);
  counter('shardgate_move_waits_total', 'Moves put off for later (target down, too few shards to rebuild).', ev.move_waits ?? 0);
  counter('shardgate_restripe_runs_total', 'Re-stripe runs (upkeep/restripe.ts; most find nothing to rewrite).', ev.restripe_runs ?? 0);
  counter('shardgate_restriped_versions_total', "Object versions rewritten under their bucket's policy now and swapped in.", ev.restriped_versions ?? 0);
  counter('shardgate_restriped_bytes_total', 'Object bytes of the versions rewritten by the re-stripe.', ev.restriped_bytes ?? 0);
  counter(
    'shardgate_restripe_conflicts_total',
    "Re-stripe swaps lost to a client's overwrite, delete or change of the version (the rewrite is deleted; tried again later).",
    ev.restripe_conflicts ?? 0,
  );
  counter(
    'shardgate_restripe_failures_total',
    'Re-stripe rewrites that failed (a backend refused, a check failed; tried again by a later pass).',
    ev.restripe_failures ?? 0,
  );
  counter('shardgate_journal_runs_total', 'Catalog journal runs (every minute).', ev.journal_runs ?? 0);
  counter('shardgate_journal_segments_total', 'Catalog journal segments stored on the backends.', ev.journal_segments ?? 0);
  counter('shardgate_journal_bytes_total', 'Bytes of catalog journal segments stored (before coding).', ev.journal_bytes ?? 0);
  counter(
    'shardgate_journal_failures_total',
    'Catalog instances whose journal segment could not be stored in a run (tried again next run).',
    ev.journal_failures ?? 0,
  );
  counter('shardgate_lifecycle_runs_total', 'Lifecycle job runs.', ev.lifecycle_runs ?? 0);
  counter('shardgate_lifecycle_examined_versions_total', 'Object versions and delete markers the lifecycle job looked at.', ev.lifecycle_examined ?? 0);
  x.family('shardgate_lifecycle_actions_total', 'counter', 'What lifecycle rules did, by action (failed: refused or failed, retried by a later pass).')
    .sample('shardgate_lifecycle_actions_total', { action: 'expire_current' }, ev.lifecycle_expired ?? 0)
    .sample('shardgate_lifecycle_actions_total', { action: 'delete_noncurrent' }, ev.lifecycle_noncurrent_deleted ?? 0)
    .sample('shardgate_lifecycle_actions_total', { action: 'remove_delete_marker' }, ev.lifecycle_markers_removed ?? 0)
    .sample('shardgate_lifecycle_actions_total', { action: 'abort_upload' }, ev.lifecycle_uploads_aborted ?? 0)
    .sample('shardgate_lifecycle_actions_total', { action: 'transition' }, ev.lifecycle_transitioned ?? 0)
    .sample('shardgate_lifecycle_actions_total', { action: 'transition_blocked' }, ev.lifecycle_transitions_blocked ?? 0)
    .sample('shardgate_lifecycle_actions_total', { action: 'failed' }, ev.lifecycle_failed ?? 0);
  counter(
    'shardgate_lifecycle_transitioned_bytes_total',
    "Object bytes of the versions lifecycle transitions rewrote under their new storage class's policy.",
    ev.lifecycle_transitioned_bytes ?? 0,
  );
  x.family('shardgate_s3_requests_total', 'counter', 'S3 requests answered, by operation and HTTP status.');
  for (const [k, n] of Object.entries(totals.s3).sort()) {
    const at = k.lastIndexOf(' ');
    x.sample('shardgate_s3_requests_total', { operation: k.slice(0, at), code: k.slice(at + 1) }, n);
  }
  x.family(
    'shardgate_s3_request_duration_seconds',
    'histogram',
    'Time until the gateway answered an S3 request with its response headers (a streamed body goes on after), by operation.',
  );
  for (const [op, l] of Object.entries(totals.s3Latency ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    let cumulative = 0;
    LATENCY_BUCKETS_MS.forEach((edge, i) => {
      cumulative += l.hist[i] ?? 0;
      x.sample('shardgate_s3_request_duration_seconds_bucket', { operation: op, le: String(edge / 1000) }, cumulative);
    });
    x.sample('shardgate_s3_request_duration_seconds_bucket', { operation: op, le: '+Inf' }, l.count);
    x.sample('shardgate_s3_request_duration_seconds_sum', { operation: op }, l.ms / 1000);
    x.sample('shardgate_s3_request_duration_seconds_count', { operation: op }, l.count);
  }
  counter('shardgate_s3_received_bytes_total', 'Request body bytes of S3 requests (declared lengths).', totals.s3BytesIn);
  counter('shardgate_s3_sent_bytes_total', 'Response body bytes of S3 requests (declared lengths).', totals.s3BytesOut);
  return x.text();
}
