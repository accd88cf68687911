/**
 * Streaming decoder of `Content-Encoding: aws-chunked` bodies, verifying as it goes.
 *
 * Spec: S3 "Signature Calculations for the Authorization Header: Transferring Payload in
 * Multiple Chunks" (sigv4-streaming.html) and "... including trailing headers"
 * (sigv4-streaming-trailers.html). Framing:
 *
 *   <hex size>[;chunk-signature=<sig>]\r\n <size bytes>\r\n   ... repeated, then
 *   0[;chunk-signature=<sig>]\r\n
 *   [<name>:<value>\r\n ...] [x-amz-trailer-signature:<sig>\r\n]   (trailer modes)
 *   \r\n
 *
 * What it checks: framing; every chunk signature, chained from the seed signature (signed
 * modes); the trailer signature (signed-trailer mode); that trailers are the declared ones; the
 * checksum (from the trailer or a header, unless the caller verifies it) over the decoded bytes;
 * the decoded length against
 * x-amz-decoded-content-length; that nothing but line ends follows the final empty line.
 * Errors are S3Errors thrown from the stream: the consumer sees the body fail, so it stores
 * nothing. A bad chunk signature fails the stream as soon as that chunk ends.
 *
 * Memory is bounded whatever the body size: data passes through as views of the input (one
 * copy only when several small pieces of one input chunk are joined); lines are capped.
 * Tolerated: bare '\n' line ends, a space after ':' in trailers (JS SDK and botocore send
 * none), one blank line before the trailers, up to 4 stray CR/LF bytes after the final line
 * (AWS's own unsigned-trailer example ends `...==\n\r\n\r\n`), unknown chunk extensions.
 * Chunk sizes are whatever the client chose (64 KiB, 1 MiB, ...): nothing assumes a size, and the
 * 8 KiB minimum AWS applies to signed chunks is not enforced.
 */

import { createHash, type Hash } from 'node:crypto';
import { S3Error } from '../model/errors.ts';
import { isHex, timingSafeEqual } from '../model/bytes.ts';
import { assertChecksumValue, checksumAlgorithmOf } from '../model/checksums.ts';
import { finishChecksum, type ChecksumCheck } from './checksum.ts';
import { EMPTY_SHA256, canonicalTrailer, chunkStringToSign, sha256Hex, signature, trailerStringToSign } from './sigv4.ts';

/** What signed modes need to verify chunk and trailer signatures. */
export interface ChunkSigning {
  key: CryptoKey;
  /** Request date-time, ISO 8601 basic (x-amz-date). */
  datetime: string;
  scope: string;
  /** The request's own signature, which the first chunk signature chains from. */
  seedSignature: string;
}

export interface AwsChunkedOptions {
  /** x-amz-decoded-content-length: the decoded body must have exactly this many bytes. */
  decodedContentLength: number | null;
  /** Given for STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]; absent for STREAMING-UNSIGNED-PAYLOAD-TRAILER. */
  signing?: ChunkSigning | null;
  /** True for the -TRAILER modes: a trailer section follows the last chunk (signed if `signing`). */
  trailer: boolean;
  /** Trailing header names declared in x-amz-trailer, lower-case. Only these may appear. */
  trailerNames: readonly string[];
  /**
   * The declared checksum: verified over the decoded bytes when it has a hasher; its value comes
   * from the trailer when `expectedBase64` is null (and is then format-checked, hasher or not).
   */
  checksum?: ChecksumCheck | null;
}

const CR = 0x0d;
const LF = 0x0a;
const MAX_LINE = 4096;
const MAX_TRAILERS = 16;
const MAX_STRAY_LINE_ENDS = 4;

type State = 'size' | 'data' | 'data-end' | 'trailer' | 'end';

function malformed(detail: string): S3Error {
  return new S3Error('InvalidRequest', `Malformed aws-chunked body: ${detail}.`);
}

function truncated(): S3Error {
  return new S3Error('IncompleteBody', 'The request body terminated unexpectedly');
}

export class AwsChunkedDecoder {
  private state: State = 'size';
  private line = '';
  private sawCR = false;
  private chunkRemaining = 0;
  private chunkSignature: string | null = null;
  private chunkHash: Hash | null = null;
  private previousSignature: string;
  private decoded = 0;
  private readonly trailerLines: Array<[string, string]> = [];
  private trailerSignature: string | null = null;
  private skippedBlankBeforeTrailer = false;
  private strayLineEnds = 0;
  private failure: unknown = null;

