/**
 * PutBucketLogging / GetBucketLogging: the BucketLoggingStatus document parsed and rendered
 * (round trip of each key format, the empty document turning logging off), its errors
 * (MalformedXML, InvalidTargetBucketForLogging, NoSuchBucket) and the stored state row.
 */
import { GetBucketLoggingCommand, PutBucketLoggingCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { bucketLoggingStatusXml, parseBucketLoggingStatus } from '../../worker/s3/bucket-logging.ts';
import type { S3Error } from '../../worker/model/errors.ts';
import { TRANSIENT_STATE } from '../../worker/catalog/sql-journal.ts';
import { loggingApp, REGION } from './harness.ts';

const doc = (inner: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><BucketLoggingStatus xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${inner}</BucketLoggingStatus>`;
const codeOf = (text: string) => /<Code>([^<]+)<\/Code>/.exec(text)?.[1];

describe('BucketLoggingStatus', () => {
  it('round trips each key format; an empty status is logging off', () => {
    for (const config of [
      { targetBucket: 'logs', targetPrefix: 'log/', partitioned: null },
      { targetBucket: 'logs', targetPrefix: '', partitioned: null },
      { targetBucket: 'logs', targetPrefix: 'a&b<', partitioned: 'EventTime' as const },
      { targetBucket: 'logs', targetPrefix: 'p/', partitioned: 'DeliveryTime' as const },
    ]) {
      expect(parseBucketLoggingStatus(bucketLoggingStatusXml(config))).toEqual(config);
    }
    expect(parseBucketLoggingStatus(doc(''))).toBeNull();
    expect(bucketLoggingStatusXml(null)).toContain('<BucketLoggingStatus xmlns=');
    expect(bucketLoggingStatusXml(null)).not.toContain('LoggingEnabled');
    // SimplePrefix is the default, and a PartitionedPrefix without a date source is EventTime (AWS's default).
    expect(parseBucketLoggingStatus(doc('<LoggingEnabled><TargetBucket>l</TargetBucket><TargetPrefix>x</TargetPrefix></LoggingEnabled>'))).toEqual({
      targetBucket: 'l',
      targetPrefix: 'x',
      partitioned: null,
    });
    expect(
      parseBucketLoggingStatus(
        doc(
          '<LoggingEnabled><TargetBucket>l</TargetBucket><TargetPrefix>x</TargetPrefix><TargetObjectKeyFormat><PartitionedPrefix/></TargetObjectKeyFormat></LoggingEnabled>',
        ),
      ),
    ).toEqual({ targetBucket: 'l', targetPrefix: 'x', partitioned: 'EventTime' });
    // TargetGrants are accepted and not kept (no ACLs here).
    expect(
      parseBucketLoggingStatus(
        doc('<LoggingEnabled><TargetBucket>l</TargetBucket><TargetGrants><Grant/></TargetGrants><TargetPrefix>x</TargetPrefix></LoggingEnabled>'),
      ),
    ).toEqual({ targetBucket: 'l', targetPrefix: 'x', partitioned: null });
  });

  it('refuses what is not a logging status as MalformedXML', () => {
    for (const bad of [
      'not xml',
      '<LoggingStatus/>',
      doc('<LoggingEnabled><TargetPrefix>x</TargetPrefix></LoggingEnabled>'),
      doc('<LoggingEnabled><TargetBucket>l</TargetBucket></LoggingEnabled>'),
      doc('<LoggingEnabled><TargetBucket>l</TargetBucket><TargetPrefix>x</TargetPrefix><Other/></LoggingEnabled>'),
      doc(
        '<LoggingEnabled><TargetBucket>l</TargetBucket><TargetPrefix>x</TargetPrefix><TargetObjectKeyFormat><SimplePrefix/><PartitionedPrefix/></TargetObjectKeyFormat></LoggingEnabled>',
      ),
      doc(
        '<LoggingEnabled><TargetBucket>l</TargetBucket><TargetPrefix>x</TargetPrefix><TargetObjectKeyFormat><PartitionedPrefix><PartitionDateSource>Never</PartitionDateSource></PartitionedPrefix></TargetObjectKeyFormat></LoggingEnabled>',
      ),
      doc(
        '<LoggingEnabled><TargetBucket>l</TargetBucket><TargetPrefix>x</TargetPrefix></LoggingEnabled><LoggingEnabled><TargetBucket>l</TargetBucket><TargetPrefix>x</TargetPrefix></LoggingEnabled>',
      ),
    ]) {
      let code: string | undefined;
      try {
        parseBucketLoggingStatus(bad);
      } catch (err) {
        code = (err as S3Error).code;
      }
      expect(code, bad).toBe('MalformedXML');
    }
  });
});

describe('PutBucketLogging and GetBucketLogging through the front door', () => {
  it('off by default; put, get as put (SimplePrefix named), off again; stored as the journaled state row', async () => {
    const g = loggingApp();
    await g.store.createBucket('src', { region: REGION });
    await g.store.createBucket('logs', { region: REGION });
    let res = await g.command(new GetBucketLoggingCommand({ Bucket: 'src' }));
    expect(res.status).toBe(200);
    res = await g.command(
      new PutBucketLoggingCommand({ Bucket: 'src', BucketLoggingStatus: { LoggingEnabled: { TargetBucket: 'logs', TargetPrefix: 'log/' } } }),
    );
    expect(res.status).toBe(200);
    expect(JSON.parse((await g.catalog.getBucketLogging('src'))!)).toEqual({ targetBucket: 'logs', targetPrefix: 'log/', partitioned: null });
    expect(TRANSIENT_STATE).not.toContain('logging'); // the state row is journaled (restores and rescue keep it)
    const text = await (await g.app.fetch(new Request('http://x/'))).text(); // an unsigned request is refused, never logged or broken
    expect(codeOf(text)).toBeDefined();
    const got = await g.store.config.getBucketLogging('src');
    expect(got).toEqual({ targetBucket: 'logs', targetPrefix: 'log/', partitioned: null });
    expect(bucketLoggingStatusXml(got)).toContain('<TargetObjectKeyFormat><SimplePrefix></SimplePrefix></TargetObjectKeyFormat>');
    res = await g.command(new PutBucketLoggingCommand({ Bucket: 'src', BucketLoggingStatus: {} }));
    expect(res.status).toBe(200);
    expect(await g.catalog.getBucketLogging('src')).toBeNull();
  });

  it('InvalidTargetBucketForLogging for a target that is not here; NoSuchBucket for a missing source; MalformedXML', async () => {
    const g = loggingApp();
    await g.store.createBucket('src', { region: REGION });
    let res = await g.command(
      new PutBucketLoggingCommand({ Bucket: 'src', BucketLoggingStatus: { LoggingEnabled: { TargetBucket: 'nowhere', TargetPrefix: 'log/' } } }),
    );
    expect(res.status).toBe(400);
    expect(codeOf(await res.text())).toBe('InvalidTargetBucketForLogging');
    expect(await g.catalog.getBucketLogging('src')).toBeNull();
    const raw = await g.store.config.putBucketLogging('src', { targetBucket: 'nowhere', targetPrefix: '', partitioned: null }).then(
      () => null,
      (e: S3Error) => e.code,
    );
    expect(raw).toBe('InvalidTargetBucketForLogging');
    res = await g.command(
      new PutBucketLoggingCommand({ Bucket: 'missing', BucketLoggingStatus: { LoggingEnabled: { TargetBucket: 'src', TargetPrefix: 'log/' } } }),
    );
    expect(res.status).toBe(404);
    expect(codeOf(await res.text())).toBe('NoSuchBucket');
    res = await g.send(new Request('http://x/src?logging', { method: 'PUT' }));
    expect(res.status).toBe(403); // unsigned: refused at the gate, never parsed
    const bad = await g.store.config.putBucketLogging('missing', null).then(
      () => null,
      (e: S3Error) => e.code,
    );
    expect(bad).toBe('NoSuchBucket');
  });
});
