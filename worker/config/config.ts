/**
 * GatewayConfig: THE one zod schema of the gateway, parsed once per isolate from the
 * `SHARDGATE_CONFIG` var (JSON), with error messages that name the field and say what to change.
 * Secrets (backend keys, client secret keys) are referenced by env name and set with
 * `wrangler secret put`. The layers below never read configuration: `engineSettings()` and
 * `s3Settings()` hand each the part it needs, already typed.
 */
import { REPAIR_TIMING_DEFAULTS } from '../model/repair-timing.ts';
import { SPLIT_DEFAULTS } from '../model/split-thresholds.ts';
import { z } from 'zod';
import type { BackendConfig } from '../../backends/index.ts';
import type { BackendPrices, EngineSettings, StoragePolicy } from '../engine/index.ts';
import type { PricedBackend } from '../model/prices.ts';
import { ACTIONS, type Grant } from '../model/access.ts';
import { ACCOUNT_ID, DEFAULT_ACCOUNT } from '../model/account.ts';
import { defaultPreset, PRESET_NAMES, presetPrices, type PresetName } from './price-list.ts';
import type { S3Settings } from '../s3/context.ts';
import { NOTIFICATION_DEFAULTS, type NotificationSettings } from '../model/notification-settings.ts';

const MiB = 1024 * 1024;

const faults = z
  .object({
    offline: z.boolean().optional(),
    failRate: z.number().min(0).max(1).optional(),
    latencyMs: z.number().int().min(0).optional(),
    seed: z.number().int().optional(),
  })
  .strict();

const price = z.number().min(0).max(1000);
/**
 * What a backend costs (US dollars): a preset of worker/config/price-list.ts by name, or figures, each
 * overriding the `preset` (if any). Absent: the default preset of its kind or endpoint host
 * (price-list.ts `defaultPreset`), else unpriced. "none": unpriced on purpose.
 */
const prices = z.union([
  z.enum([...PRESET_NAMES, 'none']),
  z
    .object({
      preset: z.enum(PRESET_NAMES).optional(),
      storagePerGBMonth: price.optional(),
      egressPerGB: price.optional(),
      putPer1000: price.optional(),
      getPer1000: price.optional(),
    })
    .strict(),
]);

/**
 * Where a backend stands in the fleet (issue 26; docs/OPERATING.md "Changing the fleet"):
 * 'active' takes new shards; 'draining' takes none, is still read, and the mover
 * (upkeep/drain.ts) moves its shards off; 'retired' is never read (its shards count as missing
 * and are rebuilt elsewhere) and the status names it critical while the catalog still records
 * shards there.
 */
export const BACKEND_STATES = ['active', 'draining', 'retired'] as const;
export type BackendState = (typeof BACKEND_STATES)[number];
const backendState = z.enum(BACKEND_STATES).default('active');

/** What the mover may spend on one backend (reads from it plus writes to it) per second; absent: unlimited. */
const moveLimits = z
  .object({
    bytesPerSecond: z.number().int().positive().optional(),
    requestsPerSecond: z.number().positive().optional(),
  })
  .strict();

const common = {
  id: z.string().min(1),
  domain: z.string().min(1),
  faults: faults.optional(),
  prices: prices.optional(),
  state: backendState,
  limits: moveLimits.optional(),
  /** Opt-in, on an active backend: the mover moves onto it the shards placement now assigns to it (upkeep/drain.ts). */
  rebalance: z.boolean().optional(),
  /**
   * Known down for maintenance (issue 37): never called for reads or new shards (writes place
   * elsewhere when the policy's k+m fit on the others), its shards count as missing, and it raises
   * no warning of its own (the status shows it in maintenance). Remove it when the backend is back.
   */
  maintenance: z.boolean().optional(),
};

const backend = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('memory'), ...common }).strict(),
  z.object({ kind: z.literal('r2'), ...common, binding: z.string().min(1) }).strict(),
  z
    .object({
      kind: z.literal('s3'),
      ...common,
      endpoint: z.string().url(),
      bucket: z.string().min(1),
      region: z.string().default('us-east-1'),
      pathStyle: z.boolean().optional(),
      timeoutMs: z.number().int().positive().optional(),
      /** Retries of 5xx/throttled requests (network errors and timeouts fail at once). */
      retries: z.number().int().min(0).optional(),
      retryBaseMs: z.number().int().min(0).optional(),
      accessKeyId: z.string().optional(),
      secretAccessKey: z.string().optional(),
      accessKeyIdSecret: z.string().optional(),
      secretAccessKeySecret: z.string().optional(),
      /** The bucket has S3 Object Lock enabled: shards of COMPLIANCE-locked versions are retained by the backend too (docs/OPERATING.md). */
      objectLock: z.boolean().optional(),
    })
    .strict(),
]);

/** A backend as the config describes it (inferred from the schema; backends/ builds it). */
export type BackendSettings = z.output<typeof backend>;

