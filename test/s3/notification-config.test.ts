/**
 * Put/GetBucketNotificationConfiguration through the real front door (test/support/event-gateway.ts):
 * the document round trip as the AWS SDK reads it, AWS's InvalidArgument for an ARN naming no
 * destination of the gateway, an unsupported event, overlapping rules on one destination, a bad
 * filter rule, repeated Ids; an empty document removes the rules; a new configuration queues the
 * s3:TestEvent AWS sends, once per destination, signed.
 */
import {
  CreateBucketCommand,
  GetBucketNotificationConfigurationCommand,
  PutBucketNotificationConfigurationCommand,
  S3ServiceException,
  type NotificationConfiguration,
} from '@aws-sdk/client-s3';
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventGateway, HOOK_SECRET } from '../support/event-gateway.ts';

let g: Awaited<ReturnType<typeof eventGateway>>;
let n = 0;

beforeAll(async () => {
  g = await eventGateway();
});
afterAll(async () => g?.close());

const HOOK = 'arn:aws:sqs:us-east-1:000000000000:hook';
const QUEUE = 'arn:shardgate:sqs:::q';

async function bucket(): Promise<string> {
  const name = `cfg-${++n}`;
  await g.client.send(new CreateBucketCommand({ Bucket: name }));
  return name;
}

async function put(Bucket: string, config: NotificationConfiguration) {
  return g.client.send(new PutBucketNotificationConfigurationCommand({ Bucket, NotificationConfiguration: config }));
}

