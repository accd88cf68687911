/** The `encryption` of the local default config (wrangler.toml): the published development key, so suites run sealed as `npm start` does. */
import { DEV_KEY_VALUE } from '../../worker/config/key-ring.ts';
import { KeyRing } from '../../worker/format/seal.ts';
import { bucketPrefix, bucketShardPrefixes } from '../../worker/format/shard-key.ts';

export const TEST_ENCRYPTION = { keys: [{ id: 'dev', value: DEV_KEY_VALUE }], active: 'dev' };

/** The development key ring (TEST_ENCRYPTION's key). */
export const DEV_KEY_RING = KeyRing.fromBase64({ dev: DEV_KEY_VALUE }, 'dev');

/** Every prefix the shards of `bucket` may be under with the development key (its name, its shelf); all of `sg1/` without a bucket. */
export async function devShardPrefixes(bucket?: string): Promise<string[]> {
  return bucket ? bucketShardPrefixes(bucket, DEV_KEY_RING) : [bucketPrefix()];
}
