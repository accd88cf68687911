/**
 * verifyRequest as the app calls it, for the gate's own tests: the request view (model/request.ts)
 * built from the request, the raw URL it was sent with and the virtual-hosted base domains.
 */
import { verifyRequest, type VerifiedRequest, type VerifyOptions } from '../../../worker/auth/verify.ts';
import { requestView } from '../../../worker/model/request.ts';

export interface VerifyAtOptions extends VerifyOptions {
  /** The request target as sent (`/path?query`, or an absolute URL). */
  rawUrl: string;
  baseDomains?: string[];
}

export async function verifyAt(request: Request, opts: VerifyAtOptions): Promise<VerifiedRequest> {
  return verifyRequest(request, requestView(request, opts.baseDomains ?? [], opts.rawUrl), opts);
}
