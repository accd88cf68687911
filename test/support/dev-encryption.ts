/** The `encryption` of the local default config (wrangler.toml): the published development key, so suites run sealed as `npm start` does. */
import { DEV_KEY_VALUE } from '../../worker/config/key-ring.ts';

export const TEST_ENCRYPTION = { keys: [{ id: 'dev', value: DEV_KEY_VALUE }], active: 'dev' };
