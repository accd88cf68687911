/**
 * The strict Prometheus text parser the ops tests read /_shardgate/metrics with on every machine
 * (test/support/prometheus-text.ts): what it reads, what it refuses (each a mistake the lax
 * parsers let through), and, where the official Python client is installed (always in CI), that
 * both read the same samples from the gateway's own metrics and that a difference is reported.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/memory.ts';
import { MeteredBackend } from '../../backends/metered.ts';
import { MemoryOpsRecord } from '../../worker/ops/book.ts';
import { OpsFlusher } from '../../worker/ops/flusher.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import { renderMetrics } from '../../worker/ops/prometheus.ts';
import { OpsService } from '../../worker/ops/service.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { needs, toolPath } from '../support/prerequisites.ts';
import { parsePrometheusText } from '../support/prometheus-text.ts';
import { parseMetricsWithPython, sampleDifferences } from './helpers.ts';

const GOOD = `# HELP shardgate_requests_total Requests, by "op".
# TYPE shardgate_requests_total counter
shardgate_requests_total{op="get",path="C:\\\\dir\\"x\\"\\n"} 3
shardgate_requests_total{op="put"} 1e3
# TYPE shardgate_free gauge
shardgate_free NaN
shardgate_lag -Inf 1700000000000
# HELP shardgate_duration_seconds Time.
# TYPE shardgate_duration_seconds histogram
shardgate_duration_seconds_bucket{op="get",le="0.1"} 1
shardgate_duration_seconds_bucket{op="get",le="+Inf"} 2
shardgate_duration_seconds_sum{op="get"} 0.3
shardgate_duration_seconds_count{op="get"} 2
`;

/** The metrics of a small gateway with some traffic recorded: what /_shardgate/metrics serves. */
async function gatewayMetrics(): Promise<string> {
  const meter = new IsolateMeter();
  const record = new MemoryOpsRecord();
  const backends = [new MeteredBackend(new MemoryBackend({ id: 'm', domain: 'd' }), (r) => meter.backendCall(r))];
  await backends[0]!.put('k', new TextEncoder().encode('shard'), 5);
  await (await backends[0]!.get('k')).body.cancel();
  const ops = new OpsService({
    config: {
      backends: [{ id: 'm', domain: 'd' }],
      policies: { p: { codec: 'rs', k: 1, m: 0 } },
      defaultPolicy: 'p',
      coder: { kernel: 'scalar', crc32: 'js' },
      scrubMode: 'heads',
      deployment: { mode: 'local', warnings: [] },
    },
    catalog: localCatalog(),
    backends,
    meter,
    record,
    flusher: new OpsFlusher(meter, (d) => record.record(d), 5000),
    probeEveryMs: 30_000,
  });
  const { doc, totals } = await ops.status({ signed: false, hours: 1, probe: false });
  return renderMetrics(doc, totals);
}

describe('the strict Prometheus text parser', () => {
  it('reads counters, gauges and histograms with escapes, special values and timestamps, as the Python client names them', () => {
    const samples = parsePrometheusText(GOOD);
    expect(samples.map((s) => [s.family, s.type, s.name, s.labels, s.value])).toEqual([
      ['shardgate_requests', 'counter', 'shardgate_requests_total', { op: 'get', path: 'C:\\dir"x"\n' }, 3],
      ['shardgate_requests', 'counter', 'shardgate_requests_total', { op: 'put' }, 1000],
      ['shardgate_free', 'gauge', 'shardgate_free', {}, NaN],
      // A sample of no declared family is an untyped family of its own (the Python client's reading too).
      ['shardgate_lag', 'unknown', 'shardgate_lag', {}, -Infinity],
      ['shardgate_duration_seconds', 'histogram', 'shardgate_duration_seconds_bucket', { op: 'get', le: '0.1' }, 1],
      ['shardgate_duration_seconds', 'histogram', 'shardgate_duration_seconds_bucket', { op: 'get', le: '+Inf' }, 2],
      ['shardgate_duration_seconds', 'histogram', 'shardgate_duration_seconds_sum', { op: 'get' }, 0.3],
      ['shardgate_duration_seconds', 'histogram', 'shardgate_duration_seconds_count', { op: 'get' }, 2],
    ]);
  });

  it.each([
    ['an unterminated label value', 'a{x="1} 3\n', /unterminated label value/],
    ['a value that is no number', 'a abc\n', /not a number/],
    ['three fields', 'a 3 4 5\n', /not "value \[timestamp\]"/],
    ['an unquoted label value', 'a{x=1} 3\n', /invalid label/],
    ['an unknown type', '# TYPE a foo\na 1\n', /unknown type/],
    ['an invalid metric name', 'a-b 1\n', /not "value \[timestamp\]"/],
    ['a second TYPE', '# TYPE a counter\na 1\n# TYPE a counter\n', /TYPE after samples or twice/],
    ['a label given twice', 'a{x="1",x="2"} 1\n', /label given twice/],
    ['a series given twice', 'a{x="1"} 1\na{x="1"} 2\n', /series given twice/],
    ['a family split in two', '# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\n# HELP a again\n', /already given/],
    ['a bad escape', 'a{x="\\t"} 1\n', /escape a label value does not allow/],
    ['no newline at the end', 'a 1', /does not end with a newline/],
    ['a histogram bucket without le', '# TYPE h histogram\nh_bucket 1\nh_count 1\n', /without le/],
    ['a histogram without +Inf', '# TYPE h histogram\nh_bucket{le="1"} 1\nh_count 1\n', /no le="\+Inf" bucket/],
    ['histogram buckets not cumulative', '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_count 1\n', /not cumulative/],
    ['a histogram count off its +Inf bucket', '# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_count 3\n', /_count 3 is not/],
  ])('refuses %s', (_, text, error) => {
    expect(() => parsePrometheusText(text)).toThrow(error);
  });

  it("reads the gateway's own metrics", async () => {
    const samples = parsePrometheusText(await gatewayMetrics());
    expect(samples.find((s) => s.name === 'shardgate_build_info')?.value).toBe(1);
    expect(samples.some((s) => s.type === 'histogram')).toBe(true);
  });
});

describe('the official Python client as the cross-check', needs('prometheus-client'), () => {
  it("reads the same samples from the gateway's metrics and the examples", async () => {
    for (const text of [await gatewayMetrics(), GOOD]) {
      expect(sampleDifferences(parsePrometheusText(text), await parseMetricsWithPython(toolPath('prometheus-client'), text))).toEqual([]);
    }
  });

  it('a difference between the two is reported, sample by sample', () => {
    const ours = parsePrometheusText('a{x="1"} 1\nb 2\n');
    const theirs = parsePrometheusText('a{x="1"} 1\nb 3\n');
    expect(sampleDifferences(ours, theirs)).toEqual(['sample 1: strict parser b/unknown b{} 2, Prometheus client b/unknown b{} 3']);
  });
});
