/**
 * Poison mode for every test file (worker/model/lent-chunks.ts): a chunk kept past its loan, or
 * a pooled buffer read after it was given back, fails the test that does it. Gateways the tests
 * start get it through SHARDGATE_POISON_BUFFERS (test/support/worker.ts, dev/local-gateway.ts);
 * SHARDGATE_POISON_BUFFERS=0 npm test runs without it.
 */
import { setPoisonMode } from '../../worker/model/lent-chunks.ts';

setPoisonMode(process.env.SHARDGATE_POISON_BUFFERS !== '0');
