/**
 * The conformance suite as one function: every case group, run once per SDK checksum mode
 * (defaults: CRC32 checksums and aws-chunked stream bodies; WHEN_REQUIRED: plain bodies) against
 * a worker started by the calling test file, with the gate that file chose.
 */
import { afterAll, beforeAll, describe } from 'vitest';
import { s3Client, startTestWorker, type Gate, type TestWorker } from './harness.ts';
import { bucketCases } from './conformance/buckets.case.ts';
import type { ChecksumMode, SuiteContext } from './conformance/context.ts';
import { integrityCases } from './conformance/integrity.case.ts';
import { listingCases } from './conformance/listing.case.ts';
import { multipartCases } from './conformance/multipart.case.ts';
import { objectCases, streamCases } from './conformance/objects.case.ts';
import { badDigestCases } from './conformance/bad-digest.case.ts';
import { bucketConfigCases } from './conformance/bucket-config.case.ts';
import { listingEdgeCases } from './conformance/listing-edges.case.ts';
import { multipartRetryCases } from './conformance/multipart-retry.case.ts';
import { partReadCases } from './conformance/part-reads.case.ts';
import { configReadCases } from './conformance/config-reads.case.ts';
import { taggingCases } from './conformance/tagging.case.ts';
import { objectAttributeCases } from './conformance/object-attributes.case.ts';
import { versioningCases } from './conformance/versioning.case.ts';

const MODES: [ChecksumMode, object][] = [
  ['defaults', {}],
  ['when-required', { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' }],
];

export function conformanceSuite(gate: Gate): { worker: () => TestWorker } {
  let worker: TestWorker;
  beforeAll(async () => {
    worker = await startTestWorker(gate);
  });
  afterAll(async () => {
    await worker?.dispose();
  });

  for (const [mode, clientConfig] of MODES) {
    describe(`SDK checksum mode: ${mode}`, () => {
      let ctx: SuiteContext;
      beforeAll(() => {
        ctx = { mode, url: worker.url, client: s3Client(worker.url, clientConfig) };
      });
      const suite = () => ctx;
      bucketCases(suite);
      objectCases(suite, mode);
      streamCases(suite, mode);
      integrityCases(suite, mode);
      listingCases(suite, mode);
      multipartCases(suite, mode);
      bucketConfigCases(suite, mode);
      badDigestCases(suite, mode);
      listingEdgeCases(suite, mode);
      multipartRetryCases(suite, mode);
      partReadCases(suite, mode);
      configReadCases(suite, mode);
      taggingCases(suite, mode);
      objectAttributeCases(suite, mode);
      versioningCases(suite, mode);
    });
  }
  return { worker: () => worker };
}
