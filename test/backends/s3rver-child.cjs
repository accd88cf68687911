// Runs one s3rver (bucket "b") on 127.0.0.1 in a process of its own, so that a test can stop,
// pause (SIGSTOP) and restart a real S3 endpoint. argv: port (0 = any), data directory, and
// optionally the buckets to serve, comma-separated (default "b").
// Prints {"port": N} on stdout once listening. Must run with --openssl-legacy-provider: s3rver
// 3.7.1 encrypts ListObjectsV2 continuation tokens with DES, which OpenSSL 3 disables, so any
// truncated listing answers 500 without it.
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { Transform } = require('node:stream');
const { pipeline } = require('node:stream/promises');
// One bundled file when the test run made it (test/backends/s3rver-bundle.ts: a third less start-up CPU).
const { S3rver, FilesystemStore } = process.env.SHARDGATE_S3RVER_BUNDLE
  ? require(process.env.SHARDGATE_S3RVER_BUNDLE)
  : { S3rver: require('s3rver'), FilesystemStore: require('s3rver/lib/stores/filesystem') };

// A PUT is atomic on S3: readers see the old object or the whole new one, and an upload the
// client aborts stores nothing. s3rver 3.7.1 streams the body straight into the object's file,
// which the PUT truncates as it starts: an aborted upload leaves a partial object that GET and
// ListObjectsV2 serve, and an aborted overwrite destroys the intact copy it was replacing (the
// gateway's repairs rewrite shards on a backend just back up, and abort them when another
// backend fails). So the body goes to a temp file beside the object (no "._S3rver_object"
// suffix: never listed), renamed over it once the whole body has arrived.
let uploads = 0;
FilesystemStore.prototype.putObject = async function putObject(object) {
  const objectPath = this.getResourcePath(object.bucket, object.key, 'object');
  const temp = `${objectPath}.${process.pid}-${++uploads}.upload`;
  await fs.promises.mkdir(path.dirname(objectPath), { recursive: true });
  const md5 = crypto.createHash('md5');
  let size = 0;
  try {
    const content = Buffer.isBuffer(object.content) ? [object.content] : object.content;
    const count = new Transform({
      transform(chunk, encoding, callback) {
        md5.update(chunk);
        size += chunk.length;
        callback(null, chunk);
      },
    });
    // Rejects when the request ends early (the client aborted): nothing is committed.
    await pipeline(content, count, fs.createWriteStream(temp));
    const digest = md5.digest('hex');
    await this.putMetadata(object.bucket, object.key, object.metadata, digest);
    await fs.promises.rename(temp, objectPath); // the commit
    return { size, md5: digest };
  } finally {
    await fs.promises.rm(temp, { force: true });
  }
};

const [port, directory, buckets = 'b'] = process.argv.slice(2);
const server = new S3rver({
  port: Number(port),
  address: '127.0.0.1',
  silent: true,
  directory,
  configureBuckets: buckets.split(',').map((name) => ({ name })),
});
// s3rver logs every request through koa-logger and winston even when silent: the line is built,
// coloured and passed down to a transport that drops it, and koa-logger wraps each response body
// in a stream that counts its bytes. Silent here, so the middleware goes (its errors still reach
// ctx.logger, which s3rver sets apart from it). Measured (2 cores, AMD EPYC), s3rver's CPU per
// GET of 1 MiB 4.5-5.2 -> 3.4-3.5 ms, of 64 KiB 1.5 -> 1.2-1.3 ms; PUTs unchanged (2.5 ms, 7.5 at 1 MiB).
if (server.middleware[0]?.name !== 'logger') throw new Error('s3rver changed: its request logger is not its first middleware');
server.middleware.shift();
server.run().then((address) => process.stdout.write(JSON.stringify({ port: address.port }) + '\n'));
process.on('SIGTERM', () => process.exit(0));
// Never outlive the test process: its end closes our stdin.
process.stdin.on('end', () => process.exit(0)).resume();
