/**
 * Listing as boto3 sees it (Debian's python3-boto3, defaults: it adds `encoding-type=url` to every
 * ListObjects/ListObjectsV2 on its own and decodes exactly the fields S3 encodes), against the
 * product, after ceph's s3-tests: a prefix or delimiter of control characters comes back as
 * sent (v1 and v2), an empty ContinuationToken lists from the start and is echoed, StartAfter
 * inside a common prefix does not return that prefix. Objects are written with the JS SDK (boto3
 * would wait 1 s per PUT on workerd's unanswered `Expect: 100-continue`).
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { needs, toolPath } from '../support/prerequisites.ts';
import { CREDENTIALS, s3Client, startTestWorker, type TestWorker } from './harness.ts';

const SCRIPT = `
import boto3, json, sys
s3 = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3], region_name='us-east-1')
keys = lambda r: [c['Key'] for c in r.get('Contents', [])]
prefixes = lambda r: [p['Prefix'] for p in r.get('CommonPrefixes', [])]
out = {}
r = s3.list_objects(Bucket='boto3-list', Prefix='\\x0a')
out['v1 prefix'] = [r.get('Prefix'), keys(r)]
r = s3.list_objects_v2(Bucket='boto3-list', Prefix='\\x0a')
out['v2 prefix'] = [r.get('Prefix'), keys(r)]
r = s3.list_objects(Bucket='boto3-list', Delimiter='\\x0a')
out['v1 delimiter'] = [r.get('Delimiter'), keys(r), prefixes(r)]
r = s3.list_objects_v2(Bucket='boto3-list', Delimiter='\\x0a')
out['v2 delimiter'] = [r.get('Delimiter'), keys(r), prefixes(r)]
r = s3.list_objects_v2(Bucket='boto3-list', ContinuationToken='')
out['empty token'] = [r.get('ContinuationToken'), keys(r), r['IsTruncated']]
r = s3.list_objects_v2(Bucket='boto3-list', Delimiter='/', StartAfter='a/b')
out['start after'] = [keys(r), prefixes(r)]
r = s3.list_objects(Bucket='boto3-list', Delimiter='/', Marker='a/b')
out['marker'] = [keys(r), prefixes(r)]
r = s3.list_objects_v2(Bucket='boto3-list', Prefix='ctl')
out['control keys'] = keys(r)
print(json.dumps(out))
`;

const KEYS = ['a/a', 'a/c', 'b', 'nl\nkey', 'ctl\tkey', 'ctl\rkey'];

describe('listing through boto3 (s3-tests style)', needs('boto3'), () => {
  let worker: TestWorker;
  beforeAll(async () => {
    worker = await startTestWorker('engine');
    const client = s3Client(worker.url);
    await client.send(new CreateBucketCommand({ Bucket: 'boto3-list' }));
    for (const key of KEYS) await client.send(new PutObjectCommand({ Bucket: 'boto3-list', Key: key, Body: key }));
  });
  afterAll(async () => {
    await worker?.dispose();
  });

  it('echoes control-character prefixes and delimiters, empty tokens, and skips prefixes before StartAfter', async () => {
    let stdout: string;
    try {
      ({ stdout } = await promisify(execFile)(toolPath('boto3'), ['-c', SCRIPT, worker.url.origin, CREDENTIALS.accessKeyId, CREDENTIALS.secretAccessKey], {
        timeout: 60_000,
      }));
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`${e.message}\n${e.stderr}`);
    }
    expect(JSON.parse(stdout)).toEqual({
      'v1 prefix': ['\n', []],
      'v2 prefix': ['\n', []],
      'v1 delimiter': ['\n', ['a/a', 'a/c', 'b', 'ctl\tkey', 'ctl\rkey'], ['nl\n']],
      'v2 delimiter': ['\n', ['a/a', 'a/c', 'b', 'ctl\tkey', 'ctl\rkey'], ['nl\n']],
      'empty token': ['', ['a/a', 'a/c', 'b', 'ctl\tkey', 'ctl\rkey', 'nl\nkey'], false],
      'start after': [['b', 'ctl\tkey', 'ctl\rkey', 'nl\nkey'], []],
      marker: [['b', 'ctl\tkey', 'ctl\rkey', 'nl\nkey'], []],
      'control keys': ['ctl\tkey', 'ctl\rkey'],
    });
  });
});
