/**
 * Delivery of server access logs: records a request made go into its logging target bucket's
 * catalog instance (catalog/sql-access-log.ts), and a batch that is due rolls into ONE log
 * object in the target bucket, written by the normal object writer (erasure coded, sealed like
 * any object) with If-None-Match * under the key its claim fixed, then acknowledged: exactly once
 * (sql-access-log.ts says how a worker dying midway is covered).
 * A batch is due when its oldest record is `rollMs` old. Checked: by every logged request's
 * append (the reply hands a due batch over); by a timer the request that started a batch keeps
 * alive (its waitUntil) when `rollMs` is short enough for that (TIMER_MAX_MS: a Worker keeps
 * work alive about 30 s after its response), so a bucket that goes quiet still gets its log on
 * time; and by the cron (`sweep`) for longer intervals.
 * Everything here is best effort for the client: it runs after the response, never throws, and
 * a failure leaves the records waiting for the next check.
 * The target is checked again before each log object (issue 37; PutBucketLogging checked the
 * signer's scope and the target then, s3/bucket-logging.ts): a target whose bucket policy now
 * denies s3:PutObject on the log key to the writer, or that now has a default Object Lock
 * retention, gets nothing; the batch waits (and is logged) until that changes or the logging
 * configuration does. The writer is judged as AWS's is: the service principal
 * `logging.s3.amazonaws.com` (a Deny naming it, or everyone, refuses it), with aws:SourceArn the
 * source bucket of the batch's records (each one's, when several log into one prefix) and
 * aws:SourceAccount the account that owns both buckets. An Allow is not required: source and
 * target are one account's (PutBucketLogging refuses anything else), whose owner asked for the
 * logs; AWS delivers only where the target's policy allows the service (docs/COMPATIBILITY.md,
 * "Server access logging").
 */
import type { ObjectCatalog } from '../catalog/ports.ts';
import type { AccessLogBatch } from '../catalog/sql-access-log.ts';
import type { LogGroup } from '../model/bucket-logging.ts';
import { parseBucketPolicy } from '../model/bucket-policy.ts';
import { LOGGING_SERVICE, policyDenies } from '../model/policy-eval.ts';
import type { ConditionContext } from '../model/policy-conditions.ts';
import { bucketOwner } from '../model/account.ts';
import { S3Error } from '../model/errors.ts';
import type { ObjectStore } from '../model/object-store.ts';
import { outsideRequestNotes } from '../model/request-notes.ts';
import { errorMessage } from '../model/error-message.ts';

/** Longest roll interval timed by a request's own waitUntil. */
export const TIMER_MAX_MS = 20_000;
/** Batches one check delivers at most (one target's groups). */
const BATCHES_PER_CHECK = 8;

export interface AccessLogDeps {
  catalog: ObjectCatalog;
  store: Pick<ObjectStore, 'putObject'>;
  rollMs: number;
  log: (line: Record<string, unknown>, error?: boolean) => void;
  /** Runs delivery work as background work of its own (not the request's: its budget and notes). */
  detached?: <T>(keepAlive: (p: Promise<unknown>) => void, fn: () => Promise<T>) => Promise<T>;
}

const errorText = (err: unknown) => errorMessage(err);

/** The source buckets a batch's records name (a record's second field: model/access-log-record.ts). */
export function sourceBuckets(body: string): string[] {
  const sources = new Set<string>();
  for (const line of body.split('\n')) {
    const fields = line.split(' ', 2);
    if (fields.length === 2) sources.add(fields[1]!);
  }
  return [...sources];
}

/** The condition keys AWS sets on a log delivery for `source`, owned by `account`. */
const deliveryContext =
  (source: string, account: string): ConditionContext =>
  (key) =>
    key === 'aws:sourcearn' ? [`arn:aws:s3:::${source}`] : key === 'aws:sourceaccount' ? [account] : undefined;

export class AccessLogDelivery {
  constructor(private readonly d: AccessLogDeps) {}

  get rollMs(): number {
    return this.d.rollMs;
  }

