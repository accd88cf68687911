/**
 * `shardgate events BUCKET`: the bucket's event notifications (POST /_shardgate/admin/events,
 * docs/NOTIFICATIONS.md): per destination what waits, what was delivered, retried,
 * dead-lettered and dropped, and the age of the oldest waiting event; then the newest events
 * with their delivery state.
 */
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { printJson, table } from '../format.ts';
import { EVENT_HEADER, eventRows, GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient, type EventDestinationLike } from '../gateway-client.ts';

const HELP = `usage: shardgate events BUCKET [--limit N] [--json] [gateway options]

The bucket's event notifications: per destination, events waiting, delivered, retried (failed
attempts), dead-lettered (given up after notifications.maxAttempts), dropped (the outbox was full),
the oldest waiting event's age and the last error; then the newest events (default 20) with their
state: queued (waiting), delivered, or dead.

  --limit N                  how many of the newest events (1 to 1000, default 20)

${GATEWAY_HELP}`;

interface EventsAnswer {
  bucket: string;
  at: number;
  destinations: EventDestinationLike[];
  events: {
    eventId: string;
    destination: string;
    eventName: string;
    key: string;
    sequencer: string;
    created: number;
    state: string;
    attempts: number;
    doneAt: number | null;
    lastError: string | null;
  }[];
}

export const command: Command = {
  name: 'events',
  summary: "a bucket's event notifications: delivery per destination and the last events",
  help: HELP,
  async run(argv) {
    const { values, positionals } = parseArgs({ args: argv, options: { ...GATEWAY_OPTIONS, limit: { type: 'string' } }, strict: true, allowPositionals: true });
    const bucket = positionals[0];
    if (!bucket || positionals.length > 1) throw new CliError('give one BUCKET (shardgate events --help)');
    const r = (await new GatewayClient(values).admin('events', { bucket, limit: values.limit })) as EventsAnswer;
    if (values.json) {
      printJson(r);
      return 0;
    }
    const lines: string[] = [];
    const rows = eventRows([{ bucket: r.bucket, events: r.destinations }]);
    lines.push(rows.length ? table([EVENT_HEADER, ...rows]) : `${r.bucket}: no event queued yet (no notification configuration, or no change matched it)`);
    if (r.events.length) {
      lines.push(
        '',
        table([
          ['TIME', 'EVENT', 'KEY', 'DESTINATION', 'STATE', 'ATTEMPTS', 'SEQUENCER', 'EVENT ID', 'LAST ERROR'],
          ...r.events.map((e) => [
            new Date(e.created).toISOString(),
            e.eventName,
            e.key,
            e.destination,
            e.state,
            String(e.attempts),
            e.sequencer,
            e.eventId,
            e.lastError ?? '',
          ]),
        ]),
      );
    }
    process.stdout.write(lines.join('\n') + '\n');
    return r.destinations.some((d) => d.deadLettered > 0) ? 1 : 0;
  },
};
