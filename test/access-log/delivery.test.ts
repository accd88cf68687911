/**
 * Server access logs end to end through the front door (harness.ts): records in AWS's standard
 * format for object and bucket operations (26 fields by ceph/s3-tests' own splitting rules), the
 * GET half of a copy in the source bucket's log, one record per DeleteObjects entry; sources
 * sharing a target and prefix share one log object; a roll writes each batch exactly once, also
 * when the deliverer dies between the write and its acknowledgement; no catalog call at all for
 * a bucket without logging and one per logged request; a client that goes away or a target that
 * is deleted never turns into an error.
 */
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutBucketLoggingCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { CLAIM_MS } from '../../worker/catalog/sql-access-log.ts';
import { formatAccessLogRecord } from '../../worker/model/access-log-record.ts';
import { AccessLogDelivery } from '../../worker/upkeep/access-log.ts';
import { readBytes } from '../support/read-bytes.ts';
import { loggingApp, parseRecord, REGION } from './harness.ts';
import { ACCESS_KEY, SECRET } from '../auth/helpers/signers.ts';

type App = ReturnType<typeof loggingApp>;

async function setup(o: { rollMs?: number } = {}) {
  const g = loggingApp({ rollMs: o.rollMs ?? 40 });
  for (const b of ['src', 'logs', 'other']) await g.store.createBucket(b, { region: REGION });
  const res = await g.command(
    new PutBucketLoggingCommand({ Bucket: 'src', BucketLoggingStatus: { LoggingEnabled: { TargetBucket: 'logs', TargetPrefix: 'log/' } } }),
  );
  expect(res.status).toBe(200);
  return g;
}

async function logObjects(g: App, bucket = 'logs'): Promise<{ key: string; body: string }[]> {
  const list = await g.store.listObjects(bucket, { prefix: '', delimiter: null, startAfter: null, maxKeys: 1000 });
  const out = [];
  for (const o of list.objects) {
    out.push({ key: o.key, body: new TextDecoder().decode(await readBytes((await g.store.getObject(bucket, o.key, { conditions: {} })).body)) });
  }
  return out;
}

/** A deliverer for whom every record is due: what a later check (request, timer or cron) does. */
const rollNow = (g: App) => new AccessLogDelivery({ catalog: g.catalog, store: g.store, rollMs: 0, log: (l) => g.logs.push(l) }).deliverDue('logs');

const records = (body: string) => body.split('\n').filter(Boolean).map(parseRecord);

