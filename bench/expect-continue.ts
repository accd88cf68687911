/**
 * node --import tsx bench/expect-continue.ts [--puts N]
 *
 * What `Expect: 100-continue` costs a client of the local gateway: PutObject latencies of boto3
 * (Debian's python3-boto3, defaults: it sends the header on every PutObject/UploadPart) and of
 * @aws-sdk/client-s3 (defaults: the header on bodies of 2 MiB or more), sequential, against
 * (a) workerd directly (wrangler's dev server, which never answers the header: what `wrangler
 * dev` gave before) and (b) the Node front of `npm start` (dev/front.ts, which answers it).
 * Prints the machine, the load average and per-case median/mean/max in ms. Never part of `npm test`.
 */
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startLocalGateway } from '../dev/local-gateway.ts';
import { cpuModel, loadAverage } from '../test/support/proc.ts';

const puts = Number(process.argv[process.argv.indexOf('--puts') + 1]) || 10;
const CREDS = { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' };

const BOTO3 = `
import boto3, json, sys, time
s3 = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id='${CREDS.accessKeyId}', aws_secret_access_key='${CREDS.secretAccessKey}', region_name='us-east-1')
body = b'x' * int(sys.argv[3])
out = []
for i in range(int(sys.argv[2])):
    t = time.perf_counter()
    s3.put_object(Bucket='bench-continue', Key='boto3-%d' % i, Body=body)
    out.append((time.perf_counter() - t) * 1000)
print(json.dumps(out))
`;

async function boto3(endpoint: string, n: number, size: number): Promise<number[]> {
  const { stdout } = await promisify(execFile)('/usr/bin/python3', ['-c', BOTO3, endpoint, String(n), String(size)]);
  return JSON.parse(stdout) as number[];
}

async function jsSdk(endpoint: string, n: number, size: number): Promise<number[]> {
  const client = new S3Client({ endpoint, region: 'us-east-1', credentials: { ...CREDS }, forcePathStyle: true });
  const body = new Uint8Array(size).fill(7);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await client.send(new PutObjectCommand({ Bucket: 'bench-continue', Key: `js-${i}`, Body: body }));
    out.push(performance.now() - t);
  }
  client.destroy();
  return out;
}

const fmt = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const r = (x: number) => x.toFixed(0).padStart(6);
  return `median ${r(s[s.length >> 1]!)}  mean ${r(xs.reduce((a, b) => a + b, 0) / xs.length)}  max ${r(s[s.length - 1]!)}`;
};

const state = mkdtempSync(join(tmpdir(), 'shardgate-bench-continue-'));
const gw = await startLocalGateway({ port: 0, stateDir: state, cronSeconds: 0 });
try {
  const direct = gw.workerUrl.origin;
  const front = gw.url.origin;
  const admin = new S3Client({ endpoint: front, region: 'us-east-1', credentials: { ...CREDS }, forcePathStyle: true });
  await admin.send(new CreateBucketCommand({ Bucket: 'bench-continue' }));
  console.log(`machine: ${cpuModel()}, load average ${loadAverage()}, node ${process.version}, ${puts} sequential PUTs per case (ms)`);
  const cases: [string, (endpoint: string) => Promise<number[]>][] = [
    ['boto3 1 KiB', (e) => boto3(e, puts, 1024)],
    ['boto3 1 MiB', (e) => boto3(e, puts, 1 << 20)],
    ['JS SDK 1 KiB', (e) => jsSdk(e, puts, 1024)],
    ['JS SDK 3 MiB', (e) => jsSdk(e, puts, 3 << 20)],
  ];
  for (const [name, run] of cases) {
    console.log(`${name.padEnd(14)} workerd direct: ${fmt(await run(direct))}   via the front: ${fmt(await run(front))}`);
  }
} finally {
  await gw.close();
  rmSync(state, { recursive: true, force: true });
}
