/**
 * The Worker of bench/write-floor.ts: each route does one step a coded, sealed PUT cannot skip,
 * alone, the way the gateway does it (same APIs, same piece sizes), over `mb` MiB of object data,
 * so that workerd's CPU for it, read from /proc by the runner, is that step's floor per GB:
 *   PUT /read            the request body read with BYOB into one 1 MiB buffer, 64 KiB at least
 *                        per read (worker/auth/body-stream.ts)
 *   GET /md5?mb=         MD5 for the ETag, node:crypto, 256 KiB updates (worker/model/digest.ts)
 *   GET /seal?mb=        AES-256-GCM of 256 KiB records, WebCrypto (worker/format/seal.ts)
 *   GET /code?mb=&k=&m=  k blocks of 256 KiB copied into a wasm stripe, m parity blocks encoded,
 *                        each of the k+m blocks hashed (XXH64) in place (worker/engine/unit-writer.ts)
 *   GET /upload?mb=&k=&m=&sinks=  (k+m)/k times the data sent to k+m servers by fetch, one
 *                        FixedLengthStream each, 256 KiB writes (backends/s3.ts, shard-sink.ts)
 *   PUT /chain?k=&m=&sinks=  all of them chained in one plain loop, no streams of our own: each
 *                        piece of the body hashed and cut into records, each record sealed into
 *                        the stripe, each full stripe coded, hashed, copied out (two buffers a
 *                        shard) and written to its upload
 * Everything a step allocates is allocated once, outside its loop, as the gateway's pools do.
 */
import { createHash } from 'node:crypto';
import { createCoder } from '../../coder-wasm/index.ts';

const KiB = 1024;
const MiB = 1024 * KiB;
const BLOCK = 256 * KiB;
const source = new Uint8Array(MiB).map((_, i) => (i * 2654435761) >>> 24);

/** The body in the pieces the gateway reads it in: BYOB into one 1 MiB buffer, 64 KiB at least a read. Each piece is valid until the next. */
async function* bodyPieces(req: Request): AsyncGenerator<Uint8Array> {
  const reader = req.body!.getReader({ mode: 'byob' }) as ReadableStreamBYOBReader & {
    readAtLeast(min: number, view: Uint8Array): Promise<ReadableStreamReadResult<Uint8Array>>;
  };
  let buffer = new ArrayBuffer(MiB);
  for (;;) {
    const r = await reader.readAtLeast(64 * KiB, new Uint8Array(buffer));
    if (r.value) {
      buffer = r.value.buffer as ArrayBuffer;
      yield r.value;
    }
    if (r.done) return;
  }
}

async function read(req: Request): Promise<number> {
  let total = 0;
  for await (const piece of bodyPieces(req)) total += piece.byteLength;
  return total;
}

function md5(bytes: number): string {
  const hash = createHash('md5');
  for (let at = 0; at < bytes; at += BLOCK) hash.update(source.subarray(0, BLOCK));
  return hash.digest('hex');
}

async function seal(bytes: number): Promise<number> {
  const key = await crypto.subtle.importKey('raw', source.subarray(0, 32), 'AES-GCM', false, ['encrypt']);
  const iv = new Uint8Array(12);
  const ivView = new DataView(iv.buffer);
  const record = source.subarray(0, BLOCK);
  let out = 0;
  for (let r = 0; r * BLOCK < bytes; r++) {
    ivView.setUint32(8, r);
    out += (await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, record)).byteLength;
  }
  return out;
}

function code(bytes: number, k: number, m: number): bigint {
  const coder = createCoder(k, m);
  const stripe = coder.stripe(BLOCK);
  let sum = 0n;
  try {
    for (let at = 0; at < bytes; at += k * BLOCK) {
      for (let i = 0; i < k; i++) stripe.shard(i).set(source.subarray(i * BLOCK, (i + 1) * BLOCK));
      stripe.encode(BLOCK);
      for (let i = 0; i < k + m; i++) sum ^= stripe.xxh64(i, 0, BLOCK, BigInt(at));
    }
  } finally {
    stripe.free();
    coder.free();
  }
  return sum;
}

async function upload(bytes: number, k: number, sinks: string[]): Promise<number> {
  const perShard = Math.ceil(bytes / k / BLOCK) * BLOCK;
  const answers = await Promise.all(
    sinks.map(async (sink) => {
      const { readable, writable } = new FixedLengthStream(perShard);
      const put = fetch(sink, { method: 'PUT', body: readable });
      const writer = writable.getWriter();
      for (let at = 0; at < perShard; at += BLOCK) await writer.write(source.subarray(0, BLOCK));
      await writer.close();
      return Number(await (await put).text());
    }),
  );
  return answers.reduce((a, b) => a + b, 0);
}

