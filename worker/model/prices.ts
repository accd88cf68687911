/**
 * BackendPrices: what one backend charges, in US dollars, as the operator's config declares it
 * (worker/config/config.ts resolves presets and overrides; worker/config/price-list.ts holds the dated
 * defaults). The engine uses egress and GET-class prices to choose which shards a read fetches
 * (engine/read-cost.ts); upkeep/cost.ts turns counted traffic and stored bytes into money.
 * One GB here is 2^30 bytes, as AWS bills; providers that bill 10^9-byte GB are about 7% off,
 * which is below the precision of any price list.
 * Known gaps: no tiers (volume discounts), no free allowances, no minimum storage durations.
 */

export interface BackendPrices {
  /** Storing one GB for a month. */
  storagePerGBMonth: number;
  /** One GB read out of the backend by the gateway (egress, or retrieval for cold classes). */
  egressPerGB: number;
  /** 1000 PUT-class requests (S3 PUT/COPY/POST/LIST, R2 Class A). */
  putPer1000: number;
  /** 1000 GET-class requests (S3 GET/HEAD, R2 Class B). */
  getPer1000: number;
}

export const BYTES_PER_GB = 1024 ** 3;

/** Backend id -> its prices; a backend absent from the map is unpriced. */
export type PriceBook = ReadonlyMap<string, BackendPrices>;

/** Prices with where they came from: "preset aws-s3-standard", "preset cloudflare-r2 (default for kind r2)", "config". */
export interface PricedBackend extends BackendPrices {
  source: string;
}