const policy = z
  .object({
    /** 'rs': k data + m parity shards. 'replicate': `replicas` full copies (the baseline). */
    codec: z.enum(['rs', 'replicate']).default('rs'),
    k: z.number().int().min(1).max(255).optional(),
    m: z.number().int().min(0).max(255).optional(),
    replicas: z.number().int().min(1).max(16).optional(),
    writeQuorum: z.number().int().min(1).optional(),
    /**
     * The backends (ids) this policy's shards go to, its pool: a storage class mapped to a
     * policy of cheaper backends moves data onto them (issue 44). Absent: every active backend.
     * At most max(1, m) shards of a unit on one failure domain, as everywhere.
     */
    backends: z.array(z.string().min(1)).min(1).optional(),
    /** Bytes of each shard per stripe; a stripe holds k of them. */
    blockSize: z
      .number()
      .int()
      .min(4096)
      .max(8 * MiB)
      .default(256 * 1024),
    /**
     * Seal (encrypt) new objects under this policy when the gateway has an active key
     * (`encryption`); false: store them in the clear. Objects keep how they were written.
     */
    encrypt: z.boolean().default(true),
    /** Objects up to this size skip coding: stored inline in the catalog (≤ 128 KiB) or replicated. */
    small: z
      .object({
        threshold: z.number().int().min(0).default(4096),
        mode: z.enum(['inline', 'replicate']).default('inline'),
        replicas: z.number().int().min(1).max(16).default(3),
      })
      .strict()
      .default({ threshold: 4096, mode: 'inline', replicas: 3 }),
  })
  .strict();

/** One grant of a key's scope (model/access.ts says what each action allows). */
const grant = z
  .object({
    /** Bucket names or patterns (`*`, `?`): ["photos"], ["logs-*"], ["*"]. */
    buckets: z
      .array(
        z
          .string()
          .min(1)
          .regex(/^[a-z0-9.*?-]+$/, 'a bucket name or a pattern of one with * and ?'),
      )
      .min(1),
    /** Key prefixes the grant is limited to; absent: every key. */
    prefixes: z.array(z.string().min(1)).min(1).optional(),
    actions: z.array(z.enum(ACTIONS)).min(1),
  })
  .strict()
  .refine(
    (g) => !g.actions.includes('admin') || (g.buckets.includes('*') && !g.prefixes),
    'admin is gateway-wide (rebuild, repair, costs of every bucket): give it in a grant with "buckets": ["*"] and no prefixes',
  );

const credential = z
  .object({
    accessKeyId: z.string().min(1),
    secretAccessKey: z.string().min(1).optional(),
    /** Env name of a Worker secret holding the secret key. */
    secretAccessKeySecret: z.string().min(1).optional(),
    /**
     * What the key may do: one grant or a list. Absent: everything, the operator API included
     * (the deployment review warns about such a key).
     */
    scope: z.preprocess((v) => (v === undefined || Array.isArray(v) ? v : [v]), z.array(grant).min(1)).optional(),
    /**
     * The account the key belongs to (model/account.ts): it owns the buckets the key creates and
     * sees only its own account's buckets; another account's bucket only where that bucket's
     * policy Allows it or, with ACLs enabled, an ACL grants it (model/acl.ts). Absent: the
     * gateway's own account ("shardgate").
     */
    account: z.string().regex(ACCOUNT_ID, 'an account id: letters, digits, ".", "_" and "-", at most 64').optional(),
  })
  .strict()
  .refine((c) => c.secretAccessKey || c.secretAccessKeySecret, 'give secretAccessKey or secretAccessKeySecret')
  .refine(
    (c) => c.account === undefined || c.account === DEFAULT_ACCOUNT || !(grantsOf(c) ?? []).some((g) => g.actions.includes('admin')),
    "admin is the operator's (the admin API, metrics and status cover every account's buckets): a key of another account cannot have it",
  );

/** A configured key's scope as grants (one grant may be given bare); null: no scope given (every action). */
export function grantsOf(c: { scope?: Grant | readonly Grant[] }): readonly Grant[] | null {
  return c.scope === undefined ? null : Array.isArray(c.scope) ? c.scope : [c.scope as Grant];
}

/** Limits of the S3 front door beyond the object size. Defaults follow AWS. */
const s3Limits = z
  .object({
    /** Largest UploadPart body in bytes (AWS: 5 GiB). */
    maxPartSize: z
      .number()
      .int()
      .positive()
      .default(5 * 1024 * MiB),
    /** Largest request XML document (DeleteObjects, CompleteMultipartUpload) in bytes. */
    maxXmlSize: z
      .number()
      .int()
      .positive()
      .default(4 * MiB),
    /**
     * Before an error response, read and discard at most this much unread request body (0: never),
     * so the client reads its error; a body idle for 1 s is given up and cancelled (s3/drain.ts).
     */
    errorDrainBytes: z
      .number()
      .int()
      .nonnegative()
      .default(64 * MiB),
    /**
     * Longest COMPLIANCE retention a request may set (a retain-until date, a default period), in
     * days from now (issue 37): default 36500, the 100 years AWS allows a default period. A longer
     * one is InvalidArgument (InvalidRetentionPeriod for a default period). GOVERNANCE retention,
     * which a key with `bypass-governance` can lift, is not bounded by it (AWS's bounds only).
     */
    maxRetentionDays: z.number().int().min(1).max(36_500).default(36_500),
    /**
     * The Object Ownership of a bucket created without `x-amz-object-ownership` (issue 43,
     * model/acl.ts): BucketOwnerEnforced (default, as AWS creates buckets since April 2023: ACLs
     * disabled, the bucket owner owns every object), or ObjectWriter / BucketOwnerPreferred, with
     * ACLs enabled, for applications written for buckets that grant by ACL (public-read objects, a
     * partner account's grant), as AWS's buckets were before and Ceph RGW's still are.
     */
    defaultObjectOwnership: z.enum(['BucketOwnerEnforced', 'BucketOwnerPreferred', 'ObjectWriter']).default('BucketOwnerEnforced'),
  })
  .strict();

