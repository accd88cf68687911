/**
 * A DevTools protocol session with a Worker started with the inspector (test/support/worker.ts
 * `inspector`), through wrangler's inspector proxy: for the tests (gateway-harness.ts turns the
 * Network domain off) and bench/profile.ts (V8's sampling profiler). On Node 20 it needs
 * `--experimental-websocket` (vitest.config.ts gives it to the test workers; package.json's
 * bench:profile script to the bench).
 */

export interface DevtoolsSession {
  /** Sends `method`; resolves with its result, rejects with its error, or after `timeoutMs` when given. */
  call<T>(method: string, params?: object, timeoutMs?: number): Promise<T>;
  close(): void;
}

/** Opens a session with the Worker's target (not wrangler's proxy worker, when it lists both). */
export async function devtoolsSession(inspectorUrl: URL): Promise<DevtoolsSession> {
  const targets = (await (await fetch(new URL('/json/list', inspectorUrl.href.replace(/^ws/, 'http')))).json()) as {
    webSocketDebuggerUrl: string;
    title?: string;
  }[];
  const target = targets.find((t) => !/proxy/i.test(t.title ?? '')) ?? targets[0];
  if (!target) throw new Error(`no DevTools target at ${inspectorUrl}`);
  // wrangler's inspector proxy wants a local Origin (undici's WebSocket takes headers in its second argument).
  const ws = new WebSocket(target.webSocketDebuggerUrl, { headers: { origin: 'http://localhost' } } as unknown as string[]);
  await new Promise((resolve, reject) => {
    ws.addEventListener('open', resolve, { once: true });
    ws.addEventListener('error', () => reject(new Error(`could not open ${target.webSocketDebuggerUrl}`)), { once: true });
  });
  let next = 1;
  const waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  ws.addEventListener('message', (event) => {
    const m = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } };
    if (m.id === undefined) return;
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.error) w?.reject(new Error(m.error.message));
    else w?.resolve(m.result);
  });
  return {
    call: <T>(method: string, params: object = {}, timeoutMs?: number) =>
      new Promise<T>((resolve, reject) => {
        const id = next++;
        const timer =
          timeoutMs === undefined
            ? undefined
            : setTimeout(() => {
                waiting.delete(id);
                reject(new Error(`${method}: no answer from ${inspectorUrl} within ${timeoutMs / 1000} s`));
              }, timeoutMs);
        const settle = () => clearTimeout(timer);
        waiting.set(id, {
          resolve: (v) => (settle(), resolve(v as T)),
          reject: (e) => (settle(), reject(e)),
        });
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}
