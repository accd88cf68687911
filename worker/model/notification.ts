/**
 * A bucket's event notification configuration (docs/NOTIFICATIONS.md): the rules of
 * PutBucketNotificationConfiguration, how they are checked (AWS's errors), and which rules a
 * change matches. Stored as the bucket's `notification` state row (JSON of NotificationRule[]),
 * copied to every partition (catalog/partition-mirror.ts) so the partition that commits a
 * change can match it in the same transaction.
 * Spec: S3 "Event notification types and destinations", PutBucketNotificationConfiguration.
 */
import { S3Error } from './errors.ts';

/** The element a rule came in: S3 keeps the three lists apart, and so does GetBucketNotificationConfiguration. */
export type RuleKind = 'Queue' | 'Topic' | 'CloudFunction';

export interface NotificationRule {
  id: string;
  kind: RuleKind;
  /** The destination's ARN as put; its last `:` segment names a destination of the gateway's config. */
  arn: string;
  /** As put (`s3:ObjectCreated:*`, `s3:ObjectRemoved:Delete`, ...). */
  events: string[];
  prefix?: string;
  suffix?: string;
}

/** The events a change can be (what a rule may name, besides the `:*` groups). */
export const EVENT_NAMES = [
  's3:ObjectCreated:Put',
  's3:ObjectCreated:Post',
  's3:ObjectCreated:Copy',
  's3:ObjectCreated:CompleteMultipartUpload',
  's3:ObjectRemoved:Delete',
  's3:ObjectRemoved:DeleteMarkerCreated',
  's3:LifecycleExpiration:Delete',
  's3:LifecycleExpiration:DeleteMarkerCreated',
  's3:ObjectTagging:Put',
  's3:ObjectTagging:Delete',
] as const;
export type EventName = (typeof EVENT_NAMES)[number];

const GROUPS = ['s3:ObjectCreated:*', 's3:ObjectRemoved:*', 's3:LifecycleExpiration:*', 's3:ObjectTagging:*'];

/** Whether a rule's event (`s3:ObjectCreated:*` or an exact one) covers `event`. */
export function eventCovers(ruleEvent: string, event: string): boolean {
  if (ruleEvent === event) return true;
  return ruleEvent.endsWith(':*') && event.startsWith(ruleEvent.slice(0, -1));
}

/** The rules `event` on `key` matches, in the configuration's order. */
export function matchingRules(rules: readonly NotificationRule[], event: EventName, key: string): NotificationRule[] {
  return rules.filter(
    (r) =>
      r.events.some((e) => eventCovers(e, event)) && (r.prefix === undefined || key.startsWith(r.prefix)) && (r.suffix === undefined || key.endsWith(r.suffix)),
  );
}

/** The destination name an ARN designates (its last `:` segment); undefined when it is no ARN. */
export function destinationOf(arn: string): string | undefined {
  if (!/^arn:[^:]*:[^:]*:[^:]*:[^:]*:.+$/.test(arn)) return undefined;
  return arn.slice(arn.lastIndexOf(':') + 1);
}

const invalid = (message: string, fields: Record<string, string> = {}) => new S3Error('InvalidArgument', message, fields);

/**
 * Checks a configuration as AWS does: every event known (InvalidArgument "The event is not
 * supported for notifications"), Ids unique, and no two rules of one destination that could both
 * match one key for one event (AWS: "Configuration is ambiguously defined. Cannot have
 * overlapping suffixes in two rules if the prefixes are overlapping for the same event type.").
 * `known(name)` says whether the gateway's config declares a destination; the ARNs naming none
 * are listed as AWS lists the destinations it could not validate.
 */
export function checkRules(rules: readonly NotificationRule[], known: (name: string) => boolean): void {
  for (const r of rules) {
    if (r.events.length === 0) throw invalid('A notification configuration must name at least one event', { ArgumentName: 'Event' });
    for (const e of r.events) {
      if (!(EVENT_NAMES as readonly string[]).includes(e) && !GROUPS.includes(e))
        throw invalid('The event is not supported for notifications', { ArgumentName: 'Event', ArgumentValue: e });
    }
  }
  const ids = rules.map((r) => r.id);
  const twice = ids.find((id, i) => ids.indexOf(id) !== i);
  if (twice !== undefined) throw invalid('Same ID used for multiple configurations. IDs must be unique', { ArgumentName: 'Id', ArgumentValue: twice });
  const unknown = rules.filter((r) => {
    const name = destinationOf(r.arn);
    return name === undefined || !known(name);
  });
  if (unknown.length) {
    const fields: Record<string, string> = {};
    unknown.forEach((r, i) => {
      fields[`ArgumentName${i + 1}`] = r.arn;
      fields[`ArgumentValue${i + 1}`] = 'The destination is not declared in the gateway configuration (notifications.destinations)';
    });
    throw invalid('Unable to validate the following destination configurations', fields);
  }
  for (let i = 0; i < rules.length; i++)
    for (let j = i + 1; j < rules.length; j++) {
      const [a, b] = [rules[i]!, rules[j]!];
      if (destinationOf(a.arn) !== destinationOf(b.arn)) continue;
      const sharedEvent = a.events.some((x) => b.events.some((y) => eventCovers(x, y) || eventCovers(y, x)));
      if (sharedEvent && overlaps(a.prefix, b.prefix, (p, q) => p.startsWith(q)) && overlaps(a.suffix, b.suffix, (p, q) => p.endsWith(q)))
        throw invalid(
          'Configuration is ambiguously defined. Cannot have overlapping suffixes in two rules if the prefixes are overlapping for the same event type.',
          { ArgumentName: 'Event', ArgumentValue: a.id },
        );
    }
}

/** Two prefixes (or suffixes) overlap when some key has both: one extends the other, or either is absent. */
function overlaps(a: string | undefined, b: string | undefined, extendsOf: (p: string, q: string) => boolean): boolean {
  return a === undefined || b === undefined || extendsOf(a, b) || extendsOf(b, a);
}

/** The stored row read back (null: none or unreadable, so a bad row never blocks a write). */
export function parseStoredNotification(value: string | null): NotificationRule[] | null {
  if (value === null) return null;
  try {
    const rules = JSON.parse(value) as NotificationRule[];
    return Array.isArray(rules) && rules.length ? rules : null;
  } catch {
    return null;
  }
}
