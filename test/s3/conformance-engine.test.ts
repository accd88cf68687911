/**
 * The conformance suite against the product: the real gateway (SigV4 gate, erasure-coded store
 * over six local R2 buckets, catalog Durable Object), in both SDK checksum modes.
 */
import { conformanceSuite } from './conformance.case.ts';

conformanceSuite('engine');
