/**
 * What `npm start` prints once the gateway answers: the endpoint, the development key, and lines
 * to copy into a shell for awscli, boto3 and rclone. The endpoint is given as 127.0.0.1, not
 * localhost: the SDKs address buckets path-style for an IP endpoint on their own (for a host name
 * they try `bucket.localhost`), and nothing has to resolve `localhost` to the right family.
 * Debian's awscli 2.9 and boto3 1.26 predate AWS_ENDPOINT_URL (awscli 2.13, boto3 1.28), so the
 * commands also pass the endpoint explicitly.
 */
import { relative } from 'node:path';
import { ROOT } from './paths.ts';

export interface BannerInput {
  port: number;
  /** workerd's internal port behind the front (wrangler's "Ready on" line names it). */
  workerPort: number;
  region: string;
  /** The first access key with its secret in the config (wrangler.toml's development key). */
  credential: { accessKeyId: string; secretAccessKey: string } | null;
  stateDir: string;
  cronSeconds: number;
}

export function banner(b: BannerInput): string {
  const endpoint = `http://127.0.0.1:${b.port}`;
  const state = relative(ROOT, b.stateDir).startsWith('..') ? b.stateDir : relative(ROOT, b.stateDir);
  const cron = b.cronSeconds > 0 ? `collector and scrubber every ${b.cronSeconds} s` : 'local cron off';
  const lines = [
    '',
    `shardgate local gateway: ${endpoint}  (also http://localhost:${b.port}; path-style; region ${b.region})`,
    `state: ${state} (npm run reset clears it) · ${cron} · status: ${endpoint}/_shardgate/status`,
    `web console: ${endpoint}/_shardgate/console (sign in with an access key: docs/CONSOLE.md)`,
    `(workerd listens on ${b.workerPort} behind the front: use ${b.port}; workerd alone stalls clients on Expect: 100-continue)`,
  ];
  if (!b.credential) {
    lines.push('access keys: the ones in your SHARDGATE_CONFIG (their secrets are Worker secrets, not printed)');
    return lines.join('\n') + '\n';
  }
  const { accessKeyId: id, secretAccessKey: secret } = b.credential;
  lines.push(
    `access key id ${id} · secret access key ${secret}`,
    '',
    '# awscli, boto3, AWS SDKs: the key from the environment',
    `export AWS_ACCESS_KEY_ID=${id} AWS_SECRET_ACCESS_KEY=${secret} AWS_DEFAULT_REGION=${b.region} AWS_ENDPOINT_URL=${endpoint}`,
    `aws --endpoint-url ${endpoint} s3 mb s3://demo`,
    `aws --endpoint-url ${endpoint} s3 cp ./README.md s3://demo/`,
    `python3 -c "import boto3; print(boto3.client('s3', endpoint_url='${endpoint}').list_objects_v2(Bucket='demo').get('KeyCount'))"`,
    '# rclone: a remote named shardgate, from the environment',
    `export RCLONE_CONFIG_SHARDGATE_TYPE=s3 RCLONE_CONFIG_SHARDGATE_PROVIDER=Other RCLONE_CONFIG_SHARDGATE_ENDPOINT=${endpoint} RCLONE_CONFIG_SHARDGATE_ACCESS_KEY_ID=${id} RCLONE_CONFIG_SHARDGATE_SECRET_ACCESS_KEY=${secret} RCLONE_CONFIG_SHARDGATE_REGION=${b.region}`,
    'rclone ls shardgate:demo',
    '',
  );
  return lines.join('\n') + '\n';
}
