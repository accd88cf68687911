/**
 * Default prices of common blob stores: the presets a backend's `prices` may name in the config
 * (worker/config/config.ts), and what `shardgate cost` compares. Prices are facts that change: every
 * entry says where it comes from, and PRICES_AS_OF when it was compiled. A backend overrides any
 * field in its config; these are list prices for the region named in `region`.
 * Sources: each provider's public pricing page (`source`). Compiled 2026-12-01 from the pages as
 * last published to the author, without a live check on that day (this machine has no web
 * access): verify against `source` before relying on a figure.
 * Known gaps: no volume tiers, free allowances, minimum durations or minimum charges (the notes
 * say where they matter); one region per provider.
 */
import type { BackendPrices } from '../engine/index.ts';

export const PRICES_AS_OF = '2026-12-01';

export interface PricePreset extends BackendPrices {
  /** Who sells it, and which product/class. */
  label: string;
  region: string;
  source: string;
  /** What the four figures leave out. */
  note: string;
}

export const PRICE_PRESETS = {
  'cloudflare-r2': {
    label: 'Cloudflare R2, Standard',
    region: 'any (R2 has one price)',
    storagePerGBMonth: 0.015,
    egressPerGB: 0,
    putPer1000: 0.0045,
    getPer1000: 0.00036,
    source: 'https://developers.cloudflare.com/r2/pricing/',
    note: 'Class A $4.50/million, Class B $0.36/million, no egress fee; free tier (10 GB-month, 1M Class A, 10M Class B per month) not counted',
  },
  'cloudflare-r2-ia': {
    label: 'Cloudflare R2, Infrequent Access',
    region: 'any',
    storagePerGBMonth: 0.01,
    egressPerGB: 0.01,
    putPer1000: 0.009,
    getPer1000: 0.0009,
    source: 'https://developers.cloudflare.com/r2/pricing/',
    note: 'egressPerGB is the $0.01/GB data retrieval fee (no egress fee); 30-day minimum storage duration',
  },
  'aws-s3-standard': {
    label: 'AWS S3 Standard',
    region: 'us-east-1',
    storagePerGBMonth: 0.023,
    egressPerGB: 0.09,
    putPer1000: 0.005,
    getPer1000: 0.0004,
    source: 'https://aws.amazon.com/s3/pricing/',
    note: 'first 50 TB-month; internet egress first 10 TB/month (the first 100 GB/month across AWS are free); other regions cost more',
  },
  'backblaze-b2': {
    label: 'Backblaze B2',
    region: 'any',
    storagePerGBMonth: 0.006,
    egressPerGB: 0.01,
    putPer1000: 0,
    getPer1000: 0.0004,
    source: 'https://www.backblaze.com/cloud-storage/pricing',
    note: '$6/TB-month; Class A free, Class B $0.004 per 10,000; egress free up to 3x the average stored per month, and free to Cloudflare under the Bandwidth Alliance: set egressPerGB to 0 when yours qualifies',
  },
  wasabi: {
    label: 'Wasabi, pay as you go',
    region: 'us-east-1',
    storagePerGBMonth: 0.0068,
    egressPerGB: 0,
    putPer1000: 0,
    getPer1000: 0,
    source: 'https://wasabi.com/pricing',
    note: '$6.99/TB-month; no egress or request fees while monthly egress stays under the stored volume; 90-day minimum storage duration and a 1 TB minimum charge',
  },
  'gcs-standard': {
    label: 'Google Cloud Storage, Standard (XML API)',
    region: 'us-east1',
    storagePerGBMonth: 0.02,
    egressPerGB: 0.12,
    putPer1000: 0.005,
    getPer1000: 0.0004,
    source: 'https://cloud.google.com/storage/pricing',
    note: 'regional bucket; Class A $0.005, Class B $0.0004 per 1000; premium-tier internet egress, first TB/month',
  },
  'self-hosted': {
    label: 'Your own server (MinIO or similar)',
    region: 'yours',
    storagePerGBMonth: 0,
    egressPerGB: 0,
    putPer1000: 0,
    getPer1000: 0,
    source: 'none: set storagePerGBMonth (and egressPerGB if your uplink is metered) to what it costs you',
    note: 'zero until you say otherwise',
  },
} satisfies Record<string, PricePreset>;

export type PresetName = keyof typeof PRICE_PRESETS;
export const PRESET_NAMES = Object.keys(PRICE_PRESETS) as [PresetName, ...PresetName[]];

/**
 * The preset a backend gets when its config declares no prices: R2 bindings are R2; an S3
 * endpoint is recognised by its host name; anything else (MinIO, s3rver, a memory backend) is
 * unpriced, which keeps reads exactly as without prices.
 */
export function defaultPreset(backend: { kind: string; endpoint?: string }): PresetName | null {
  if (backend.kind === 'r2') return 'cloudflare-r2';
  if (backend.kind !== 's3' || !backend.endpoint) return null;
  let host: string;
  try {
    host = new URL(backend.endpoint).hostname.toLowerCase();
  } catch {
    return null;
  }
  const is = (suffix: string) => host === suffix || host.endsWith(`.${suffix}`);
  if (is('r2.cloudflarestorage.com')) return 'cloudflare-r2';
  if (is('amazonaws.com')) return 'aws-s3-standard';
  if (is('backblazeb2.com')) return 'backblaze-b2';
  if (is('wasabisys.com')) return 'wasabi';
  if (is('storage.googleapis.com')) return 'gcs-standard';
  return null;
}

export function presetPrices(name: PresetName): BackendPrices {
  const p = PRICE_PRESETS[name];
  return { storagePerGBMonth: p.storagePerGBMonth, egressPerGB: p.egressPerGB, putPer1000: p.putPer1000, getPer1000: p.getPer1000 };
}