async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof S3ServiceException) return { code: err.name, message: err.message };
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('PutBucketNotificationConfiguration', () => {
  it('stores the three kinds of rule and answers them back as put; an empty document removes them', async () => {
    const b = await bucket();
    expect(await g.client.send(new GetBucketNotificationConfigurationCommand({ Bucket: b }))).not.toHaveProperty('QueueConfigurations');
    await put(b, {
      QueueConfigurations: [
        {
          Id: 'images',
          QueueArn: HOOK,
          Events: ['s3:ObjectCreated:*'],
          Filter: {
            Key: {
              FilterRules: [
                { Name: 'prefix', Value: 'img/' },
                { Name: 'suffix', Value: '.jpg' },
              ],
            },
          },
        },
      ],
      TopicConfigurations: [{ Id: 'gone', TopicArn: QUEUE, Events: ['s3:ObjectRemoved:Delete', 's3:LifecycleExpiration:*'] }],
      LambdaFunctionConfigurations: [{ Id: 'tags', LambdaFunctionArn: 'arn:aws:lambda:us-east-1:1:function:hook', Events: ['s3:ObjectTagging:Put'] }],
    });
    const got = await g.client.send(new GetBucketNotificationConfigurationCommand({ Bucket: b }));
    expect(got.QueueConfigurations).toEqual([
      {
        Id: 'images',
        QueueArn: HOOK,
        Events: ['s3:ObjectCreated:*'],
        Filter: {
          Key: {
            FilterRules: [
              { Name: 'Prefix', Value: 'img/' },
              { Name: 'Suffix', Value: '.jpg' },
            ],
          },
        },
      },
    ]);
    expect(got.TopicConfigurations).toEqual([{ Id: 'gone', TopicArn: QUEUE, Events: ['s3:ObjectRemoved:Delete', 's3:LifecycleExpiration:*'] }]);
    expect(got.LambdaFunctionConfigurations).toEqual([
      { Id: 'tags', LambdaFunctionArn: 'arn:aws:lambda:us-east-1:1:function:hook', Events: ['s3:ObjectTagging:Put'] },
    ]);
    await put(b, {});
    const after = await g.client.send(new GetBucketNotificationConfigurationCommand({ Bucket: b }));
    expect([after.QueueConfigurations, after.TopicConfigurations, after.LambdaFunctionConfigurations]).toEqual([undefined, undefined, undefined]);
  });

  it('makes up an Id when none is given', async () => {
    const b = await bucket();
    await put(b, { QueueConfigurations: [{ QueueArn: HOOK, Events: ['s3:ObjectCreated:Put'] }] });
    const got = await g.client.send(new GetBucketNotificationConfigurationCommand({ Bucket: b }));
    expect(got.QueueConfigurations?.[0]?.Id).toMatch(/^\S{8,}$/);
  });

  it('refuses an ARN that names no destination of the gateway, as AWS refuses one it cannot validate, and stores nothing', async () => {
    const b = await bucket();
    const r = await refusal(put(b, { QueueConfigurations: [{ QueueArn: 'arn:aws:sqs:us-east-1:1:nowhere', Events: ['s3:ObjectCreated:*'] }] }));
    expect(r).toEqual({ code: 'InvalidArgument', message: 'Unable to validate the following destination configurations' });
    expect((await refusal(put(b, { QueueConfigurations: [{ QueueArn: 'not-an-arn', Events: ['s3:ObjectCreated:*'] }] }))).code).toBe('InvalidArgument');
    expect((await g.client.send(new GetBucketNotificationConfigurationCommand({ Bucket: b }))).QueueConfigurations).toBeUndefined();
    expect(await g.catalog.listEvents(b, 10)).toEqual([]); // no test event for a refused configuration
  });

  it('refuses an event it does not offer (s3:ObjectRestore, s3:Replication, a made-up one)', async () => {
    const b = await bucket();
    for (const event of ['s3:ObjectRestore:Post', 's3:Replication:*', 's3:ObjectCreated:Frobnicate', 's3:*']) {
      const r = await refusal(put(b, { QueueConfigurations: [{ QueueArn: HOOK, Events: [event as 's3:ObjectCreated:*'] }] }));
      expect(r, event).toEqual({ code: 'InvalidArgument', message: 'The event is not supported for notifications' });
    }
  });

  it('refuses overlapping rules on one destination for one event type, and takes them on two destinations or apart', async () => {
    const b = await bucket();
    const overlapping = await refusal(
      put(b, {
        QueueConfigurations: [
          { Id: 'a', QueueArn: HOOK, Events: ['s3:ObjectCreated:*'], Filter: { Key: { FilterRules: [{ Name: 'prefix', Value: 'img/' }] } } },
          { Id: 'b', QueueArn: HOOK, Events: ['s3:ObjectCreated:Put'], Filter: { Key: { FilterRules: [{ Name: 'prefix', Value: 'img/raw/' }] } } },
        ],
      }),
    );
    expect(overlapping.code).toBe('InvalidArgument');
    expect(overlapping.message).toMatch(/^Configuration is ambiguously defined/);
    // Disjoint prefixes, other event types, or another destination: accepted.
    await put(b, {
      QueueConfigurations: [
        { Id: 'a', QueueArn: HOOK, Events: ['s3:ObjectCreated:*'], Filter: { Key: { FilterRules: [{ Name: 'prefix', Value: 'img/' }] } } },
        { Id: 'b', QueueArn: HOOK, Events: ['s3:ObjectCreated:*'], Filter: { Key: { FilterRules: [{ Name: 'prefix', Value: 'doc/' }] } } },
        { Id: 'c', QueueArn: HOOK, Events: ['s3:ObjectRemoved:*'], Filter: { Key: { FilterRules: [{ Name: 'prefix', Value: 'img/' }] } } },
        { Id: 'd', QueueArn: QUEUE, Events: ['s3:ObjectCreated:*'] },
      ],
    });
    expect((await g.client.send(new GetBucketNotificationConfigurationCommand({ Bucket: b }))).QueueConfigurations).toHaveLength(4);
  });

  it('refuses a filter rule other than prefix or suffix, one given twice, and an Id used twice', async () => {
    const b = await bucket();
    const bad = await refusal(
      put(b, {
        QueueConfigurations: [
          { QueueArn: HOOK, Events: ['s3:ObjectCreated:*'], Filter: { Key: { FilterRules: [{ Name: 'infix' as 'prefix', Value: 'x' }] } } },
        ],
      }),
    );
    expect(bad).toEqual({ code: 'InvalidArgument', message: 'filter rule name must be either prefix or suffix' });
    const twice = await refusal(
      put(b, {
        QueueConfigurations: [
          {
            QueueArn: HOOK,
            Events: ['s3:ObjectCreated:*'],
            Filter: {
              Key: {
                FilterRules: [
                  { Name: 'prefix', Value: 'a' },
                  { Name: 'prefix', Value: 'b' },
                ],
              },
            },
          },
        ],
      }),
    );
    expect(twice).toEqual({ code: 'InvalidArgument', message: 'Cannot specify more than one prefix rule in a filter.' });
    const ids = await refusal(
      put(b, {
        QueueConfigurations: [
          { Id: 'same', QueueArn: HOOK, Events: ['s3:ObjectCreated:*'] },
          { Id: 'same', QueueArn: QUEUE, Events: ['s3:ObjectCreated:*'] },
        ],
      }),
    );
    expect(ids.code).toBe('InvalidArgument');
  });

  it('sends the s3:TestEvent AWS sends to each destination of a new configuration, signed', async () => {
    const b = await bucket();
    await g.deliver(Date.now()); // the other cases' test events go first
    const before = g.receiver.received.length;
    const queuedBefore = g.queued.length;
    await put(b, {
      QueueConfigurations: [
        { Id: 'one', QueueArn: HOOK, Events: ['s3:ObjectCreated:*'], Filter: { Key: { FilterRules: [{ Name: 'prefix', Value: 'a/' }] } } },
        { Id: 'two', QueueArn: HOOK, Events: ['s3:ObjectCreated:*'], Filter: { Key: { FilterRules: [{ Name: 'prefix', Value: 'b/' }] } } },
        { Id: 'three', QueueArn: QUEUE, Events: ['s3:ObjectRemoved:*'] },
      ],
    });
    await g.deliver(Date.now());
    const hooks = g.receiver.received.slice(before);
    expect(hooks).toHaveLength(1); // one per destination, however many rules name it
    expect(hooks[0]!.json).toMatchObject({ Service: 'Amazon S3', Event: 's3:TestEvent', Bucket: b });
    expect(hooks[0]!.headers['x-shardgate-signature']).toBe(`sha256=${createHmac('sha256', HOOK_SECRET).update(hooks[0]!.body).digest('hex')}`);
    expect(hooks[0]!.headers['x-shardgate-event-id']).toMatch(/\S/);
    expect(g.queued.slice(queuedBefore)).toEqual([expect.objectContaining({ Event: 's3:TestEvent', Bucket: b })]);
  });
});