/** The steps chained: what a gateway with no plumbing of its own would cost (the body's length is declared). */
async function chain(req: Request, k: number, m: number, sinks: string[]): Promise<number> {
  const length = Number(req.headers.get('content-length'));
  const records = Math.ceil(length / BLOCK);
  const sealedLength = length + 16 * records;
  const stripes = Math.ceil(sealedLength / (k * BLOCK));
  const perShard = stripes * BLOCK;
  const uploads = sinks.map((sink) => {
    const { readable, writable } = new FixedLengthStream(perShard);
    return {
      put: fetch(sink, { method: 'PUT', body: readable }),
      writer: writable.getWriter(),
      buffers: [new Uint8Array(BLOCK), new Uint8Array(BLOCK)],
      pending: [Promise.resolve(), Promise.resolve()],
    };
  });
  const key = await crypto.subtle.importKey('raw', source.subarray(0, 32), 'AES-GCM', false, ['encrypt']);
  const iv = new Uint8Array(12);
  const ivView = new DataView(iv.buffer);
  const md5 = createHash('md5');
  const coder = createCoder(k, m);
  const stripe = coder.stripe(BLOCK);
  const record = new Uint8Array(BLOCK);
  let recordFill = 0;
  let recordIndex = 0;
  let stripeFill = 0; // sealed bytes in the stripe's data shards
  let stripeIndex = 0;
  const emit = async () => {
    for (let i = 0; i < k; i++) {
      const used = Math.max(0, Math.min(BLOCK, stripeFill - i * BLOCK));
      if (used < BLOCK) stripe.shard(i).fill(0, used);
    }
    stripe.encode(BLOCK);
    const slot = stripeIndex++ % 2;
    await Promise.all(
      uploads.map(async (u, i) => {
        await u.pending[slot];
        stripe.xxh64(i, 0, BLOCK, BigInt(stripeIndex));
        const buffer = u.buffers[slot]!;
        buffer.set(stripe.shard(i));
        u.pending[slot] = u.writer.write(buffer);
      }),
    );
    stripeFill = 0;
  };
  const sealRecord = async () => {
    ivView.setUint32(8, recordIndex++);
    const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, record.subarray(0, recordFill)));
    recordFill = 0;
    for (let at = 0; at < sealed.length; ) {
      const i = Math.floor(stripeFill / BLOCK);
      const take = Math.min(sealed.length - at, BLOCK - (stripeFill % BLOCK));
      stripe.shard(i).set(sealed.subarray(at, at + take), stripeFill % BLOCK);
      at += take;
      stripeFill += take;
      if (stripeFill === k * BLOCK) await emit();
    }
  };
  try {
    for await (const piece of bodyPieces(req)) {
      md5.update(piece);
      for (let at = 0; at < piece.length; ) {
        const take = Math.min(piece.length - at, BLOCK - recordFill);
        record.set(piece.subarray(at, at + take), recordFill);
        at += take;
        recordFill += take;
        if (recordFill === BLOCK) await sealRecord();
      }
    }
    if (recordFill > 0) await sealRecord();
    if (stripeFill > 0) await emit();
    md5.digest();
    const answers = await Promise.all(
      uploads.map(async (u) => {
        await Promise.all(u.pending);
        await u.writer.close();
        return Number(await (await u.put).text());
      }),
    );
    return answers.reduce((a, b) => a + b, 0);
  } finally {
    stripe.free();
    coder.free();
  }
}

export default {
  async fetch(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const bytes = Number(url.searchParams.get('mb') ?? 0) * MiB;
    const k = Number(url.searchParams.get('k') ?? 4);
    const m = Number(url.searchParams.get('m') ?? 2);
    switch (url.pathname) {
      case '/read':
        return new Response(String(await read(req)));
      case '/md5':
        return new Response(md5(bytes));
      case '/seal':
        return new Response(String(await seal(bytes)));
      case '/code':
        return new Response(String(code(bytes, k, m)));
      case '/chain':
        return new Response(String(await chain(req, k, m, url.searchParams.getAll('sink'))));
      case '/upload':
        return new Response(String(await upload(bytes, k, url.searchParams.getAll('sink'))));
      default:
        return new Response('no such step', { status: 404 });
    }
  },
};