/**
 * Operating the gateway (worker/ops/, worker/app/operator.ts): who may read the health it reports,
 * how often isolates share what they counted, and the per-request log line.
 */
const opsSettings = z
  .object({
    /**
     * true: /_shardgate/metrics and the whole /_shardgate/status answer unsigned requests (for a
     * gateway reachable only from a private network). false: both need a SigV4 signature by a
     * configured access key, like the admin API; an unsigned status read sees health only.
     */
    open: z.boolean().default(false),
    /**
     * Env name of a Worker secret: `Authorization: Bearer <its value>` may read /_shardgate/metrics
     * too (Prometheus cannot sign SigV4 on a scrape).
     */
    metricsTokenSecret: z.string().min(1).optional(),
    /** A signed status or metrics read probes every backend when the last probe is older than this; the cron probes on every run. */
    probeSeconds: z.number().int().min(5).max(3600).default(30),
    /** Each isolate sends what it counted to the shared record (a Durable Object) at most this often. */
    flushSeconds: z.number().int().min(1).max(60).default(5),
    /** One JSON log line per request (repairs, scrubber and collector runs are always logged). */
    requestLogs: z.boolean().default(true),
  })
  .strict();

/**
 * The web console at /_shardgate/console (worker/app/console.ts, docs/CONSOLE.md): a page that signs
 * S3 requests in the browser with a key the user types, so it can do exactly what that key may.
 */
const consoleSettings = z
  .object({
    /** false: no console route (its paths answer like any unknown operator path); the S3 API and the status page are unchanged. */
    enabled: z.boolean().default(true),
  })
  .strict();

/** A named KMS key's id (model/kms-key.ts). */
const kmsKeyId = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" and "-"');

/**
 * The Vault / OpenBao transit key that backs a named KMS key (engine/transit-client.ts): where
 * Vault is, the transit engine's mount and the key's name there, the Worker secret holding the
 * token (`wrangler secret put NAME`; the token needs the policy docs/OPERATING.md gives), the
 * namespace if any, and how long an isolate keeps a version's material before asking Vault again.
 */
const transitKey = z
  .object({
    /** Vault's or OpenBao's address, https://vault.example:8200 (http is warned about: the token would cross in the clear). */
    address: z.string().url(),
    /** The path the transit secrets engine is mounted at. */
    mount: z.string().min(1).default('transit'),
    /** The transit key's name (aes256-gcm96 or any type that encrypts and decrypts). */
    key: z.string().min(1),
    /** The Worker secret holding the Vault token (`wrangler secret put NAME`); never inline. */
    tokenSecret: z.string().min(1),
    /** The Vault Enterprise / OpenBao namespace (sent as X-Vault-Namespace). */
    namespace: z.string().min(1).optional(),
    /** How long an isolate keeps a key version's material before it asks Vault again: how soon a revocation in Vault refuses requests. */
    cacheSeconds: z.number().int().min(1).max(3600).default(300),
  })
  .strict();

/**
 * Gateway-side encryption (format/seal.ts): key-encryption keys by id, each 32 random bytes in
 * base64, held in a Worker secret named by `secret` (or, for local development only, inline as
 * `value`: the deployment review refuses it). `active` wraps the data keys of new objects; the
 * others only open what they wrapped, until a rotation re-wraps it (admin `rotate-keys`).
 */
const encryptionSettings = z
  .object({
    keys: z
      .array(
        z
          .object({
            id: z
              .string()
              .min(1)
              .max(64)
              .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" and "-"'),
            secret: z.string().min(1).optional(),
            value: z.string().min(1).optional(),
          })
          .strict()
          .refine((k) => (k.secret === undefined) !== (k.value === undefined), 'give "secret" (the name of a Worker secret) or, locally, "value"'),
      )
      .min(1),
    active: z.string().min(1).nullable(),
    /**
     * Plaintext bytes per sealed record of new objects, a power of two from 4 KiB to 4 MiB; absent:
     * 64 KiB below 4 MiB bodies, 256 KiB from there (format/seal.ts sealRecordBytes). Each object
     * records its own, so changing it never affects what is stored.
     */
    recordBytes: z
      .number()
      .int()
      .min(4096)
      .max(4 * MiB)
      .refine((n) => (n & (n - 1)) === 0, 'a power of two')
      .optional(),
    /**
     * Named KMS keys (SSE-KMS) the gateway creates on first use, so that clients and tests can
     * name them without an admin call (ids as the key ids above). Their material is random and
     * lives, wrapped under the active key, in the catalog's key table, like that of any key made
     * with `shardgate keys create`; removing an id here removes nothing. An entry may instead be
     * `{ "id": ..., "transit": {...} }`: a key backed by a HashiCorp Vault or OpenBao transit key,
     * which wraps each version's material in place of the gateway's keys (docs/OPERATING.md,
     * "KMS keys in Vault or OpenBao").
     */
    kmsKeys: z.array(z.union([kmsKeyId, z.object({ id: kmsKeyId, transit: transitKey }).strict()])).optional(),
  })
  .strict();

