/** The auth gate re-chunks request bodies with the same helper the backends use. */
export { largePieces } from '../../backends/streams.ts';
