// Runs one s3rver (bucket "b") on 127.0.0.1 in a process of its own, so that a test can stop,
// pause (SIGSTOP) and restart a real S3 endpoint. argv: port (0 = any) and data directory.
// Prints {"port": N} on stdout once listening. Must run with --openssl-legacy-provider: s3rver
// 3.7.1 encrypts ListObjectsV2 continuation tokens with DES, which OpenSSL 3 disables, so any
// truncated listing answers 500 without it.
'use strict';
const S3rver = require('s3rver');

const [port, directory] = process.argv.slice(2);
const server = new S3rver({ port: Number(port), address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: 'b' }] });
server.run().then((address) => process.stdout.write(JSON.stringify({ port: address.port }) + '\n'));
process.on('SIGTERM', () => process.exit(0));
// Never outlive the test process: its end closes our stdin.
process.stdin.on('end', () => process.exit(0)).resume();