/**
 * The existing bucket a bucket adopts (issue 41, docs/ADOPTION.md): objects shardgate does not
 * hold yet are read from it, as it answers, and adopted on their first full read. Never written.
 * Credentials: `accessKeyIdSecret` and `secretAccessKeySecret` name Worker secrets
 * (`wrangler secret put`); `accessKeyId` and `secretAccessKey` inline, for local development.
 */
const source = z
  .object({
    endpoint: z.string().url(),
    bucket: z.string().min(1),
    region: z.string().default('us-east-1'),
    pathStyle: z.boolean().optional(),
    accessKeyId: z.string().min(1).optional(),
    secretAccessKey: z.string().min(1).optional(),
    accessKeyIdSecret: z.string().min(1).optional(),
    secretAccessKeySecret: z.string().min(1).optional(),
    /** Per source request: the longest wait for an answer or for the next bytes of a body (ms). */
    timeoutMs: z.number().int().positive().default(30_000),
    /** How long a 404 from the source is believed per isolate (ms) before the source is asked again. */
    notFoundMs: z.number().int().min(0).default(5000),
    /**
     * What reading from the source costs (its provider's egress and GET/LIST prices), as a
     * backend's `prices`: a preset of price-list.ts by name, or figures. Absent: the preset its
     * endpoint's host names (amazonaws.com, r2.cloudflarestorage.com, ...), else unpriced.
     */
    prices: prices.optional(),
    /**
     * Hours after a clean backfill pass before the next one walks the source again, to adopt
     * objects changed there since (until the source is detached; docs/ADOPTION.md). Each pass
     * lists the whole source: one LIST per 1000 objects.
     */
    repassHours: z.number().positive().default(24),
    /**
     * Write-through (docs/ADOPTION.md): clients' PUTs, copies, completed uploads and deletes through
     * shardgate are also made in the source (after shardgate's commit, retried until done), so the
     * old path keeps working during a gradual cut-over. Default false: the source is never written.
     */
    writeThrough: z.boolean().default(false),
  })
  .strict()
  .refine((s) => s.accessKeyId || s.accessKeyIdSecret, 'give accessKeyId or accessKeyIdSecret')
  .refine((s) => s.secretAccessKey || s.secretAccessKeySecret, 'give secretAccessKey or secretAccessKeySecret');

/** A bucket's source as the config describes it. */
export type SourceConfig = z.output<typeof source>;

const destinationName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" and "-"');

/** A Cloudflare Queue producer binding: each event one message, `{ Records: [...] }` as AWS sends to SQS. */
const queueDestination = z
  .object({
    /** The producer binding's name in the wrangler file ([[queues.producers]] binding). */
    queue: z.string().min(1),
  })
  .strict();

/** An HTTP endpoint: each event one POST, signed `x-shardgate-signature: sha256=<hex HMAC-SHA256 of the body>`. */
const webhookDestination = z
  .object({
    /** https://...; http:// only for loopback hosts in local development (the deployment review refuses others). */
    webhook: z.string().url(),
    /** Env name of the Worker secret that signs each POST (absent: unsigned, refused by the deployment review). */
    secret: z.string().min(1).optional(),
    /** Local development only: the signing secret inline (the deployment review refuses it). */
    secretValue: z.string().min(1).optional(),
    /** Also send the CloudEvents 1.0 binary-mode headers (ce-specversion, ce-type, ce-source, ce-id, ce-time, ce-subject). */
    cloudEvents: z.boolean().default(false),
    /**
     * Events one POST carries at most, as consecutive records of one `Records` array (1: one event
     * per POST, as AWS sends). More costs the gateway a POST and an HMAC per batch instead of per
     * event; not with `cloudEvents`, whose binary-mode headers describe one event.
     */
    recordsPerPost: z.number().int().min(1).max(100).default(1),
  })
  .strict()
  .refine((d) => !(d.cloudEvents && d.recordsPerPost > 1), {
    message: 'cloudEvents describes one event per POST: it cannot be combined with recordsPerPost above 1',
  });

/**
 * Bucket event notifications (docs/NOTIFICATIONS.md; the catalog's Durable Object reads this
 * section through model/notification-settings.ts, config/notifications.ts reviews it for deployment).
 */
