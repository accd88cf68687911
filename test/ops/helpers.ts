/**
 * Helpers of the ops tests: running the `shardgate` command as a person does (node cli/bin.mjs in
 * its own process), reading metrics signed with aws4fetch, and parsing them with the official
 * Prometheus Python client (Debian's python3-prometheus-client, which .ci/run installs): what a
 * scraper accepts, not what our own code thinks it wrote.
 */
import { AwsClient } from 'aws4fetch';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../support/worker.ts';

const execFileAsync = promisify(execFile);

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `shardgate ...args` with only the environment given (plus PATH and HOME). */
export async function shardgate(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [join(ROOT, 'cli/bin.mjs'), ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env },
      timeout: 300_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
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
        out.append({"family": family.name, "type": family.type, "name": s.name, "labels": s.labels, "value": s.value})
print(json.dumps(out))
`;

/** Every sample of a metrics text, as the Prometheus client parses it (it throws on malformed text). */
export async function parseMetrics(text: string): Promise<(Sample & { family: string; type: string })[]> {
  const child = execFile('/usr/bin/python3', ['-c', PARSE], { maxBuffer: 64 * 1024 * 1024 });
  const out = new Promise<string>((resolve, reject) => {
    let stdout = '', stderr = '';
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => {
      if (code === 0) return resolve(stdout);
      if (/No module named 'prometheus_client'/.test(stderr)) reject(new Error('python3-prometheus-client is missing: apt-get install python3-prometheus-client (.ci/run does)'));
      else reject(new Error(`the Prometheus client refused the metrics: ${stderr}`));
    });
  });
  child.stdin!.end(text);
  return JSON.parse(await out);
}

/** The value of the one sample named `name` whose labels include `labels`. */
export function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const hits = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (hits.length > 1) throw new Error(`${name} ${JSON.stringify(labels)}: ${hits.length} samples`);
  return hits[0]?.value;
}
