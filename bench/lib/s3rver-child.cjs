// One s3rver (bucket "b") on 127.0.0.1 for the benchmark, in a process of its own, counting
// the HTTP requests it serves (by method) and the request body bytes (Content-Length) it receives. argv: port
// (0 = any) and data directory. Prints {"port": N} once listening; answers each "stats" line on
// stdin with one JSON line of counters. Needs --openssl-legacy-provider (see test/backends/
// s3rver-child.cjs). Exits when stdin closes, so it never outlives the benchmark.
'use strict';
const S3rver = require('s3rver');
const readline = require('node:readline');

const [port, directory] = process.argv.slice(2);
const stats = { requests: 0, byMethod: {}, bodyBytes: 0, responseBytes: 0 };
const server = new S3rver({ port: Number(port), address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: 'b' }] });
server.run().then((address) => {
  server.httpServer.keepAliveTimeout = 60_000;
  server.httpServer.on('request', (req, res) => {
    stats.requests++;
    stats.byMethod[req.method] = (stats.byMethod[req.method] || 0) + 1;
    // Content-Length, not a 'data' listener: that would switch the request to flowing mode and
    // lose the first chunks before s3rver reads the body.
    stats.bodyBytes += Number(req.headers['content-length'] || 0);
    const write = res.write.bind(res),
      end = res.end.bind(res);
    res.write = (chunk, ...rest) => {
      if (chunk && typeof chunk !== 'function') stats.responseBytes += chunk.length;
      return write(chunk, ...rest);
    };
    res.end = (chunk, ...rest) => {
      if (chunk && typeof chunk !== 'function') stats.responseBytes += chunk.length;
      return end(chunk, ...rest);
    };
  });
  process.stdout.write(JSON.stringify({ port: address.port }) + '\n');
});
readline
  .createInterface({ input: process.stdin })
  .on('line', (line) => {
    if (line.trim() === 'stats') process.stdout.write(JSON.stringify(stats) + '\n');
  })
  .on('close', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