export const notificationSettings = z
  .object({
    /**
     * Name -> { "queue": "BINDING" } (a Queue producer binding) or { "webhook": "https://...", "secret":
     * "SECRET_NAME", "cloudEvents": false, "recordsPerPost": 1 } (POSTs signed with that Worker secret;
     * locally "secretValue" inline; up to recordsPerPost events' records in one POST's Records, not
     * with cloudEvents). A rule's ARN names one by its last ":" segment (arn:shardgate:sqs:::NAME).
     */
    destinations: z.record(destinationName, z.union([queueDestination, webhookDestination])).default({}),
    /**
     * Undelivered events one partition of a bucket holds at most (a bucket of one partition: per
     * bucket). Beyond it `whenFull` decides.
     */
    outboxLimit: z.number().int().min(10).max(1_000_000).default(NOTIFICATION_DEFAULTS.outboxLimit),
    /** 'drop-oldest': writes succeed, the oldest undelivered events are dropped and counted; 'refuse': writes answer 503 SlowDown, nothing stored. */
    whenFull: z.enum(['drop-oldest', 'refuse']).default(NOTIFICATION_DEFAULTS.whenFull),
    /** Longest one delivery (a POST, a queue send) may take before it counts as failed (ms). */
    timeoutMs: z.number().int().min(100).max(60_000).default(NOTIFICATION_DEFAULTS.timeoutMs),
    /** Deliveries tried before an event is dead-lettered (kept, counted, shown by `shardgate events`). */
    maxAttempts: z.number().int().min(1).max(100).default(NOTIFICATION_DEFAULTS.maxAttempts),
    /** First retry delay (ms); doubled after each failure up to `maxBackoffMs`. */
    backoffMs: z.number().int().min(10).max(3_600_000).default(NOTIFICATION_DEFAULTS.backoffMs),
    /** Longest retry delay (ms). */
    maxBackoffMs: z.number().int().min(10).max(86_400_000).default(NOTIFICATION_DEFAULTS.maxBackoffMs),
    /** Events one alarm run sends per destination at most (the memory one run holds). */
    batchSize: z.number().int().min(1).max(100).default(NOTIFICATION_DEFAULTS.batchSize),
    /**
     * How long after a commit its events are sent (ms): the events of the commits in that time go
     * in one alarm run (one transaction; one sendBatch to a Queue) instead of a run each. 0: at once.
     */
    coalesceMs: z.number().int().min(0).max(10_000).default(NOTIFICATION_DEFAULTS.coalesceMs),
  })
  .strict();
// What the schema accepts is what the catalog reads (model/notification-settings.ts).
const _notificationsRead = (s: z.output<typeof notificationSettings>): NotificationSettings => s;
void _notificationsRead;

