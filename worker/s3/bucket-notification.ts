/**
 * PutBucketNotificationConfiguration and GetBucketNotificationConfiguration (model/notification.ts;
 * the outbox and its delivery: catalog/sql-outbox.ts, catalog/event-delivery.ts; docs/NOTIFICATIONS.md).
 * Spec: S3 PutBucketNotificationConfiguration: a NotificationConfiguration of
 * TopicConfiguration, QueueConfiguration and CloudFunctionConfiguration elements, each with an
 * optional Id (S3 makes one up when absent), its ARN (Topic, Queue, CloudFunction), one or more
 * Event and an optional Filter/S3Key/FilterRule list (Name prefix|suffix, Value); an empty
 * document removes every rule; 200 with no body. EventBridgeConfiguration is refused (no
 * EventBridge here). Get answers the same document (an empty one when none is set).
 * The ARNs are checked against the gateway's destinations by the catalog, in the transaction that
 * stores the rules and queues the s3:TestEvent each destination of the new rules receives.
 */
import type { NotificationRule, RuleKind } from '../model/notification.ts';
import { S3Error } from '../model/errors.ts';
import { readXmlBody } from './body.ts';
import type { S3Context } from './context.ts';
import { el, group, xmlDocument, xmlResponse } from './xml.ts';
import { childText, childrenNamed, expectRoot, malformedXml, parseXml, type XmlElement } from './xml-parse.ts';

/** Element name -> the kind of rule and the element holding its ARN. */
const KINDS: Record<string, { kind: RuleKind; arn: string }> = {
  TopicConfiguration: { kind: 'Topic', arn: 'Topic' },
  QueueConfiguration: { kind: 'Queue', arn: 'Queue' },
  CloudFunctionConfiguration: { kind: 'CloudFunction', arn: 'CloudFunction' },
};
const ELEMENT_OF: Record<RuleKind, string> = { Topic: 'TopicConfiguration', Queue: 'QueueConfiguration', CloudFunction: 'CloudFunctionConfiguration' };

/** The document's rules in their order (none: notifications off). MalformedXML / InvalidArgument as S3. */
export function parseNotificationConfiguration(text: string): NotificationRule[] {
  const root = expectRoot(parseXml(text), 'NotificationConfiguration');
  const rules: NotificationRule[] = [];
  for (const c of root.children) {
    if (c.name === 'EventBridgeConfiguration')
      throw new S3Error('InvalidArgument', 'EventBridge is not a destination of this gateway', { ArgumentName: 'EventBridgeConfiguration' });
    const kind = KINDS[c.name];
    if (!kind) throw malformedXml(`unexpected <${c.name}> in <NotificationConfiguration>`);
    rules.push(parseRule(c, kind));
  }
  return rules;
}

function parseRule(e: XmlElement, { kind, arn: arnElement }: { kind: RuleKind; arn: string }): NotificationRule {
  for (const c of e.children) if (!['Id', arnElement, 'Event', 'Filter'].includes(c.name)) throw malformedXml(`unexpected <${c.name}> in <${e.name}>`);
  const arn = childText(e, arnElement);
  if (!arn) throw malformedXml(`<${e.name}> needs a <${arnElement}>`);
  const events = childrenNamed(e, 'Event').map((x) => x.text.trim());
  const id = childText(e, 'Id')?.trim() || crypto.randomUUID(); // S3 makes one up too
  const rule: NotificationRule = { id, kind, arn: arn.trim(), events };
  const filters = childrenNamed(e, 'Filter');
  if (filters.length > 1) throw malformedXml('<Filter> repeated');
  if (filters[0]) Object.assign(rule, parseFilter(filters[0]));
  return rule;
}

function parseFilter(filter: XmlElement): Pick<NotificationRule, 'prefix' | 'suffix'> {
  const out: Pick<NotificationRule, 'prefix' | 'suffix'> = {};
  for (const c of filter.children) if (c.name !== 'S3Key') throw malformedXml(`unexpected <${c.name}> in <Filter>`);
  for (const s3Key of childrenNamed(filter, 'S3Key')) {
    for (const rule of s3Key.children) {
      if (rule.name !== 'FilterRule') throw malformedXml(`unexpected <${rule.name}> in <S3Key>`);
      const name = childText(rule, 'Name')?.trim().toLowerCase();
      const value = childText(rule, 'Value') ?? '';
      if (name !== 'prefix' && name !== 'suffix')
        throw new S3Error('InvalidArgument', 'filter rule name must be either prefix or suffix', { ArgumentName: 'FilterRule', ArgumentValue: name ?? '' });
      if (out[name] !== undefined)
        throw new S3Error('InvalidArgument', `Cannot specify more than one ${name} rule in a filter.`, { ArgumentName: 'FilterRule', ArgumentValue: name });
      if (value.length > 1024) throw new S3Error('InvalidArgument', `The ${name} is longer than 1024 characters`, { ArgumentName: 'FilterRule' });
      out[name] = value;
    }
  }
  return out;
}

export function notificationConfigurationXml(rules: readonly NotificationRule[] | null): string {
  const ruleXml = (r: NotificationRule) => {
    const filter =
      r.prefix === undefined && r.suffix === undefined
        ? ''
        : group(
            'Filter',
            group(
              'S3Key',
              ...(r.prefix === undefined ? [] : [group('FilterRule', el('Name', 'Prefix'), el('Value', r.prefix))]),
              ...(r.suffix === undefined ? [] : [group('FilterRule', el('Name', 'Suffix'), el('Value', r.suffix))]),
            ),
          );
    return group(ELEMENT_OF[r.kind], el('Id', r.id), el(r.kind, r.arn), ...r.events.map((e) => el('Event', e)), filter);
  };
  // S3 answers the Topic, Queue then CloudFunction lists, each in the order put.
  const order: RuleKind[] = ['Topic', 'Queue', 'CloudFunction'];
  return xmlDocument('NotificationConfiguration', ...order.flatMap((k) => (rules ?? []).filter((r) => r.kind === k).map(ruleXml)));
}

export async function PutBucketNotificationConfiguration(s3: S3Context): Promise<Response> {
  const rules = parseNotificationConfiguration(await readXmlBody(s3, { requireDigest: false }));
  await s3.config.putBucketNotification(s3.bucket!, rules.length ? rules : null);
  return new Response(null, { status: 200 });
}

export async function GetBucketNotificationConfiguration(s3: S3Context): Promise<Response> {
  return xmlResponse(notificationConfigurationXml(await s3.config.getBucketNotification(s3.bucket!)));
}
