/**
 * `npm run events:listen`: a webhook receiver for `npm start`'s "local-webhook" destination
 * (wrangler.toml: http://127.0.0.1:9099/events, signed with "shardgate-dev-events"): prints one
 * line per event received, with whether its x-shardgate-signature checks out. Answers 200 to
 * each POST (503 with --fail, to watch the gateway retry: `shardgate events BUCKET`).
 *   npm run events:listen [-- --port N] [-- --fail]
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '9099' }, secret: { type: 'string', default: 'shardgate-dev-events' }, fail: { type: 'boolean' } },
});

const signed = (body: string, header: string | undefined): boolean => {
  const want = Buffer.from(`sha256=${createHmac('sha256', values.secret!).update(body).digest('hex')}`);
  const got = Buffer.from(header ?? '');
  return got.length === want.length && timingSafeEqual(got, want);
};

const server = createServer(async (req, res) => {
  const body = Buffer.concat(await req.toArray()).toString('utf8');
  const ok = signed(body, req.headers['x-shardgate-signature'] as string | undefined);
  try {
    const doc = JSON.parse(body) as {
      Records?: { eventName: string; eventTime: string; s3: { bucket: { name: string }; object: { key: string; size?: number; sequencer: string } } }[];
      Event?: string;
      Bucket?: string;
    };
    for (const r of doc.Records ?? [])
      console.log(
        `${r.eventTime}  ${r.eventName.padEnd(40)} ${r.s3.bucket.name}/${decodeURIComponent(r.s3.object.key.replace(/\+/g, ' '))}${r.s3.object.size === undefined ? '' : `  ${r.s3.object.size} B`}  seq ${r.s3.object.sequencer}  ${ok ? 'signed' : 'BAD SIGNATURE'}`,
      );
    if (doc.Event) console.log(`${new Date().toISOString()}  ${doc.Event.padEnd(40)} ${doc.Bucket}  ${ok ? 'signed' : 'BAD SIGNATURE'}`);
  } catch {
    console.log(`not JSON: ${body.slice(0, 200)}`);
  }
  res.writeHead(values.fail ? 503 : 200).end();
});
server.listen(Number(values.port), '127.0.0.1', () =>
  console.log(`listening for events on http://127.0.0.1:${values.port}/events${values.fail ? ' (answering 503)' : ''}`),
);