export const configSchema = z
  .object({
    /** Region reported by GetBucketLocation / HeadBucket, accepted as LocationConstraint. */
    region: z.string().min(1).default('us-east-1'),
    /** Virtual-hosted-style base domains (`<bucket>.<domain>`); other hosts are path-style. */
    baseDomains: z.array(z.string().min(1)).default([]),
    /** Largest single PutObject body (AWS: 5 GiB; Cloudflare plans cap request bodies lower). */
    maxObjectSize: z
      .number()
      .int()
      .positive()
      .default(5 * 1024 * MiB),
    s3: s3Limits.default({
      maxPartSize: 5 * 1024 * MiB,
      maxXmlSize: 4 * MiB,
      errorDrainBytes: 64 * MiB,
      maxRetentionDays: 36_500,
      defaultObjectOwnership: 'BucketOwnerEnforced',
    }),
    backends: z.array(backend).min(1),
    policies: z.record(z.string(), policy),
    defaultPolicy: z.string(),
    /** Bucket name -> policy name; others use defaultPolicy. */
    buckets: z.record(z.string(), z.string()).default({}),
    /** Bucket name -> the existing S3-compatible bucket it adopts (docs/ADOPTION.md). */
    sources: z.record(z.string(), source).default({}),
    /**
     * S3 storage class -> policy name (issue 44): `x-amz-storage-class` on a write, a lifecycle
     * transition or a copy onto itself stores the version under that policy. AWS's names
     * (STANDARD_IA, ONEZONE_IA, INTELLIGENT_TIERING, GLACIER_IR, GLACIER, DEEP_ARCHIVE, ...) or
     * custom ones. STANDARD, unless mapped here, is each bucket's own policy; a class not listed
     * is refused (InvalidStorageClass). Every class reads at once: there is no restore step.
     */
    storageClasses: z
      .record(
        z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/, 'a storage class name: capital letters, digits and "_", as S3 names them (STANDARD_IA, GLACIER)'),
        z.string(),
      )
      .default({}),
    credentials: z.array(credential).default([]),
    /**
     * Unsigned requests. false: refused (AccessDenied). "policy": a stranger to every bucket
     * (model/account.ts): let in only where a bucket's policy Allows everyone ("*") the action,
     * or, on a bucket with ACLs enabled, an ACL grants it to AllUsers (model/acl.ts), as AWS
     * serves a public bucket (RestrictPublicBuckets, IgnorePublicAcls and a Deny still refuse).
     * true: every S3 action on every bucket, narrowed only by Deny statements (a gateway that is
     * all public).
     */
    allowAnonymous: z.union([z.boolean(), z.literal('policy')]).default(false),
    /** A read decodes around data shards that have not delivered a stripe within this many ms (0: never). */
    readHedgeMs: z.number().int().min(0).default(1000),
    /**
     * The longest any backend call waits for an answer or for progress (ms; backends/deadline.ts),
     * and within an S3 request never past the request's own deadline (model/request-deadline.ts).
     */
    backendWaitMs: z.number().int().positive().default(10_000),
    /** Delay before superseded or orphaned shards are deleted. */
    garbageGraceSeconds: z.number().int().min(0).default(3600),
    /** Most versions one key may hold (delete markers included) before a write adding one is refused (400 InvalidRequest). */
    maxVersionsPerKey: z.number().int().min(1).max(1_000_000).default(10_000),
    /**
     * Longest a write may take from its first shard to its commit. Unit ids are reserved in the
     * catalog before any shard is stored; a reservation still held this long after is an orphan
     * (a crash, a refused or abandoned upload) and its shards are collected. A write that would
     * commit later than this is refused (RequestTimeout) instead: its shards may be going.
     */
    writeReservationSeconds: z
      .number()
      .int()
      .min(1)
      .default(24 * 3600),
    /**
     * A client whose body sends nothing for this long gets 400 RequestTimeout, as S3 answers (about
     * 20 s there); its upload is aborted and its shards collected (auth/body-stream.ts).
     */
    clientIdleSeconds: z.number().int().min(1).max(3600).default(20),
    /**
     * A body that sends nothing for this long while its request holds coding budget other requests
     * are waiting for gets RequestTimeout then, not after clientIdleSeconds (issue 37).
     */
    clientStalledSeconds: z.number().int().min(1).max(3600).default(5),
    /**
     * Memory the coded reads and writes of one isolate may hold at once (a Worker isolate has
     * 128 MB for all its requests), and how long a request waits for its share before it is
     * refused with 503 SlowDown (engine/coding-budget.ts).
     */
    codingBudget: z
      .object({
        bytes: z
          .number()
          .int()
          .min(4 * MiB)
          .default(48 * MiB),
        maxWaitMs: z.number().int().min(0).default(30_000),
        /**
         * The fraction of `bytes` one tenant (an access key; an anonymous client's address) may hold
         * at once (issue 37): the others' requests pass a tenant at its share. 1: no limit (one
         * tenant). A tenant holding nothing may still run one request larger than its share. Applied
         * only where there can be another tenant (two or more keys, or anonymous access): a gateway
         * of one key keeps the whole budget for it (engineSettings).
         */
        tenantShare: z.number().gt(0).max(1).default(0.5),
      })
      .strict()
      .default({ bytes: 48 * MiB, maxWaitMs: 30_000, tenantShare: 0.5 }),
    /**
     * The background scrubber, run with the cron: 'heads' checks each shard's size (cheap, finds
     * lost and truncated shards), 'verify' reads and checks every block (finds bit rot; costs a read
     * of the stored bytes, which is egress on paid backends), 'off'. `unitsPerRun` per bucket.
     */
    scrub: z
      .object({
        mode: z.enum(['off', 'heads', 'verify']).default('heads'),
        /** How 'heads' checks a shard: 'head', or 'tail-read' (a 1-byte read; absent: tail-read in local development, whose R2 emulator HEADs from metadata, else head). */
        headsBy: z.enum(['head', 'tail-read']).optional(),
        unitsPerRun: z.number().int().min(1).max(1000).default(100),
      })
      .strict()
      .default({ mode: 'heads', unitsPerRun: 100 }),
    /**
     * When a bucket's catalog partition splits on line (docs/PARTITIONS.md): the cron splits a
     * partition at its median key once it holds more than `splitRows` stored versions or its SQLite
     * database exceeds `splitBytes` (a Durable Object holds at most 10 GB), or at the key that
     * halves its traffic once it answers more than `splitRequestRate` calls a second averaged over
     * 5 minutes; the status warns at `warnFraction` of any. `autoSplit: false` leaves splits to the operator (`shardgate partitions`).
     * Two neighbours each under a quarter of every threshold for `mergeAfterDays` merge back into
     * one (the upper into the lower); `autoMerge: false` leaves merges to the operator too.
     */
    partitions: z
      .object({
        autoSplit: z.boolean().default(SPLIT_DEFAULTS.autoSplit),
        splitRows: z.number().int().min(2).default(SPLIT_DEFAULTS.splitRows),
        splitBytes: z.number().int().min(1).default(SPLIT_DEFAULTS.splitBytes),
        splitRequestRate: z.number().min(0.01).default(SPLIT_DEFAULTS.splitRequestRate),
        warnFraction: z.number().min(0.1).max(1).default(SPLIT_DEFAULTS.warnFraction),
        autoMerge: z.boolean().default(SPLIT_DEFAULTS.autoMerge),
        mergeAfterDays: z.number().min(0).default(SPLIT_DEFAULTS.mergeAfterDays),
      })
      .strict()
      .default(SPLIT_DEFAULTS),
    /**
     * How a bucket's repair worklist retries (catalog/sql-repairs.ts, model/repair-timing.ts): a
     * unit's first retry after `retryFirstMs`, doubling to `retryMaxMs` (also the longest a
     * backend that does not answer is left alone), and a unit handed to the repair queue but not
     * reported back within `resendAfterMs` handed on again. The defaults suit backends whose
     * outages last seconds to hours.
     */
    repairs: z
      .object({
        retryFirstMs: z.number().int().min(10).max(600_000).default(REPAIR_TIMING_DEFAULTS.retryFirstMs),
        retryMaxMs: z.number().int().min(10).max(3_600_000).default(REPAIR_TIMING_DEFAULTS.retryMaxMs),
        resendAfterMs: z.number().int().min(100).max(3_600_000).default(REPAIR_TIMING_DEFAULTS.resendAfterMs),
      })
      .strict()
      .refine((r) => r.retryFirstMs <= r.retryMaxMs, { message: 'repairs.retryFirstMs must not exceed retryMaxMs' })
      .default(REPAIR_TIMING_DEFAULTS),
    ops: opsSettings.default({ open: false, probeSeconds: 30, flushSeconds: 5, requestLogs: true }),
    webConsole: consoleSettings.default({ enabled: true }),
    encryption: encryptionSettings.optional(),
    /** Bucket event notifications (config/notifications.ts, docs/NOTIFICATIONS.md): destinations, the outbox bound, retries. */
    notifications: notificationSettings.default({ ...NOTIFICATION_DEFAULTS, destinations: {} }),
  })
  .strict();

