/**
 * `npm run rehearse` rehearses an outage (issue 27, item 5): the production config over s3rver
 * backends whose ports it names, a backend stopped, started and wiped by operator commands while
 * a client reads through it, the cron running the Worker's scheduled handler, and nothing left
 * on disk once it closes.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRehearsal, type Rehearsal } from '../../dev/rehearsal.ts';

let r: Rehearsal;
let s3: S3Client;
const data = randomBytes(3 * 1024 * 1024);
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

/** Files under `dir`, recursively. */
function files(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => e.name);
}

async function readBack(): Promise<string> {
  const got = await s3.send(new GetObjectCommand({ Bucket: 'drill', Key: 'object' }));
  return md5(await got.Body!.transformToByteArray());
}

beforeAll(async () => {
  r = await startRehearsal({ port: 0, cronSeconds: 2, log: () => {} });
  const key = r.credentials[0]!;
  s3 = new S3Client({
    endpoint: `http://127.0.0.1:${r.gateway.port}`,
    region: r.region,
    forcePathStyle: true,
    credentials: { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey },
  });
  await s3.send(new CreateBucketCommand({ Bucket: 'drill' }));
  await s3.send(new PutObjectCommand({ Bucket: 'drill', Key: 'object', Body: data }));
}, 240_000);

afterAll(async () => {
  s3?.destroy();
  await r?.close();
});

describe('npm run rehearse: an outage, rehearsed', () => {
  it('names every s3 backend with its own port', async () => {
    expect(r.backends.length).toBeGreaterThanOrEqual(2);
    const ports = r.backends.map((b) => new URL(b.endpoint).port);
    expect(new Set(ports).size).toBe(ports.length);
    const list = await r.control('list');
    for (const b of r.backends) expect(list).toContain(`${b.endpoint}  running`);
  });

  it('stop, start and wipe a backend: reads go on throughout', async () => {
    const [one, two] = r.backends;
    expect(await r.control(`stop ${one!.id}`)).toMatch(/stopped/);
    expect(one!.server.running).toBe(false);
    await expect(fetch(one!.endpoint)).rejects.toThrow();
    expect(await r.control('list')).toContain(`${one!.endpoint}  STOPPED`);
    expect(await readBack()).toBe(md5(data));
    expect(await r.control(`start ${one!.id}`)).toMatch(/started again/);
    expect((await fetch(one!.endpoint)).status).toBe(200);

    const before = files(two!.server.directory).length;
    expect(before).toBeGreaterThan(0);
    expect(await r.control(`wipe ${two!.id}`)).toMatch(/wiped/);
    expect(files(two!.server.directory).filter((f) => !f.startsWith('.')).length).toBeLessThan(before);
    expect(await readBack()).toBe(md5(data));
    expect(await r.control('wipe nobody')).toMatch(/no s3 backend "nobody"/);
    expect(await r.control('reboot')).toMatch(/unknown command/);
  });

  it('runs the cron', async () => {
    const deadline = Date.now() + 60_000;
    while (r.gateway.cron?.runs === undefined || r.gateway.cron.runs < 2) {
      if (Date.now() > deadline) throw new Error(`the cron ran ${r.gateway.cron?.runs ?? 'never'} times in 60 s`);
      await new Promise((res) => setTimeout(res, 500));
    }
    expect(r.gateway.cron!.lastOutcome).toBe('ok');
  });

  it('leaves nothing on disk once closed', async () => {
    const dirs = [r.stateDir, ...r.backends.map((b) => b.server.directory)];
    for (const d of dirs) expect(existsSync(d)).toBe(true);
    await r.close();
    for (const d of dirs) expect(existsSync(d), d).toBe(false);
  });
});