describe('access log records and their delivery', () => {
  it('object and bucket operations: one log object, AWS standard records that split into 26 fields', async () => {
    const g = await setup({ rollMs: 3_600_000 });
    const key = "dir/a key with spaces & 'quotes' [x]";
    expect((await g.command(new PutObjectCommand({ Bucket: 'src', Key: key, Body: 'hello' }))).status).toBe(200);
    expect((await g.command(new GetObjectCommand({ Bucket: 'src', Key: key }))).status).toBe(200);
    expect((await g.command(new HeadObjectCommand({ Bucket: 'src', Key: key }))).status).toBe(200);
    expect((await g.command(new GetObjectCommand({ Bucket: 'src', Key: 'missing' }))).status).toBe(404);
    expect((await g.command(new ListObjectsV2Command({ Bucket: 'src' }))).status).toBe(200);
    expect((await g.command(new CopyObjectCommand({ Bucket: 'src', Key: 'copy', CopySource: `src/${encodeURIComponent(key)}` }))).status).toBe(200);
    expect((await g.command(new DeleteObjectCommand({ Bucket: 'src', Key: 'copy' }))).status).toBe(204);
    await g.command(new PutObjectCommand({ Bucket: 'src', Key: 'm1', Body: 'x' }));
    await g.command(new PutObjectCommand({ Bucket: 'src', Key: 'm2', Body: 'x' }));
    expect((await g.command(new DeleteObjectsCommand({ Bucket: 'src', Delete: { Objects: [{ Key: 'm1' }, { Key: 'm2' }] } }))).status).toBe(200);
    await g.command(new PutObjectCommand({ Bucket: 'other', Key: 'unlogged', Body: 'x' })); // another bucket: not logged
    await g.settle();
    expect(await logObjects(g)).toEqual([]); // not due yet
    // Later (a deliverer whose interval has passed for every record): one object.
    expect(await rollNow(g)).toBe(1);
    const logs = await logObjects(g);
    expect(logs.length).toBe(1);
    expect(logs[0]!.key).toMatch(/^log\/\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}-[0-9A-F]{16}$/);
    const recs = records(logs[0]!.body);
    for (const r of recs) {
      expect(r.BucketName).toBe('src');
      expect(r.RequestDateTime).toMatch(/^\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000$/);
      expect(r.Requester).toBe('AKIDTESTSIGNERS');
      expect(r.SigVersion).toBe('SigV4');
      expect(r.AuthType).toBe('AuthHeader');
    }
    const ops = recs.map((r) => `${r.Operation} ${decodeURIComponent(r.Key)} ${r.HTTPStatus} ${r.ErrorCode}`);
    expect(ops).toEqual([
      'REST.PUT.LOGGING_STATUS - 200 -',
      `REST.PUT.OBJECT ${key} 200 -`,
      `REST.GET.OBJECT ${key} 200 -`,
      `REST.HEAD.OBJECT ${key} 200 -`,
      'REST.GET.OBJECT missing 404 NoSuchKey',
      'REST.GET.BUCKET - 200 -',
      'REST.PUT.OBJECT copy 200 -',
      `REST.COPY.OBJECT_GET ${key} 200 -`,
      'REST.DELETE.OBJECT copy 204 -',
      'REST.PUT.OBJECT m1 200 -',
      'REST.PUT.OBJECT m2 200 -',
      'REST.POST.MULTI_OBJECT_DELETE - 200 -',
      'REST.POST.DELETE_MULTI_OBJECT m1 204 -',
      'REST.POST.DELETE_MULTI_OBJECT m2 204 -',
    ]);
    const get = recs[2]!;
    expect(get.BytesSent).toBe('5');
    expect(get.ObjectSize).toBe('5');
    expect(get.RequestURI).toMatch(/^GET \/src\/dir\/a%20key.* HTTP\/1\.1$/);
    expect(recs[0]!.RequestURI).toBe('PUT /src/?logging= HTTP/1.1'); // as the SDK sent it
    expect(g.logs).toEqual([]); // no delivery problem logged
  });

  it('ACLRequired is Yes for a request only an ACL let in (another account reading a public-read bucket), - for the owner', async () => {
    const alt = { accessKeyId: 'AKIDALTACCOUNT', secret: 'alt account secret' };
    const g = loggingApp({
      rollMs: 3_600_000,
      credentials: [
        { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET },
        { accessKeyId: alt.accessKeyId, secretAccessKey: alt.secret, account: 'alt' },
      ],
    });
    await g.store.createBucket('logs', { region: REGION });
    expect((await g.command(new CreateBucketCommand({ Bucket: 'src', ObjectOwnership: 'ObjectWriter', ACL: 'public-read' }))).status).toBe(200);
    const logging = { Bucket: 'src', BucketLoggingStatus: { LoggingEnabled: { TargetBucket: 'logs', TargetPrefix: 'log/' } } };
    expect((await g.command(new PutBucketLoggingCommand(logging))).status).toBe(200);
    expect((await g.command(new ListObjectsV2Command({ Bucket: 'src' }))).status).toBe(200);
    expect((await g.command(new ListObjectsV2Command({ Bucket: 'src' }), alt)).status).toBe(200);
    await g.settle();
    expect(await rollNow(g)).toBe(1);
    const recs = records((await logObjects(g))[0]!.body).filter((r) => r.Operation === 'REST.GET.BUCKET');
    expect(recs.map((r) => [r.Requester, r.ACLRequired])).toEqual([
      [ACCESS_KEY, '-'],
      [alt.accessKeyId, 'Yes'],
    ]);
  });

  it('the record format survives hostile header values (quotes, brackets, backslashes, control characters)', () => {
    const line = formatAccessLogRecord({
      bucket: 'b',
      time: new Date(0),
      remoteIp: null,
      requester: null,
      requestId: 'R',
      operation: 'REST.GET.OBJECT',
      key: 'k"\\[]\' \n',
      method: 'GET',
      uri: '/b/k"[x]\\?a b',
      status: 200,
      errorCode: null,
      bytesSent: 0,
      objectSize: null,
      totalMs: 1,
      turnAroundMs: 1,
      referer: 'say "hi" [now] \\ \u0001',
      userAgent: '',
      versionId: null,
      hostId: null,
      sigVersion: null,
      cipherSuite: null,
      authType: null,
      host: 'h o"st',
      tlsVersion: null,
    });
    const r = parseRecord(line);
    expect(r.Key).toBe('k%22%5C%5B%5D%27%20%0A');
    expect(r.UserAgent).toBe('-');
    expect(r.BytesSent).toBe('-');
    expect(r.RequestDateTime).toBe('01/Jan/1970:00:00:00 +0000');
  });

  it('sources logging to the same target and prefix share one log object (a copy across them too)', async () => {
    const g = await setup({ rollMs: 3_600_000 });
    await g.command(new PutBucketLoggingCommand({ Bucket: 'other', BucketLoggingStatus: { LoggingEnabled: { TargetBucket: 'logs', TargetPrefix: 'log/' } } }));
    await g.command(new PutObjectCommand({ Bucket: 'src', Key: 'k', Body: 'x' }));
    await g.command(new CopyObjectCommand({ Bucket: 'other', Key: 'copy_of_k', CopySource: 'src/k' }));
    await g.settle();
    expect(await rollNow(g)).toBe(1);
    const logs = await logObjects(g);
    expect(logs.length).toBe(1);
    const ops = records(logs[0]!.body).map((r) => `${r.BucketName} ${r.Operation} ${r.Key}`);
    expect(ops).toContain('other REST.PUT.OBJECT copy_of_k');
    expect(ops).toContain('src REST.COPY.OBJECT_GET k');
  });

  it('multipart uploads: REST.POST.UPLOADS, REST.PUT.PART, REST.POST.UPLOAD', async () => {
    const g = await setup({ rollMs: 3_600_000 });
    const created = await g.command(new CreateMultipartUploadCommand({ Bucket: 'src', Key: 'mp' }));
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(await created.text())![1]!;
    const part = await g.command(new UploadPartCommand({ Bucket: 'src', Key: 'mp', UploadId: uploadId, PartNumber: 1, Body: 'part' }));
    const etag = part.headers.get('etag')!;
    expect(
      (
        await g.command(
          new CompleteMultipartUploadCommand({ Bucket: 'src', Key: 'mp', UploadId: uploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: etag }] } }),
        )
      ).status,
    ).toBe(200);
    await g.settle();
    expect(await rollNow(g)).toBe(1);
    const ops = records((await logObjects(g))[0]!.body).map((r) => `${r.Operation} ${r.Key}`);
    expect(ops.slice(1)).toEqual(['REST.POST.UPLOADS mp', 'REST.PUT.PART mp', 'REST.POST.UPLOAD mp']);
  });

  it('no catalog call for a bucket without logging; exactly one more (the append) for a logged request', async () => {
    const plain = loggingApp({ logging: false });
    const g = loggingApp({ rollMs: 3_600_000 });
    for (const app of [plain, g]) for (const b of ['quiet', 'src', 'logs']) await app.store.createBucket(b, { region: REGION });
    await g.command(new PutBucketLoggingCommand({ Bucket: 'src', BucketLoggingStatus: { LoggingEnabled: { TargetBucket: 'logs', TargetPrefix: '' } } }));
    await g.settle();
    const count = async (app: App, bucket: string, c: () => unknown) => {
      const before = app.totalCalls();
      await app.command(c());
      await app.settle();
      return app.totalCalls() - before;
    };
    for (const [name, c] of [
      ['put', () => new PutObjectCommand({ Bucket: 'quiet', Key: 'k', Body: 'x' })],
      ['get', () => new GetObjectCommand({ Bucket: 'quiet', Key: 'k' })],
      ['head', () => new HeadObjectCommand({ Bucket: 'quiet', Key: 'k' })],
      ['list', () => new ListObjectsV2Command({ Bucket: 'quiet' })],
    ] as const) {
      const without = await count(plain, 'quiet', c);
      expect(await count(g, 'quiet', c), name).toBe(without);
    }
    const get = await count(plain, 'quiet', () => new GetObjectCommand({ Bucket: 'quiet', Key: 'k' }));
    expect(get).toBeGreaterThan(0);
    await g.command(new PutObjectCommand({ Bucket: 'src', Key: 'k', Body: 'x' }));
    await g.settle();
    const before = g.calls();
    expect(await count(g, 'src', () => new GetObjectCommand({ Bucket: 'src', Key: 'k' }))).toBe(get + 1);
    expect((g.calls().appendAccessLog ?? 0) - (before.appendAccessLog ?? 0)).toBe(1);
  });

  it('a roll writes its batch exactly once: a deliverer dying between write and acknowledgement is covered', async () => {
    const g = await setup({ rollMs: 3_600_000 });
    await g.command(new PutObjectCommand({ Bucket: 'src', Key: 'k', Body: 'x' }));
    await g.settle();
    const later = Date.now() + 3_600_001;
    // Claimed, written, and the acknowledgement never made (the worker died).
    const batch = (await g.catalog.takeAccessLog('logs', new Date(later), 3_600_000))!;
    expect(batch.body.split('\n').filter(Boolean).length).toBe(2);
    expect(await g.catalog.takeAccessLog('logs', new Date(later + 1000), 3_600_000)).toBeNull(); // claimed: nobody else takes it
    const bytes = new TextEncoder().encode(batch.body);
    await g.store.putObject('logs', batch.objectKey, new Response(bytes).body!, {
      contentLength: bytes.length,
      metadata: { user: {} },
      checksum: null,
      conditions: { ifNoneMatch: '*' },
    });
    // A request after the claim is not in that batch.
    await g.command(new GetObjectCommand({ Bucket: 'src', Key: 'k' }));
    await g.settle();
    // After the claim's time the same batch (same key) is handed out again; its write finds the key taken and acknowledges.
    const again = (await g.catalog.takeAccessLog('logs', new Date(later + CLAIM_MS), 3_600_000))!;
    expect(again).toEqual(batch);
    await g.catalog.accessLogDelivered('logs', again.id); // what deliver() does after a 412
    expect((await logObjects(g)).map((l) => l.key)).toEqual([batch.objectKey]);
    // The next batch holds only the request made after the claim.
    const next = (await g.catalog.takeAccessLog('logs', new Date(later + CLAIM_MS + 3_600_000), 3_600_000))!;
    expect(next.id).not.toBe(batch.id);
    expect(records(next.body).map((r) => r.Operation)).toEqual(['REST.GET.OBJECT']);
    await g.catalog.accessLogDelivered('logs', next.id);
    await g.catalog.accessLogDelivered('logs', next.id); // idempotent
    expect(await g.catalog.takeAccessLog('logs', new Date(later * 2), 3_600_000)).toBeNull();
  });

  it('a quiet bucket still gets its log on time: the request that started a batch times its roll (short intervals)', async () => {
    const g = await setup({ rollMs: 100 }); // one logged request: PutBucketLogging itself
    expect(await logObjects(g)).toEqual([]);
    const started = Date.now();
    await g.settle(); // the append, then the timer (kept alive by the request's waitUntil) rolls after the interval
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    const logs = await logObjects(g);
    expect(logs.length).toBe(1);
    expect(records(logs[0]!.body).map((r) => r.Operation)).toEqual(['REST.PUT.LOGGING_STATUS']);
    // Nothing left: a later check writes nothing.
    expect(await rollNow(g)).toBe(0);
    expect(await g.delivery.sweep(['src', 'logs', 'other'])).toBe(0);
    expect((await logObjects(g)).length).toBe(1);
  });

  it('a target bucket deleted, or a client gone mid-body: the requests answer as ever, nothing throws', async () => {
    const g = await setup({ rollMs: 3_600_000 });
    await g.store.deleteBucket('logs');
    expect((await g.command(new PutObjectCommand({ Bucket: 'src', Key: 'k', Body: 'x' }))).status).toBe(200);
    await g.settle();
    expect(g.logs.map((l) => l.outcome)).toEqual(['not recorded']);

    const h = await setup({ rollMs: 3_600_000 });
    const wire = new PutObjectCommand({ Bucket: 'src', Key: 'gone', Body: 'x'.repeat(1000) });
    const { sdk } = await import('../auth/mutation/bases.ts');
    const w = await sdk(wire, {});
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('x'.repeat(10)));
        c.error(new Error('client went away'));
      },
    });
    const req = new Request(`http://gw.test${w.target}`, { method: 'PUT', headers: w.headers, body, duplex: 'half' } as RequestInit);
    const res = await h.send(req);
    expect(res.status).toBeGreaterThanOrEqual(400);
    await h.settle();
    // A small body is read whole before the PUT's one catalog call, so this request ended before
    // its bucket's catalog could say that the bucket logs: it is not logged (COMPATIBILITY.md,
    // "What is logged"), and nothing else went wrong.
    const batch = (await h.catalog.takeAccessLog('logs', new Date(Date.now() + 3_600_001), 3_600_000))!;
    const ops = records(batch.body).map((r) => `${r.Operation} ${r.Key} ${r.HTTPStatus}`);
    expect(ops.filter((o) => o.includes(' gone '))).toEqual([]);
    expect(h.logs.filter((l) => l.outcome !== 'recorded' && l.outcome !== 'delivered')).toEqual([]);
  });
});
