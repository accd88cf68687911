/**
 * Where an SSE-C key may travel (issue 37): the review found customer keys accepted over plain
 * HTTP and in presigned URLs' query strings, which the access log records (its Request-URI field)
 * as do proxies and browser histories. Refused before the gate reads anything, so nothing is
 * stored, logged or answered with the key in hand:
 * - a customer key (`x-amz-server-side-encryption-customer-key`, and the copy source's) in the
 *   query string: 400 InvalidArgument. A presigned SSE-C request signs the key's header instead
 *   (its value then travels in the request's headers, as AWS requires);
 * - a customer key over plain HTTP: 400 InvalidRequest, AWS's answer ("must be made over a secure
 *   connection"), except a loopback request (local development: `npm start`, tests). A browser
 *   form's key field likewise (s3/post-object.ts, told `secureTransport`).
 */
import { isLoopbackRequest } from '../config/deployment.ts';
import { S3Error } from '../model/errors.ts';
import type { RequestView } from '../model/request.ts';

const CUSTOMER_KEY = /^x-amz-(copy-source-)?server-side-encryption-customer-key$/i;

/** Over TLS, or a request made on this machine. */
export function secureTransport(request: Request): boolean {
  return new URL(request.url).protocol !== 'http:' || isLoopbackRequest(request);
}

export function refuseExposedCustomerKey(request: Request, view: RequestView): void {
  for (const name of view.query.keys()) {
    if (CUSTOMER_KEY.test(name))
      throw new S3Error(
        'InvalidArgument',
        'A customer-provided encryption key (SSE-C) may not be sent in the query string, where logs record it; send it in the x-amz-server-side-encryption-customer-key header.',
        { ArgumentName: name },
      );
  }
  const inHeaders = [...request.headers.keys()].some((name) => CUSTOMER_KEY.test(name));
  if (inHeaders && !secureTransport(request)) {
    throw new S3Error('InvalidRequest', 'Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection.');
  }
}
