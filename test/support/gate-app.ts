/**
 * The real front door in Node, for gate tests that need thousands of requests: createApp with the
 * real gate (worker/app/auth-gate.ts: one access key, region us-east-1, no anonymous access), the
 * operator's admin API, and the product's EcStore over memory parts (memory-store.ts).
 * Virtual-hosted base domain: s3.gw.test. Requests go through app.fetch, no sockets.
 */
import { createAdmin } from '../../worker/app/admin.ts';
import type { Authenticate } from '../../worker/s3/context.ts';
import { createApp } from '../../worker/app/app.ts';
import { makeAuthenticate, makePostFormGate, type GateConfig } from '../../worker/app/auth-gate.ts';
import { ACCESS_KEY, SECRET } from '../auth/helpers/signers.ts';
import type { Backend } from '../../backends/index.ts';
import { DEFAULT_ACCOUNT } from '../../worker/model/account.ts';
import { localCatalog, type LocalCatalogNamespace } from './local-catalog.ts';
import { memoryEcStore, testS3Settings } from './memory-store.ts';

export const GATE_HOST = 'gw.test';
export const GATE_BASE_DOMAIN = 's3.gw.test';
export const GATE_REGION = 'us-east-1';

/**
 * `observe` wraps the gate (to see which requests it let through); `credentials`, when given,
 * replace the one all-powerful test key (each with its scope, worker/model/access.ts, and account,
 * worker/model/account.ts); `isolateOf`:
 * another gateway whose catalog instances and backends this one shares, as a second isolate of
 * one deployment does (its own DurableCatalog, so its own view of the buckets' settings);
 * `allowAnonymous`: the config's (unsigned requests refused by default).
 */
export function gateApp(
  observe: (gate: Authenticate) => Authenticate = (gate) => gate,
  credentials: GateConfig['credentials'] = [{ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET }],
  isolateOf?: { catalog: { namespace: LocalCatalogNamespace }; backends: Backend[] },
  allowAnonymous: GateConfig['allowAnonymous'] = false,
) {
  const catalog = localCatalog({}, isolateOf?.catalog.namespace);
  const parts = {
    ...memoryEcStore(catalog, { maxObjectSize: 1024 * 1024, maxPartSize: 1024 * 1024, ...(isolateOf ? { backends: isolateOf.backends } : {}) }),
    catalog,
  };
  const authenticate = observe(makeAuthenticate({ credentials, allowAnonymous, region: GATE_REGION }, {}));
  const admin = createAdmin({
    authenticate,
    catalog: parts.catalog,
    backends: parts.backends,
    keyRing: parts.kms?.ring,
    kms: parts.kms,
    region: GATE_REGION,
    scrub: { mode: 'heads', unitsPerRun: 10 },
    enqueueRepair: () => {},
    repair: async () => {},
  });
  const settings = testS3Settings({
    baseDomains: [GATE_BASE_DOMAIN],
    maxObjectSize: 1024 * 1024,
    maxPartSize: 1024 * 1024,
    errorDrainBytes: 1024 * 1024,
    otherAccounts: credentials.some((c) => c.account !== undefined && c.account !== DEFAULT_ACCOUNT),
    accounts: [...new Set([DEFAULT_ACCOUNT, ...credentials.map((c) => c.account ?? DEFAULT_ACCOUNT)])],
  });
  const postForm = makePostFormGate({ credentials, allowAnonymous, region: GATE_REGION }, {});
  const app = createApp({ store: parts.store, config: parts.store.config, authenticate, postForm, settings, admin });
  const send = async (request: Request): Promise<Response> => app.fetch(request);
  return { ...parts, app, send };
}
