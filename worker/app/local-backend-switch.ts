/**
 * A switch, in local development only (`npm start`, the tests: SHARDGATE_LOCAL_DEV), to take one
 * backend down and bring it back while the gateway runs: the outage drills of docs/OPERATING.md
 * and an operator's own rehearsals need it outside the test fixtures. Every backend is put behind
 * a switch (SwitchedBackend): down, it refuses every call as an unreachable backend does
 * ('Unavailable'); up, it passes each on untouched.
 *
 * Flipped through the admin API (`POST /_shardgate/admin/local-backend?id=ID&state=down|up`,
 * answered only to a request made on this machine: deployment.ts isLoopbackRequest) or `npm run
 * backend -- down ID` (dev/backend.ts). A deployed gateway never builds it: the route is absent.
 * The state lives in the isolate: a reload of the Worker (an edit under `npm start`'s watch, a
 * restart) brings every backend back up.
 */
import type { Context } from 'hono';
import {
  BackendError,
  type Backend,
  type BlobInfo,
  type BlobRetention,
  type ByteRange,
  type GetOptions,
  type GetResult,
  type ListOptions,
  type ListPage,
  type PutBody,
  type PutOptions,
} from '../../backends/types.ts';
import { isLoopbackRequest } from '../config/deployment.ts';
import { S3Error } from '../model/errors.ts';
import type { AppEnv } from '../s3/context.ts';

export type SwitchState = 'up' | 'down';

/** A backend that an operator can take down: every call then fails as if it were unreachable. */
export class SwitchedBackend implements Backend {
  down = false;
  readonly retain?: (key: string, retention: BlobRetention) => Promise<void>;

  constructor(readonly inner: Backend) {
    if (inner.retain) this.retain = (key, retention) => Promise.resolve().then(() => this.pass().retain!(key, retention));
  }

  get id(): string {
    return this.inner.id;
  }

  get domain(): string {
    return this.inner.domain;
  }

  /** The inner backend, or the failure an unreachable one gives. */
  private pass(): Backend {
    if (this.down) throw new BackendError(this.id, 'Unavailable', 'taken down by the local switch (npm run backend -- up ID brings it back)');
    return this.inner;
  }

  put(key: string, body: PutBody, length: number, opts?: PutOptions): Promise<void> {
    return Promise.resolve().then(() => this.pass().put(key, body, length, opts));
  }

  get(key: string, range?: ByteRange, opts?: GetOptions): Promise<GetResult> {
    return Promise.resolve().then(() => this.pass().get(key, range, opts));
  }

  head(key: string): Promise<BlobInfo> {
    return Promise.resolve().then(() => this.pass().head(key));
  }

  delete(key: string): Promise<void> {
    return Promise.resolve().then(() => this.pass().delete(key));
  }

  list(prefix: string, cursor?: string, opts?: ListOptions): Promise<ListPage> {
    return Promise.resolve().then(() => this.pass().list(prefix, cursor, opts));
  }
}

export class LocalBackendSwitch {
  /** The backends to use instead of the ones given: each behind its switch. */
  readonly backends: SwitchedBackend[];
  /**
   * Told of every flip: the gateway tells its reachability (engine/reachability.ts), so a backend
   * taken down is refused at once and one brought back is used at once, not after its down window.
   */
  onChange?: (id: string, state: SwitchState) => void;

  constructor(plain: readonly Backend[]) {
    this.backends = plain.map((b) => new SwitchedBackend(b));
  }

  /** Each backend's switch, by id, in config order. */
  states(): Record<string, SwitchState> {
    return Object.fromEntries(this.backends.map((b) => [b.id, b.down ? 'down' : 'up']));
  }

  set(id: string, state: SwitchState): void {
    const b = this.backends.find((x) => x.id === id);
    if (!b) throw new S3Error('InvalidArgument', `no backend "${id}" (have: ${this.backends.map((x) => x.id).join(', ')})`);
    b.down = state === 'down';
    this.onChange?.(id, state);
  }
}

/** The admin route: `?id=ID&state=down|up` flips one; without them it lists. Answers every switch. */
export function localBackendRoute(localSwitch: LocalBackendSwitch) {
  return (c: Context<AppEnv>) => {
    if (!isLoopbackRequest(c.req.raw)) throw new S3Error('AccessDenied', 'local-backend is answered only to requests made on this machine (local development)');
    const id = c.var.view.query.get('id');
    const state = c.var.view.query.get('state');
    if (id !== null || state !== null) {
      if (!id || (state !== 'up' && state !== 'down'))
        throw new S3Error('InvalidArgument', 'local-backend takes ?id=ID&state=down or ?id=ID&state=up (or neither, to list)');
      localSwitch.set(id, state);
      console.log(JSON.stringify({ msg: 'local-backend', id, state }));
    }
    return c.json({ backends: localSwitch.states() });
  };
}
