/**
 * The Worker entry. Until the S3 surface is wired to the erasure-coded engine (issues 3 and 4),
 * it serves the coder's status: which kernel runs here, its self-test, and a timed encode of
 * one 4+2 stripe, so `npm start` shows what works today.
 */
import { Hono } from 'hono';
import { activeKernel, checksums, createCoder } from '../coder-wasm/index.ts';

const app = new Hono();

app.get('/', (c) => {
  const kernel = activeKernel(); // loads the module and runs its self-test, or throws
  const coder = createCoder(4, 2);
  const shardLen = 1 << 20;
  const stripe = coder.stripe(shardLen);
  for (let i = 0; i < 4; i++) stripe.shard(i).fill(i + 1);
  const t = performance.now();
  stripe.encode();
  const ms = performance.now() - t;
  const body = {
    service: 'shardgate',
    status: 'coder only: the S3 API is not wired yet (see README)',
    coder: { kernel, selfTest: 'passed', crc32Impl: checksums().crc32Impl, encode4plus2_1MiBShards: { verify: stripe.verify(), ms } },
  };
  stripe.free();
  coder.free();
  return c.json(body);
});

export default app;