export interface GatewayConfig extends Omit<z.output<typeof configSchema>, 'policies'> {
  policies: Record<string, StoragePolicy>;
  /** Backend id -> its resolved prices and where they come from; null: unpriced. */
  backendPrices: Record<string, PricedBackend | null>;
}

export type { PricedBackend };

// The inferred backend settings are what backends/createBackend() takes.
const _backendsAccept = (b: BackendSettings): BackendConfig => b;
void _backendsAccept;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Inline objects live in a Durable Object row: keep well under its 2 MB limit. */
const MAX_INLINE = 128 * 1024;

export function parseConfig(input: unknown): GatewayConfig {
  const raw = typeof input === 'string' ? parseJson(input) : input;
  const r = configSchema.safeParse(raw);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new ConfigError(`SHARDGATE_CONFIG is invalid:\n${lines.join('\n')}`);
  }
  const c = r.data;
  const ids = new Set<string>();
  for (const b of c.backends) {
    if (ids.has(b.id)) throw new ConfigError(`SHARDGATE_CONFIG: backend id "${b.id}" is used twice; ids must be unique (they are recorded in manifests)`);
    ids.add(b.id);
    if (b.rebalance && b.state !== 'active')
      throw new ConfigError(
        `SHARDGATE_CONFIG: backend "${b.id}" is ${b.state} and has "rebalance": true; only an active backend can be rebalanced onto (shards move off a ${b.state} one anyway)`,
      );
  }
  // Two entries for one access key id: the gate kept the last one's secret and scope, silently
  // (issue 37); whichever the operator meant, the other was not what it thought.
  const keyIds = c.credentials.map((k) => k.accessKeyId);
  const keyTwice = keyIds.find((id, i) => keyIds.indexOf(id) !== i);
  if (keyTwice !== undefined)
    throw new ConfigError(
      `SHARDGATE_CONFIG: access key id "${keyTwice}" is given twice in "credentials"; each key must appear once, with its one secret and scope`,
    );
  const policies: Record<string, StoragePolicy> = {};
  // New shards go to active backends only (draining and retired ones take none).
  const active = c.backends.filter((b) => b.state === 'active').map((b) => b.id);
  const configured = c.backends.map((b) => b.id);
  for (const [name, p] of Object.entries(c.policies)) policies[name] = resolvePolicy(name, p, active, configured);
  for (const [bucket, name] of Object.entries({ '(defaultPolicy)': c.defaultPolicy, ...c.buckets })) {
    if (!policies[name])
      throw new ConfigError(`SHARDGATE_CONFIG: ${bucket} names policy "${name}", which is not under "policies" (have: ${Object.keys(policies).join(', ')})`);
  }
  for (const [cls, name] of Object.entries(c.storageClasses)) {
    if (!policies[name])
      throw new ConfigError(
        `SHARDGATE_CONFIG: storageClasses.${cls} names policy "${name}", which is not under "policies" (have: ${Object.keys(policies).join(', ')})`,
      );
  }
  const backendPrices = Object.fromEntries(c.backends.map((b) => [b.id, resolvePrices(b)]));
  if (c.encryption) {
    const ids = c.encryption.keys.map((k) => k.id);
    const twice = ids.find((id, i) => ids.indexOf(id) !== i);
    if (twice)
      throw new ConfigError(`SHARDGATE_CONFIG: encryption key id "${twice}" is used twice; ids must be unique (they are recorded with every sealed object)`);
    if (c.encryption.active !== null && !ids.includes(c.encryption.active))
      throw new ConfigError(`SHARDGATE_CONFIG: encryption.active is "${c.encryption.active}", which is not among encryption.keys (have: ${ids.join(', ')})`);
  }
  return { ...c, policies, backendPrices };
}

/** What reading from a bucket's source costs (its `prices`, else its endpoint host's preset); null: unpriced. */
export function sourcePrices(s: Pick<SourceConfig, 'endpoint' | 'prices'>): PricedBackend | null {
  return resolvePrices({ id: `source ${s.endpoint}`, kind: 's3', endpoint: s.endpoint, prices: s.prices } as BackendSettings);
}

/** Backend id -> prices, for the engine's cost-aware reads (UnitStore options); unpriced backends are left out. */
export function priceBook(c: Pick<GatewayConfig, 'backendPrices'>): Map<string, BackendPrices> {
  const book = new Map<string, BackendPrices>();
  for (const [id, p] of Object.entries(c.backendPrices)) {
    if (p) book.set(id, { storagePerGBMonth: p.storagePerGBMonth, egressPerGB: p.egressPerGB, putPer1000: p.putPer1000, getPer1000: p.getPer1000 });
  }
  return book;
}

