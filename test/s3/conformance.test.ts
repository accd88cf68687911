/**
 * S3 conformance through the real @aws-sdk/client-s3 against the gateway in workerd, with the
 * development pass-through gate (fixtures/worker.ts: MemoryStore, no signature checks). Cases
 * that need aws-chunked decoding are skipped here and run in conformance-sigv4.test.ts.
 */
import { conformanceSuite } from './conformance.case.ts';

conformanceSuite('pass-through');