  /**
   * A request's records for `target`, whose owner must still be `owner` (model/account.ts ownerRow:
   * null for the default account). Never throws; `keepAlive` keeps the timer's roll alive.
   */
  async record(
    target: string,
    group: LogGroup,
    lines: { at: number; line: string }[],
    keepAlive: (p: Promise<unknown>) => void,
    owner: string | null = null,
  ): Promise<void> {
    await this.detach(keepAlive, async () => {
      try {
        const r = await this.d.catalog.appendAccessLog(target, group, lines, new Date(), this.d.rollMs, owner);
        if (r.dropped)
          this.d.log({ msg: 'access log', level: 'warn', outcome: 'dropped', target, records: r.dropped, why: 'too many records waiting for delivery' });
        if (r.batch) await this.deliver(target, r.batch);
        if (r.first && this.d.rollMs <= TIMER_MAX_MS) {
          keepAlive(
            this.detach(keepAlive, async () => {
              await new Promise((resolve) => setTimeout(resolve, this.d.rollMs + 100));
              await this.deliverDue(target);
            }),
          );
        }
      } catch (err) {
        // The target bucket is gone (NoSuchBucket) or the catalog is unreachable: nothing to tell the client.
        this.d.log({ msg: 'access log', level: 'warn', outcome: 'not recorded', target, records: lines.length, error: errorText(err) });
      }
    });
  }

  /** Delivers what is due in `target` now; returns how many log objects were written. Never throws. */
  async deliverDue(target: string): Promise<number> {
    let n = 0;
    try {
      for (let i = 0; i < BATCHES_PER_CHECK; i++) {
        const batch = await this.d.catalog.takeAccessLog(target, new Date(), this.d.rollMs);
        if (!batch || !(await this.deliver(target, batch))) break;
        n++;
      }
    } catch (err) {
      if (!(err instanceof S3Error && err.code === 'NoSuchBucket'))
        this.d.log({ msg: 'access log', level: 'warn', outcome: 'check failed', target, error: errorText(err) });
    }
    return n;
  }

  /** The cron's check of every bucket (each may be a target); returns log objects written. */
  async sweep(buckets: string[]): Promise<number> {
    let n = 0;
    for (const b of buckets) n += await this.deliverDue(b);
    return n;
  }

  /** Writes the batch's object and acknowledges it; false when it stays claimed (retried later). */
  private async deliver(target: string, batch: AccessLogBatch): Promise<boolean> {
    const withheld = await this.targetRefusal(target, batch).catch((err: unknown) => `the target's settings could not be read: ${errorText(err)}`);
    if (withheld) {
      this.d.log({ msg: 'access log', level: 'warn', outcome: 'withheld', target, key: batch.objectKey, why: withheld });
      return false;
    }
    const bytes = new TextEncoder().encode(batch.body);
    try {
      await outsideRequestNotes(() =>
        this.d.store.putObject(target, batch.objectKey, new ReadableStream({ start: (c) => (c.enqueue(bytes), c.close()) }), {
          contentLength: bytes.length,
          metadata: { user: {}, contentType: 'text/plain' },
          checksum: null,
          conditions: { ifNoneMatch: '*' },
        }),
      );
    } catch (err) {
      // 412/409: an earlier delivery of this very batch wrote it (the claim fixed the key).
      const written = err instanceof S3Error && (err.code === 'PreconditionFailed' || err.code === 'ConditionalRequestConflict');
      if (!written) {
        this.d.log({ msg: 'access log', level: 'warn', outcome: 'delivery failed', target, key: batch.objectKey, error: errorText(err) });
        return false;
      }
    }
    await this.d.catalog.accessLogDelivered(target, batch.id);
    return true;
  }

  /** Why `target` may not receive `batch`'s log object now (null: it may). */
  private async targetRefusal(target: string, batch: AccessLogBatch): Promise<string | null> {
    if ((await this.d.catalog.getObjectLock(target))?.rule) return 'the target bucket has a default Object Lock retention';
    const { rows } = await this.d.catalog.getBucketSettings(target);
    if (rows.policy === null) return null;
    const policy = parseBucketPolicy(rows.policy, target);
    const resource = `arn:aws:s3:::${target}/${batch.objectKey}`;
    const account = bucketOwner(rows.owner);
    for (const source of sourceBuckets(batch.body)) {
      const context = deliveryContext(source, account);
      if (policyDenies(policy, { actions: ['s3:PutObject'], resource, accessKeyId: null, service: LOGGING_SERVICE, context }))
        return `the target bucket's policy denies s3:PutObject on the log key to ${LOGGING_SERVICE} (records of ${source})`;
    }
    return null;
  }

  private detach<T>(keepAlive: (p: Promise<unknown>) => void, fn: () => Promise<T>): Promise<T> {
    return this.d.detached ? this.d.detached(keepAlive, fn) : fn();
  }
}
