/**
 * The operator's API under `/_shardgate/admin/` (a path no bucket can have), POST only, signed
 * with SigV4 by one of the configured access keys (anonymous access never applies here):
 *   rebuild?bucket=NAME     recover the bucket's index from the shard headers (worker/ec/rebuild.ts)
 *   scrub[?mode=heads|verify]  one scrubber pass now, as the cron runs it
 *   collect                 one garbage-collector pass now
 * Answers are JSON; errors are the S3 error code and message as JSON, with the S3 status.
 * `curl --aws-sigv4 "aws:amz:<region>:s3" --user KEY:SECRET -X POST <url>` signs such a request.
 */
import { collectGarbage } from './upkeep/collector.ts';
import { rebuildIndex } from './upkeep/rebuild.ts';
import { scrubBatch } from './upkeep/scrubber.ts';
import type { Gateway } from './gateway.ts';
import { toS3Error } from './error-map.ts';
import { S3Error } from './model/errors.ts';

export const ADMIN_PREFIX = '/_shardgate/admin/';

export async function handleAdmin(request: Request, g: Gateway): Promise<Response> {
  try {
    if (request.method !== 'POST') throw new S3Error('MethodNotAllowed');
    const auth = await g.authenticate(request, request.url);
    if (!auth.accessKeyId) throw new S3Error('AccessDenied', 'the admin API needs a signed request');
    const url = new URL(request.url);
    const action = url.pathname.slice(ADMIN_PREFIX.length);
    if (action === 'rebuild') {
      const bucket = url.searchParams.get('bucket');
      if (!bucket) throw new S3Error('InvalidArgument', 'rebuild needs ?bucket=NAME');
      await g.catalog.createBucket(bucket, g.config.region).catch((err) => {
        if (!(err instanceof S3Error && err.code === 'BucketAlreadyOwnedByYou')) throw err;
      });
      return Response.json(await rebuildIndex(bucket, g.backends, g.catalog));
    }
    if (action === 'scrub') {
      const mode = url.searchParams.get('mode') ?? (g.config.scrub.mode === 'off' ? 'heads' : g.config.scrub.mode);
      if (mode !== 'heads' && mode !== 'verify') throw new S3Error('InvalidArgument', 'mode is heads or verify');
      return Response.json(await scrubBatch(g.catalog, g.units.byId, { mode, objectsPerRun: g.config.scrub.objectsPerRun }, g.enqueueRepair));
    }
    if (action === 'collect') return Response.json({ collected: await collectGarbage(g.catalog, g.units.byId) });
    throw new S3Error('InvalidRequest', `unknown admin action "${action}" (rebuild, scrub, collect)`);
  } catch (err) {
    const e = toS3Error(err);
    return Response.json({ code: e.code, message: e.message }, { status: e.status });
  }
}