function resolvePrices(b: BackendSettings): PricedBackend | null {
  const declared = b.prices;
  if (declared === 'none') return null;
  if (typeof declared === 'string') return { ...presetPrices(declared), source: `preset ${declared}` };
  const fallback: PresetName | null = defaultPreset(b);
  if (!declared)
    return fallback ? { ...presetPrices(fallback), source: `preset ${fallback} (default for ${b.kind === 'r2' ? 'kind r2' : 'its endpoint'})` } : null;
  // Figures override the named preset, else the backend's default one (`{"egressPerGB": 0}` on a
  // B2 endpoint: B2's prices with free egress).
  const { preset, ...figures } = declared;
  const basis = preset ?? fallback;
  const fields = ['storagePerGBMonth', 'egressPerGB', 'putPer1000', 'getPer1000'] as const;
  const missing = fields.filter((f) => figures[f] === undefined && !basis);
  if (missing.length) {
    throw new ConfigError(
      `SHARDGATE_CONFIG: backend "${b.id}" prices: give ${missing.join(', ')}, or a "preset" to take them from (${PRESET_NAMES.join(', ')})`,
    );
  }
  const base = basis ? presetPrices(basis) : undefined;
  const out = Object.fromEntries(fields.map((f) => [f, figures[f] ?? base![f]])) as unknown as BackendPrices;
  return { ...out, source: basis ? `preset ${basis} with overrides` : 'config' };
}

/** What the engine needs of the config. */
export function engineSettings(c: GatewayConfig): EngineSettings {
  return {
    policies: c.policies,
    defaultPolicy: c.defaultPolicy,
    buckets: c.buckets,
    storageClasses: c.storageClasses,
    maxObjectSize: c.maxObjectSize,
    maxPartSize: c.s3.maxPartSize,
    writeReservationSeconds: c.writeReservationSeconds,
    // One key and no anonymous access: one tenant, whom a share would only slow down.
    codingBudget: { ...c.codingBudget, tenantShare: c.credentials.length + (c.allowAnonymous ? 1 : 0) > 1 ? c.codingBudget.tenantShare : 1 },
  };
}

/** What the S3 front door needs of the config. */
export function s3Settings(
  c: Pick<GatewayConfig, 'region' | 'baseDomains' | 'maxObjectSize' | 's3'> & Partial<Pick<GatewayConfig, 'credentials'>>,
): S3Settings {
  const otherAccounts = (c.credentials ?? []).some((k) => k.account !== undefined && k.account !== DEFAULT_ACCOUNT);
  const accounts = [...new Set([DEFAULT_ACCOUNT, ...(c.credentials ?? []).map((k) => k.account ?? DEFAULT_ACCOUNT)])];
  return { region: c.region, baseDomains: c.baseDomains, maxObjectSize: c.maxObjectSize, ...c.s3, otherAccounts, accounts };
}

function resolvePolicy(name: string, p: z.output<typeof policy>, activeIds: string[], configuredIds: string[]): StoragePolicy {
  const where = `SHARDGATE_CONFIG: policy "${name}"`;
  // A pool: its own backends, each configured, once.
  const unknown = (p.backends ?? []).find((id) => !configuredIds.includes(id));
  if (unknown !== undefined) throw new ConfigError(`${where}: backends names "${unknown}", which is not under "backends" (have: ${configuredIds.join(', ')})`);
  const twice = (p.backends ?? []).find((id, i, all) => all.indexOf(id) !== i);
  if (twice !== undefined) throw new ConfigError(`${where}: backends names "${twice}" twice`);
  const inPool = (id: string) => !p.backends || p.backends.includes(id);
  const backendCount = activeIds.filter(inPool).length;
  const configured = configuredIds.filter(inPool).length;
  let k: number, m: number, codec: StoragePolicy['codec'];
  if (p.codec === 'replicate') {
    const n = p.replicas ?? 3;
    [k, m, codec] = [1, n - 1, 'replica'];
  } else {
    if (p.k === undefined || p.m === undefined) throw new ConfigError(`${where}: set k and m (for example "k": 4, "m": 2)`);
    [k, m, codec] = [p.k, p.m, 'rs-cauchy-gf8'];
  }
  if (k + m > 256) throw new ConfigError(`${where}: k + m must be at most 256`);
  if (k + m > backendCount) {
    const others = configured - backendCount;
    throw new ConfigError(
      `${where}: needs ${k + m} backends (one per shard), only ${backendCount} ${others ? `are active (${others} draining or retired take no new shards)` : 'configured'}${p.backends ? ' in its pool ("backends")' : ''}`,
    );
  }
  const quorum = p.writeQuorum ?? (codec === 'replica' ? Math.floor((k + m) / 2) + 1 : Math.min(k + m, k + 1));
  if (quorum < k || quorum > k + m) throw new ConfigError(`${where}: writeQuorum ${quorum} must be between k=${k} and k+m=${k + m}`);
  if (p.small.mode === 'inline' && p.small.threshold > MAX_INLINE)
    throw new ConfigError(`${where}: small.threshold over ${MAX_INLINE} bytes cannot be inline; use mode "replicate"`);
  if (p.blockSize % 16 !== 0) throw new ConfigError(`${where}: blockSize must be a multiple of 16`);
  return {
    name,
    codec,
    k,
    m,
    writeQuorum: quorum,
    blockSize: p.blockSize,
    small: p.small,
    encrypt: p.encrypt,
    ...(p.backends ? { backends: p.backends } : {}),
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ConfigError(`SHARDGATE_CONFIG is not valid JSON: ${(e as Error).message}`);
  }
}