  constructor(private readonly opts: AwsChunkedOptions) {
    this.previousSignature = opts.signing?.seedSignature ?? '';
  }

  /** Bytes of payload decoded so far. */
  get decodedLength(): number {
    return this.decoded;
  }

  /** The trailing headers received (signature line excluded), once the body has ended. */
  get trailers(): ReadonlyArray<readonly [string, string]> {
    return this.trailerLines;
  }

  /**
   * Feeds encoded bytes; returns the decoded bytes they held, as views of `piece` (no copy:
   * valid as long as `piece` is). Throws S3Error.
   */
  async push(piece: Uint8Array): Promise<Uint8Array[]> {
    if (this.failure) throw this.failure;
    try {
      return await this.consume(piece);
    } catch (err) {
      this.fail(err);
      throw err;
    }
  }

  /** Declares the end of the encoded body; throws S3Error if it ended early or fails a check. */
  async finish(): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.state !== 'end') {
      // `0\r\n\r\n` then nothing: the body ended cleanly but without its declared trailer.
      const trailerMissing = this.state === 'trailer' && this.skippedBlankBeforeTrailer && this.line === '';
      this.fail(trailerMissing ? new S3Error('MalformedTrailerError') : truncated());
      throw this.failure;
    }
    const check = this.opts.checksum;
    check?.settle?.(check.expectedBase64);
  }

  private fail(err: unknown): void {
    this.failure = err;
    this.opts.checksum?.settle?.(null);
  }

  private async consume(piece: Uint8Array): Promise<Uint8Array[]> {
    const out: Uint8Array[] = [];
    let i = 0;
    while (i < piece.length) {
      switch (this.state) {
        case 'size':
        case 'trailer': {
          const nl = piece.indexOf(LF, i);
          const end = nl < 0 ? piece.length : nl;
          this.appendLine(piece, i, end);
          if (nl < 0) return out;
          i = nl + 1;
          const text = this.line.endsWith('\r') ? this.line.slice(0, -1) : this.line;
          this.line = '';
          if (this.state === 'size') await this.onSizeLine(text);
          else await this.onTrailerLine(text);
          break;
        }
        case 'data': {
          const n = Math.min(this.chunkRemaining, piece.length - i);
          const data = piece.subarray(i, i + n);
          this.chunkHash?.update(data);
          this.opts.checksum?.hasher?.update(data);
          out.push(data);
          this.chunkRemaining -= n;
          i += n;
          if (this.chunkRemaining === 0) {
            this.state = 'data-end';
            this.sawCR = false;
          }
          break;
        }
        case 'data-end': {
          const b = piece[i++];
          if (b === CR && !this.sawCR) {
            this.sawCR = true;
          } else if (b === LF) {
            if (this.chunkHash) await this.verifyChunk(this.chunkHash.digest('hex'));
            this.state = 'size';
          } else {
            throw malformed('chunk data is not followed by CRLF');
          }
          break;
        }
        case 'end': {
          const b = piece[i++];
          if ((b !== CR && b !== LF) || ++this.strayLineEnds > MAX_STRAY_LINE_ENDS) {
            throw malformed('data after the final chunk');
          }
          break;
        }
      }
    }
    return out;
  }

  private appendLine(piece: Uint8Array, start: number, end: number): void {
    if (this.line.length + (end - start) > MAX_LINE) throw malformed('line too long');
    for (let k = start; k < end; k++) this.line += String.fromCharCode(piece[k]);
  }

  /** `<hex>[;ext=value...]`: starts a chunk, or (size 0) ends the data. */
  private async onSizeLine(text: string): Promise<void> {
    // Strict on purpose (no stray whitespace): every client writes exactly this form.
    const [hex, ...extensions] = text.split(';');
    if (!/^[0-9a-fA-F]{1,12}$/.test(hex)) throw malformed(`bad chunk size "${hex.slice(0, 32)}"`);
    const size = parseInt(hex, 16);
    this.chunkSignature = null;
    for (const ext of extensions) {
      const eq = ext.indexOf('=');
      if (eq < 0) throw malformed('bad chunk extension');
      if (ext.slice(0, eq) === 'chunk-signature') this.chunkSignature = ext.slice(eq + 1);
    }
    if (this.opts.signing && (this.chunkSignature === null || !isHex(this.chunkSignature, 64))) {
      throw new S3Error('SignatureDoesNotMatch', 'A chunk of a signed aws-chunked body has no valid chunk-signature.');
    }
    const declared = this.opts.decodedContentLength;
    if (size > 0) {
      if (declared !== null && this.decoded + size > declared) {
        throw new S3Error('InvalidRequest', 'The aws-chunked body is longer than x-amz-decoded-content-length.');
      }
      this.decoded += size;
      this.chunkRemaining = size;
      this.chunkHash = this.opts.signing ? createHash('sha256') : null;
      this.state = 'data';
      return;
    }
    // The last chunk: it is signed too (over empty data), then the trailer section follows.
    await this.verifyChunk(EMPTY_SHA256);
    if (declared !== null && this.decoded !== declared) throw truncated();
    this.state = 'trailer';
  }

  private async verifyChunk(chunkSha256: string): Promise<void> {
    const signing = this.opts.signing;
    if (!signing) return;
    const toSign = chunkStringToSign(signing.datetime, signing.scope, this.previousSignature, chunkSha256);
    const expected = await signature(signing.key, toSign);
    if (!timingSafeEqual(expected, this.chunkSignature!.toLowerCase())) {
      throw new S3Error('SignatureDoesNotMatch', 'The chunk signature of an aws-chunked body does not match.');
    }
    this.previousSignature = expected;
  }

  /** One line of the trailer section; the empty line ends it and runs the final checks. */
  private async onTrailerLine(text: string): Promise<void> {
    if (text === '') {
      const expectsTrailer = this.opts.trailer && (this.opts.trailerNames.length > 0 || !!this.opts.signing);
      if (expectsTrailer && this.trailerLines.length === 0 && this.trailerSignature === null && !this.skippedBlankBeforeTrailer) {
        this.skippedBlankBeforeTrailer = true;
        return;
      }
      await this.endOfTrailer();
      this.state = 'end';
      return;
    }
    const colon = text.indexOf(':');
    if (!this.opts.trailer || colon <= 0 || this.trailerLines.length >= MAX_TRAILERS) {
      throw new S3Error('MalformedTrailerError');
    }
    // `name:value`; one space (or tab) around the value is tolerated, nothing else.
    const name = text.slice(0, colon).toLowerCase();
    const value = text.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
    if (name === 'x-amz-trailer-signature') {
      this.trailerSignature = value;
      return;
    }
    if (!this.opts.trailerNames.includes(name) || this.trailerLines.some(([n]) => n === name)) {
      throw new S3Error('MalformedTrailerError', undefined, { TrailerHeader: name });
    }
    this.trailerLines.push([name, value]);
  }

  private async endOfTrailer(): Promise<void> {
    const signing = this.opts.signing;
    if (this.opts.trailer && signing) {
      const sig = this.trailerSignature;
      if (sig === null || !isHex(sig, 64)) {
        throw new S3Error('SignatureDoesNotMatch', 'The trailer of a signed aws-chunked body has no valid x-amz-trailer-signature.');
      }
      const trailerHash = await sha256Hex(canonicalTrailer(this.trailerLines));
      const toSign = trailerStringToSign(signing.datetime, signing.scope, this.previousSignature, trailerHash);
      if (!timingSafeEqual(await signature(signing.key, toSign), sig.toLowerCase())) {
        throw new S3Error('SignatureDoesNotMatch', 'The trailer signature of an aws-chunked body does not match.');
      }
    }
    for (const name of this.opts.trailerNames) {
      if (!this.trailerLines.some(([n]) => n === name)) {
        throw new S3Error('MalformedTrailerError', undefined, { TrailerHeader: name });
      }
    }
    const check = this.opts.checksum;
    if (check) {
      if (check.expectedBase64 === null) {
        const line = this.trailerLines.find(([n]) => checksumAlgorithmOf(n) === check.algorithm);
        if (!line) throw new S3Error('MalformedTrailerError');
        assertChecksumValue(check.algorithm, line[1], 'trailer');
        check.expectedBase64 = line[1];
      }
      finishChecksum(check);
    }
  }
}
