/**
 * Backend prices in the config (worker/config/config.ts over worker/config/price-list.ts): presets by name,
 * figures overriding a preset, the default preset of a kind or endpoint host, unpriced backends,
 * and errors that say what to write.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig, priceBook } from '../worker/config/config.ts';
import { PRICE_PRESETS, PRICES_AS_OF, defaultPreset } from '../worker/config/price-list.ts';

const s3 = (id: string, endpoint: string, extra: object = {}) => ({ id, kind: 's3', domain: id, endpoint, bucket: 'b', ...extra });
const config = (backends: object[]) => parseConfig({ backends, policies: { p: { k: 1, m: 0 } }, defaultPolicy: 'p' });

describe('backend prices', () => {
  it('defaults: R2 bindings are R2, S3 endpoints by host, anything else unpriced', () => {
    const c = config([
      { id: 'r2', kind: 'r2', domain: 'cf', binding: 'X' },
      s3('aws', 'https://s3.eu-central-1.amazonaws.com'),
      s3('b2', 'https://s3.eu-central-003.backblazeb2.com'),
      s3('wasabi', 'https://s3.eu-central-1.wasabisys.com'),
      s3('gcs', 'https://storage.googleapis.com'),
      s3('r2api', 'https://0123abcd.eu.r2.cloudflarestorage.com'),
      s3('minio', 'http://10.0.0.5:9000'),
      s3('lookalike', 'https://amazonaws.com.example.net'),
      { id: 'mem', kind: 'memory', domain: 'm' },
    ]);
    const source = (id: string) => c.backendPrices[id]?.source ?? null;
    expect(source('r2')).toBe('preset cloudflare-r2 (default for kind r2)');
    expect(source('aws')).toBe('preset aws-s3-standard (default for its endpoint)');
    expect(source('b2')).toMatch(/^preset backblaze-b2 /);
    expect(source('wasabi')).toMatch(/^preset wasabi /);
    expect(source('gcs')).toMatch(/^preset gcs-standard /);
    expect(source('r2api')).toMatch(/^preset cloudflare-r2 /);
    expect(source('minio')).toBeNull();
    expect(source('lookalike')).toBeNull();
    expect(source('mem')).toBeNull();
    expect(c.backendPrices.aws).toMatchObject({ storagePerGBMonth: 0.023, egressPerGB: 0.09, putPer1000: 0.005, getPer1000: 0.0004 });
    expect([...priceBook(c).keys()]).toEqual(['r2', 'aws', 'b2', 'wasabi', 'gcs', 'r2api']);
  });

  it('a preset by name, figures over a preset or over the default, "none", and full figures', () => {
    const c = config([
      s3('named', 'http://minio:9000', { prices: 'wasabi' }),
      s3('over', 'http://minio:9000', { prices: { preset: 'aws-s3-standard', egressPerGB: 0.05 } }),
      s3('b2free', 'https://s3.us-west-004.backblazeb2.com', { prices: { egressPerGB: 0 } }),
      s3('off', 'https://s3.amazonaws.com', { prices: 'none' }),
      { id: 'own', kind: 'memory', domain: 'm', prices: { storagePerGBMonth: 0.002, egressPerGB: 0, putPer1000: 0, getPer1000: 0 } },
    ]);
    expect(c.backendPrices.named).toMatchObject({ storagePerGBMonth: 0.0068, egressPerGB: 0, source: 'preset wasabi' });
    expect(c.backendPrices.over).toMatchObject({ storagePerGBMonth: 0.023, egressPerGB: 0.05, source: 'preset aws-s3-standard with overrides' });
    expect(c.backendPrices.b2free).toMatchObject({
      storagePerGBMonth: 0.006,
      egressPerGB: 0,
      getPer1000: 0.0004,
      source: 'preset backblaze-b2 with overrides',
    });
    expect(c.backendPrices.off).toBeNull();
    expect(c.backendPrices.own).toMatchObject({ storagePerGBMonth: 0.002, source: 'config' });
  });

  it('errors name the backend and what to write', () => {
    expect(() => config([s3('minio', 'http://minio:9000', { prices: { egressPerGB: 0 } })])).toThrow(
      'backend "minio" prices: give storagePerGBMonth, putPer1000, getPer1000, or a "preset"',
    );
    expect(() => config([s3('x', 'http://minio:9000', { prices: 'aws' })])).toThrow(/backends\.0\.prices/);
    expect(() => config([s3('x', 'http://minio:9000', { prices: { preset: 'wasabi', egressPerGB: -1 } })])).toThrow(/backends\.0\.prices/);
    expect(() => config([s3('x', 'http://minio:9000', { prices: { preset: 'wasabi', egress: 0 } })])).toThrow(/backends\.0\.prices/);
  });

  it('every preset is dated, sourced, and explains what it leaves out', () => {
    expect(PRICES_AS_OF).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    for (const [name, p] of Object.entries(PRICE_PRESETS)) {
      expect(p.source, name).toMatch(/^https:\/\/|^none: /);
      expect(p.note.length, name).toBeGreaterThan(10);
      for (const f of ['storagePerGBMonth', 'egressPerGB', 'putPer1000', 'getPer1000'] as const) expect(p[f], `${name}.${f}`).toBeGreaterThanOrEqual(0);
    }
    expect(defaultPreset({ kind: 's3', endpoint: 'not a url' })).toBeNull();
  });
});
