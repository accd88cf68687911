/**
 * Helpers of the ops tests: running the `shardgate` command as a person does (node cli/bin.mjs in
 * its own process), reading metrics signed with aws4fetch, and parsing them as a scraper does:
 * with a strict parser of the text format on every machine (test/support/prometheus-text.ts), and
 * where it is installed (always in CI: .ci/run sets SHARDGATE_REQUIRE_ALL_TOOLS) with the
 * official Prometheus Python client too, which must read the same samples: what a scraper
 * accepts, not what our own code thinks it wrote.
 */
import { AwsClient } from 'aws4fetch';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { prerequisites } from '../support/prerequisites.ts';
import { parsePrometheusText, type ParsedSample } from '../support/prometheus-text.ts';
import { ROOT } from '../support/worker.ts';

const execFileAsync = promisify(execFile);

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `shardgate ...args` with only the environment given (plus PATH and HOME). */
export async function shardgate(args: string[], env: Record<string, string> = {}, timeoutMs = 300_000): Promise<CliRun> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [join(ROOT, 'cli/bin.mjs'), ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env },
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; killed?: boolean; signal?: string; stdout?: string; stderr?: string };
    // Killed at its timeout: say which command and what it printed (a test's own timeout would not).
    if (e.killed)
      throw new Error(
        `shardgate ${args.join(' ')}: killed after ${timeoutMs / 1000} s (${e.signal}); stdout: ${(e.stdout ?? '').slice(-2000)}; stderr: ${(e.stderr ?? '').slice(-2000)}`,
      );
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** The options that point `shardgate` at a gateway, signed with `credentials`. */
export function gatewayArgs(url: URL | string, credentials: { accessKeyId: string; secretAccessKey: string }): string[] {
  return ['--endpoint', url.toString(), '--access-key-id', credentials.accessKeyId, '--secret-access-key', credentials.secretAccessKey];
}

export function signer(credentials: { accessKeyId: string; secretAccessKey: string }): AwsClient {
  return new AwsClient({ ...credentials, service: 's3', region: 'us-east-1', retries: 0 });
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const PARSE = `
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        out.append({"family": family.name, "type": family.type, "name": s.name, "labels": s.labels, "value": repr(s.value)})
print(json.dumps(out))
`;

/** Every sample of a metrics text as the official Python client parses it (Python's repr of a float: nan, inf, -inf too). */
export async function parseMetricsWithPython(python: string, text: string): Promise<ParsedSample[]> {
  const child = execFile(python, ['-c', PARSE], { maxBuffer: 64 * 1024 * 1024 });
  const out = new Promise<string>((resolve, reject) => {
    let stdout = '',
      stderr = '';
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`the Prometheus client refused the metrics: ${stderr}`))));
  });
  child.stdin!.end(text);
  const samples = JSON.parse(await out) as (Omit<ParsedSample, 'value'> & { value: string })[];
  return samples.map((s) => ({ ...s, value: Number(s.value.replace(/^(-?)inf$/, '$1Infinity').replace(/^nan$/, 'NaN')) }));
}

/**
 * Every sample of a metrics text (it throws on malformed text): the strict parser's, checked
 * against the official Python client's where that is installed.
 */
export async function parseMetrics(text: string): Promise<ParsedSample[]> {
  const samples = parsePrometheusText(text);
  const python = prerequisites().status['prometheus-client'];
  if (python.state === 'found') {
    const official = await parseMetricsWithPython(python.path, text);
    const differences = sampleDifferences(samples, official);
    if (differences.length)
      throw new Error(`the strict parser and the Prometheus client read the metrics differently:\n${differences.slice(0, 10).join('\n')}`);
  }
  return samples;
}

/** Where two parses of one text differ (family, type, name, labels, value; NaN equals NaN), as lines. */
export function sampleDifferences(ours: ParsedSample[], theirs: ParsedSample[]): string[] {
  const show = (s: ParsedSample | undefined) => (s ? `${s.family}/${s.type} ${s.name}${JSON.stringify(s.labels)} ${s.value}` : 'nothing');
  const out: string[] = [];
  for (let i = 0; i < Math.max(ours.length, theirs.length); i++) {
    const [a, b] = [ours[i], theirs[i]];
    if (show(a) !== show(b)) out.push(`sample ${i}: strict parser ${show(a)}, Prometheus client ${show(b)}`);
  }
  return out;
}

/** The value of the one sample named `name` whose labels include `labels`. */
export function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const hits = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (hits.length > 1) throw new Error(`${name} ${JSON.stringify(labels)}: ${hits.length} samples`);
  return hits[0]?.value;
}
